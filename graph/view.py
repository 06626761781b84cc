"""An agent's entity graph as a networkx MultiDiGraph, and the views `reverie graph` prints.

Nodes are entity ids (attributes name, type); edges are relations (subject -> object, key = verb,
attributes holds, weight, last_said, since). `dependents(G, x)` answers "what depends on X,
transitively" over holding edges of dependency verbs ("H hosts S" counts as S depending on H).

`entity_report` is the JSON of `reverie graph --json`; `to_dot` a Graphviz digraph; `to_html` one
self-contained page (inline SVG and script, no network) that draws the neighbourhood.

Invariants: read-only; networkx is imported here only (never on the hook path).
"""

from __future__ import annotations

import html
import json
from typing import Any

import networkx as nx

from .entities import entity_row
from .relations import relations_of
from .store import connection

#: Verbs where the subject needs the object: "A uses B" means a change to B can affect A.
DEPENDENCY_VERBS = frozenset({"uses", "depends_on", "runs_on", "deploys_to", "stores_data_in", "reads_from",
                              "writes_to", "calls", "requires", "part_of", "configures"})
#: Verbs where the object needs the subject ("H hosts S": S depends on H).
REVERSED_DEPENDENCY_VERBS = frozenset({"hosts"})


def build_graph(db: Any, *, include_ended: bool = True) -> nx.MultiDiGraph:
    """The whole graph of one agent from its `relations` table."""
    conn = connection(db)
    g = nx.MultiDiGraph()
    for eid, name, etype in conn.execute("SELECT id, name, type FROM entities"):
        g.add_node(eid, name=name, type=etype)
    for s, verb, o, holds, weight, last_said, since in conn.execute(
            "SELECT subject_id, verb, object_id, holds, weight, last_said, since FROM relations"):
        if holds or include_ended:
            g.add_edge(s, o, key=verb, verb=verb, holds=bool(holds), weight=weight, last_said=last_said, since=since)
    return g


def neighbourhood(g: nx.MultiDiGraph, node: int, radius: int = 1) -> nx.MultiDiGraph:
    """The subgraph within `radius` hops of `node`, in either direction."""
    return nx.ego_graph(g, node, radius=radius, undirected=True).copy()


def dependency_graph(g: nx.MultiDiGraph) -> nx.DiGraph:
    """a -> b when a currently depends on b."""
    d = nx.DiGraph()
    d.add_nodes_from(g.nodes(data=True))
    for s, o, data in g.edges(data=True):
        if not data.get("holds"):
            continue
        if data["verb"] in DEPENDENCY_VERBS:
            d.add_edge(s, o)
        elif data["verb"] in REVERSED_DEPENDENCY_VERBS:
            d.add_edge(o, s)
    return d


def dependents(g: nx.MultiDiGraph, node: int) -> set[int]:
    """Everything that depends on `node`, transitively (what a change to it may touch)."""
    d = dependency_graph(g)
    return nx.ancestors(d, node) if node in d else set()


def dependencies(g: nx.MultiDiGraph, node: int) -> set[int]:
    """Everything `node` depends on, transitively."""
    d = dependency_graph(g)
    return nx.descendants(d, node) if node in d else set()


def paths(g: nx.MultiDiGraph, a: int, b: int, *, cutoff: int = 4, limit: int = 20) -> list[list[int]]:
    """Simple paths between two entities (edges in either direction), shortest first."""
    u = nx.Graph(g)
    if a not in u or b not in u:
        return []
    out = []
    for p in nx.all_simple_paths(u, a, b, cutoff=cutoff):
        out.append(p)
        if len(out) >= limit * 5:
            break
    return sorted(out, key=lambda p: (len(p), p))[:limit]


def entity_report(db: Any, entity_id: int, *, limit: int | None = None) -> dict:
    """`{"entity": {"name", "type", "aliases"}, "relations": [{"subject", "verb", "object", "state",
    "weight", "last_said", "since", "cards"}], "cards": {id: {statement, category, sessions, status}},
    "dependents": [names]}`: relations current first, strongest first, then most recent."""
    conn = connection(db)
    ent = entity_row(conn, entity_id)
    if ent is None:
        raise KeyError(entity_id)
    rels = relations_of(conn, entity_id, limit=limit)
    card_ids = sorted({c for r in rels for c in r["cards"]} | {c for (c,) in conn.execute(
        "SELECT card_id FROM card_entities WHERE entity_id = ?", (entity_id,))})
    cards: dict[str, dict] = {}
    for i in range(0, len(card_ids), 500):
        chunk = card_ids[i:i + 500]
        for cid, statement, category, sessions, status, last_seen in conn.execute(
                f"""SELECT id, statement, category, sessions, status, last_seen_at FROM cards
                    WHERE id IN ({','.join('?' * len(chunk))})""", chunk):
            cards[str(cid)] = {"statement": statement, "category": category, "sessions": sessions,
                               "status": status, "last_seen": last_seen}
    g = build_graph(conn)
    deps = sorted(g.nodes[n]["name"] for n in dependents(g, entity_id))
    return {
        "entity": {"name": ent["name"], "type": ent["type"], "aliases": ent["aliases"]},
        "relations": [{k: r[k] for k in ("subject", "verb", "object", "state", "weight", "last_said", "since", "cards")}
                      for r in rels],
        "cards": cards,
        "dependents": deps,
    }


def format_text(report: dict) -> str:
    """The human-readable `reverie graph` output."""
    ent = report["entity"]
    lines = [f"{ent['name']} ({ent['type']})"]
    if ent["aliases"]:
        lines.append("  also called: " + ", ".join(ent["aliases"]))
    if not report["relations"]:
        lines.append("  no relations recorded")
    for r in report["relations"]:
        n = r["weight"]
        weight = f"{n} session{'s' if n != 1 else ''}"
        if r["state"] == "holds":
            lines.append(f"  {r['subject']} {r['verb']} {r['object']}  ({weight}, since {r['since'][:10]})")
        else:
            lines.append(f"  {r['subject']} {r['verb']} {r['object']}  (no longer, since {r['since'][:10]}; {weight})")
        for cid in r["cards"][:3]:
            card = report["cards"].get(str(cid))
            if card:
                lines.append(f"      #{cid} {card['statement']}")
    other = [cid for cid in report["cards"] if all(int(cid) not in r["cards"] for r in report["relations"])]
    if other:
        lines.append("  other memories that mention it:")
        for cid in other[:10]:
            card = report["cards"][cid]
            mark = "" if card["status"] == "active" else f" [{card['status']}]"
            lines.append(f"      #{cid} {card['statement']}{mark}")
    if report.get("dependents"):
        lines.append("  depends on it (transitively): " + ", ".join(report["dependents"]))
    return "\n".join(lines)


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(sub: nx.MultiDiGraph, center: int | None = None) -> str:
    """Graphviz source for a (sub)graph; ended relations dashed and grey."""
    out = ["digraph reverie {", "  rankdir=LR;", '  node [shape=box, style="rounded"];']
    for n, data in sorted(sub.nodes(data=True)):
        attrs = [f"label={_dot_id(data.get('name', str(n)) + chr(10) + '(' + data.get('type', 'other') + ')')}"]
        if n == center:
            attrs.append("penwidth=2")
        out.append(f"  n{n} [{', '.join(attrs)}];")
    for s, o, data in sorted(sub.edges(data=True), key=lambda e: (e[0], e[1], e[2]["verb"])):
        label = data["verb"] + ("" if data["holds"] else " (no longer)")
        style = "" if data["holds"] else ", style=dashed, color=gray50, fontcolor=gray50"
        out.append(f"  n{s} -> n{o} [label={_dot_id(label)}{style}];")
    out.append("}")
    return "\n".join(out) + "\n"


_TYPE_COLOURS = {
    "host": "#e07a5f", "service": "#3d85c6", "repo": "#6aa84f", "file": "#999999", "function": "#8e7cc3",
    "tool": "#f1c232", "library": "#76a5af", "product": "#c27ba0", "person": "#e69138", "agent": "#674ea7",
    "organization": "#a61c00", "concept": "#93c47d", "other": "#b7b7b7",
}

_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>__TITLE__</title>
<style>
 body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
 header { padding: 12px 20px; background: #fff; border-bottom: 1px solid #ddd; }
 header h1 { margin: 0; font-size: 20px; } header .meta { color: #666; }
 main { display: flex; gap: 16px; padding: 16px; }
 #canvas { flex: 3; background: #fff; border: 1px solid #ddd; border-radius: 6px; min-height: 560px; }
 aside { flex: 2; max-height: 600px; overflow: auto; }
 aside li { margin-bottom: 8px; } .ended { color: #888; } .card { color: #555; font-size: 12px; }
 svg text { font-size: 12px; pointer-events: none; } .edge-label { fill: #555; font-size: 11px; }
</style></head>
<body>
<header><h1 id="title"></h1><div class="meta" id="meta"></div></header>
<main><svg id="canvas" width="760" height="560" viewBox="0 0 760 560" role="img"></svg>
<aside><h3>Relations</h3><ol id="relations"></ol></aside></main>
<script id="graph-data" type="application/json">__DATA__</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var NS = "http://www.w3.org/2000/svg", W = 760, H = 560;
  var svg = document.getElementById("canvas");
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    (parent || svg).appendChild(e); return e;
  }
  document.getElementById("title").textContent = data.entity.name + " (" + data.entity.type + ")";
  document.getElementById("meta").textContent = (data.entity.aliases.length ? "also called: " + data.entity.aliases.join(", ") + " \\u00b7 " : "") +
    data.nodes.length + " entities, " + data.edges.length + " relations";
  // deterministic layout: circle start, then a small force simulation
  var n = data.nodes.length, pos = {};
  data.nodes.forEach(function (d, i) {
    var a = 2 * Math.PI * i / Math.max(1, n);
    pos[d.id] = d.center ? {x: W / 2, y: H / 2} : {x: W / 2 + 200 * Math.cos(a), y: H / 2 + 180 * Math.sin(a)};
  });
  for (var it = 0; it < 300; it++) {
    var f = {}; data.nodes.forEach(function (d) { f[d.id] = {x: 0, y: 0}; });
    data.nodes.forEach(function (a) { data.nodes.forEach(function (b) {
      if (a.id === b.id) return;
      var dx = pos[a.id].x - pos[b.id].x, dy = pos[a.id].y - pos[b.id].y, d2 = dx * dx + dy * dy + 0.01;
      f[a.id].x += 9000 * dx / d2; f[a.id].y += 9000 * dy / d2; }); });
    data.edges.forEach(function (e) {
      var dx = pos[e.target].x - pos[e.source].x, dy = pos[e.target].y - pos[e.source].y;
      var d = Math.sqrt(dx * dx + dy * dy) + 0.01, k = 0.05 * (d - 170);
      f[e.source].x += k * dx / d; f[e.source].y += k * dy / d; f[e.target].x -= k * dx / d; f[e.target].y -= k * dy / d; });
    data.nodes.forEach(function (d) {
      if (d.center) return;
      pos[d.id].x = Math.min(W - 70, Math.max(70, pos[d.id].x + Math.max(-20, Math.min(20, f[d.id].x))));
      pos[d.id].y = Math.min(H - 30, Math.max(30, pos[d.id].y + Math.max(-20, Math.min(20, f[d.id].y)))); });
  }
  var defs = el("defs", {});
  [["arrow", "#555"], ["arrow-ended", "#aaa"]].forEach(function (m) {
    var mk = el("marker", {id: m[0], viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse"}, defs);
    el("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: m[1]}, mk); });
  var pairs = {};
  data.edges.forEach(function (e) {
    var key = [e.source, e.target].sort().join("-"); var k = pairs[key] = (pairs[key] || 0) + 1;
    var a = pos[e.source], b = pos[e.target], dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
    var r = 26, sx = a.x + dx / d * r, sy = a.y + dy / d * r, tx = b.x - dx / d * r, ty = b.y - dy / d * r;
    var off = (k - 1) * 16, nx = -dy / d * off, ny = dx / d * off;
    el("line", {x1: sx + nx, y1: sy + ny, x2: tx + nx, y2: ty + ny, stroke: e.holds ? "#555" : "#aaa",
      "stroke-width": Math.min(6, 1 + e.weight), "stroke-dasharray": e.holds ? "" : "6 4",
      "marker-end": "url(#" + (e.holds ? "arrow" : "arrow-ended") + ")", "class": "edge"});
    var t = el("text", {x: (sx + tx) / 2 + nx, y: (sy + ty) / 2 + ny - 4, "text-anchor": "middle", "class": "edge-label"});
    t.textContent = e.verb + (e.holds ? "" : " (no longer)");
  });
  data.nodes.forEach(function (d) {
    var p = pos[d.id];
    el("circle", {cx: p.x, cy: p.y, r: d.center ? 26 : 20, fill: d.colour, stroke: d.center ? "#111" : "#fff", "stroke-width": 2, "class": "node"});
    var t = el("text", {x: p.x, y: p.y + (d.center ? 42 : 36), "text-anchor": "middle"});
    t.textContent = d.name;
  });
  var list = document.getElementById("relations");
  data.relations.forEach(function (r) {
    var li = document.createElement("li"); if (r.state !== "holds") li.className = "ended";
    li.appendChild(document.createTextNode(r.subject + " " + r.verb + " " + r.object + " (" +
      (r.state === "holds" ? "" : "no longer, ") + r.weight + " session" + (r.weight === 1 ? "" : "s") + ", since " + r.since.slice(0, 10) + ")"));
    r.cards.slice(0, 3).forEach(function (cid) {
      var c = data.cards[String(cid)]; if (!c) return;
      var div = document.createElement("div"); div.className = "card"; div.textContent = "#" + cid + " " + c.statement; li.appendChild(div); });
    list.appendChild(li);
  });
  svg.setAttribute("data-nodes", String(data.nodes.length));
  svg.setAttribute("data-edges", String(data.edges.length));
  document.body.setAttribute("data-rendered", "1");
})();
</script>
</body></html>
"""


def to_html(report: dict, sub: nx.MultiDiGraph, center: int) -> str:
    """One self-contained page drawing the neighbourhood (no external resources)."""
    data = {
        "entity": report["entity"],
        "relations": report["relations"],
        "cards": report["cards"],
        "nodes": [{"id": n, "name": d.get("name", str(n)), "type": d.get("type", "other"), "center": n == center,
                   "colour": _TYPE_COLOURS.get(d.get("type", "other"), "#b7b7b7")}
                  for n, d in sorted(sub.nodes(data=True))],
        "edges": [{"source": s, "target": o, "verb": d["verb"], "holds": d["holds"], "weight": d["weight"]}
                  for s, o, d in sorted(sub.edges(data=True), key=lambda e: (e[0], e[1], e[2]["verb"]))],
    }
    # "<", ">" and "&" only occur inside JSON strings: escaping them keeps "</script>" and "<!--"
    # in a card's text from ending the script element.
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    title = html.escape(f"reverie: {report['entity']['name']}")
    return _HTML.replace("__TITLE__", title).replace("__DATA__", payload)
