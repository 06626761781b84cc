"""Graph benchmark: prints one table.

1. Merge throughput (cards/s): a synthetic agent store already holding N cards (default 100,000,
   with ~10,000 entities), then M new cards merged through one MergeSession (30% restatements of
   stored cards, 70% new points, each with two entities and one relation). Session start-up (loading
   the vectors) is reported apart. Once with the model2vec embedder, once with the lexical fallback.
2. Dedupe on fixtures/dedupe_pairs.jsonl (labeled: same / opposite / different): each pair merged
   into a fresh store (A in one session, B in a later one); "merged" = B reinforced A. Precision and
   recall of merging, merged opposites (goal: zero), opposites detected (B superseded A).
   Goals: precision >= 0.95, recall >= 0.85.
3. Entity resolution on fixtures/entity_aliases.jsonl: seed cards create the known entities, then each
   mention is resolved (without creating) and compared with the label (a known entity, a new entity,
   or "generic" = not an entity).
4. The `reverie graph --html` page rendered by headless chromium (screenshot written next to the
   given --out prefix), when chromium is installed.

    python bench/graph_bench.py [--cards 100000] [--new 1000] [--out /tmp/graph-bench]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED_MODEL = ROOT.parent / "shared" / "models" / "minilm-l6-m2v-256"
PAIRS = ROOT / "fixtures" / "dedupe_pairs.jsonl"
ALIASES = ROOT / "fixtures" / "entity_aliases.jsonl"


def _memory_db():
    import sqlite3

    import sqlite_utils

    from reverie.graph import store as graph_store

    conn = sqlite3.connect(":memory:")
    db = sqlite_utils.Database(conn)
    graph_store.MIGRATIONS.apply(db)
    return db


# ---------------------------------------------------------------------------------------------
# dedupe

def dedupe_scores(embedder) -> dict:
    """Merge-level precision/recall on the labeled pairs with this embedder."""
    from reverie.graph.merge import MergeSession
    from reverie.graph.model import NewCard

    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    conf: dict[tuple[str, str], int] = {}
    errors = []
    for r in rows:
        db = _memory_db()
        s = MergeSession(db, embedder=embedder)
        s.merge(NewCard(r["a"], "preference", 0.9, "s1", "2025-01-01T10:00:00Z"), now="2025-01-01T10:00:00Z")
        res = s.merge(NewCard(r["b"], "preference", 0.9, "s2", "2025-02-01T10:00:00Z"), now="2025-02-01T10:00:00Z")
        got = {"reinforced": "same", "superseded": "opposite"}.get(res.action, "different")
        conf[(r["label"], got)] = conf.get((r["label"], got), 0) + 1
        if got != r["label"]:
            errors.append((r["label"], got, r["a"], r["b"]))
        db.conn.close()
    tp = conf.get(("same", "same"), 0)
    merged = sum(v for (lab, got), v in conf.items() if got == "same")
    same = sum(v for (lab, got), v in conf.items() if lab == "same")
    opp = sum(v for (lab, got), v in conf.items() if lab == "opposite")
    return {
        "pairs": len(rows), "precision": tp / merged if merged else 1.0, "recall": tp / same if same else 1.0,
        "merged_opposites": conf.get(("opposite", "same"), 0),
        "opposites_detected": conf.get(("opposite", "opposite"), 0) / opp if opp else 1.0,
        "false_opposites": sum(v for (lab, got), v in conf.items() if got == "opposite" and lab != "opposite"),
        "errors": errors,
    }


# ---------------------------------------------------------------------------------------------
# entities

def entity_accuracy(embedder) -> tuple[int, int, list]:
    """(correct, total, errors) on the labeled alias set; errors are (mention, expected, got)."""
    from reverie.graph.entities import EntityResolver, is_generic
    from reverie.graph.model import EntityRef

    rows = [json.loads(line) for line in ALIASES.read_text().splitlines() if line.strip()]
    db = _memory_db()
    conn = db.conn
    res = EntityResolver(conn, embedder)
    card_id = 0
    for r in rows:
        if r["kind"] != "seed":
            continue
        card_id += 1
        conn.execute("""INSERT INTO cards(id, statement, norm, category, confidence, original_confidence, created_at,
                        said_at, last_seen_at, updated_at) VALUES (?, 'seed', 'seed', 'fact', 1, 1, 't', 't', 't', 't')""",
                     (card_id,))
        ids: set[int] = set()
        for e in r["card"]:
            hit = res.resolve(EntityRef(e["name"], e["type"]), ids, now="t")
            ids.add(hit.entity_id)
            conn.execute("INSERT OR IGNORE INTO card_entities(card_id, entity_id) VALUES (?, ?)", (card_id, hit.entity_id))
    conn.commit()
    names = dict(conn.execute("SELECT id, name FROM entities").fetchall())
    ok = total = 0
    errors = []
    for r in rows:
        if r["kind"] != "case":
            continue
        total += 1
        context = {res.lookup(c) for c in r["context"]} - {None}
        hit = res.resolve(EntityRef(r["mention"], r["type"]), context, create=False, now="t")
        if hit is None:
            got = "generic" if is_generic(r["mention"]) else None
        else:
            got = names.get(hit.entity_id)
        conn.rollback()          # aliases recorded by this resolution are not kept between cases
        res.invalidate()
        if got == r["expect"]:
            ok += 1
        else:
            errors.append((r["mention"], r["expect"], got))
    conn.close()
    return ok, total, errors


# ---------------------------------------------------------------------------------------------
# throughput

WORDS = ("auth billing search ingest export report notify payment order catalog user session image video "
         "metrics audit ledger invoice profile cart inventory shipping pricing feed chat mail sync backup").split()
HOSTS = ("k8s vm box node db cache queue edge gpu batch").split()
TOOLS = ("ruff pytest mypy black eslint prettier vite webpack pnpm npm yarn uv poetry tox make docker terraform "
         "helm ansible jest vitest playwright cypress").split()
TOPICS = ("retries timeouts logging metrics caching migrations secrets feature flags rate limits pagination "
          "auth tokens backups alerts indexes").split()
TEMPLATES = [
    ("{svc} runs on {host}.", "runs_on"),
    ("{svc} stores its data in {db}.", "stores_data_in"),
    ("{svc} depends on {svc2} for {topic}.", "depends_on"),
    ("Always run {tool} before committing changes to {svc}.", "uses"),
    ("Use {tool} instead of {tool2} in {svc}.", "uses"),
    ("The {topic} settings of {svc} live in config/{svc}.toml.", None),
    ("Lesson: {svc} broke when {topic} were changed without a migration; add one first.", None),
    ("{svc} calls {svc2} over gRPC with a 2 second timeout.", "calls"),
    ("{svc} writes its {topic} events to the {svc2}-events topic.", "writes_to"),
    ("Deploy {svc} to {host} only through the release workflow.", "deploys_to"),
]


def _names(rng: random.Random, n_entities: int) -> tuple[list[str], list[str], list[str]]:
    svcs = sorted({f"{rng.choice(WORDS)}-{rng.choice(['service', 'worker', 'api', 'web', 'job'])}-{i}"
                   for i in range(n_entities * 6 // 10)})
    hosts = sorted({f"{rng.choice(WORDS)}-{rng.choice(HOSTS)}-{i:02d}" for i in range(n_entities * 3 // 10)})
    dbs = sorted({f"{rng.choice(WORDS)}-db-{i}" for i in range(n_entities // 10)})
    return svcs, hosts, dbs


def _statement(rng: random.Random, svcs, hosts, dbs):
    text, verb = rng.choice(TEMPLATES)
    svc, svc2 = rng.choice(svcs), rng.choice(svcs)
    host, db = rng.choice(hosts), rng.choice(dbs)
    tool, tool2 = rng.sample(TOOLS, 2)
    stmt = text.format(svc=svc, svc2=svc2, host=host, db=db, tool=tool, tool2=tool2, topic=rng.choice(TOPICS))
    obj = {"runs_on": host, "deploys_to": host, "stores_data_in": db, "uses": tool}.get(verb, svc2)
    return stmt, verb, svc, obj


def build_store(path: Path, n_cards: int, n_entities: int, seed: int = 7) -> list[tuple]:
    """A store with n_cards synthetic cards (bulk SQL, no vectors yet), entities and relations.
    Returns the generated (statement, verb, subject, object) rows (for restatements)."""
    from reverie.consolidate.store import open_db
    from reverie.graph.entities import canonical_key, normalize_entity  # noqa: F401
    from reverie.graph.text import normalize_statement

    rng = random.Random(seed)
    svcs, hosts, dbs = _names(rng, n_entities)
    db = open_db(path)
    conn = db.conn
    ent_id: dict[str, int] = {}
    conn.execute("BEGIN")
    for names, etype in ((svcs, "service"), (hosts, "host"), (dbs, "other"), (TOOLS, "tool")):
        for name in names:
            norm = normalize_entity(name)
            conn.execute("INSERT OR IGNORE INTO entities(name, norm, type, created_at) VALUES (?, ?, ?, 't')",
                         (name, norm, etype))
            ent_id[name] = conn.execute("SELECT id FROM entities WHERE norm = ?", (norm,)).fetchone()[0]
            conn.execute("INSERT OR IGNORE INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, 'name')",
                         (norm, name, ent_id[name]))
    made = []
    seen = set()
    cid = 0
    while cid < n_cards:
        stmt, verb, subj, obj = _statement(rng, svcs, hosts, dbs)
        norm = normalize_statement(stmt)
        if norm in seen:
            continue
        seen.add(norm)
        cid += 1
        day = f"2024-{1 + cid % 12:02d}-{1 + cid % 28:02d}T10:00:00.000Z"
        conn.execute(
            """INSERT INTO cards(id, statement, norm, category, confidence, original_confidence, created_at, said_at,
               last_seen_at, updated_at) VALUES (?, ?, ?, 'fact', 0.7, 0.7, ?, ?, ?, ?)""",
            (cid, stmt, norm, day, day, day, day))
        conn.execute("INSERT INTO card_sessions(card_id, session, said_at) VALUES (?, ?, ?)", (cid, f"sess-{cid % 5000}", day))
        for name in {subj, obj}:
            conn.execute("INSERT OR IGNORE INTO card_entities(card_id, entity_id) VALUES (?, ?)", (cid, ent_id[name]))
        if verb and subj != obj:
            conn.execute("""INSERT INTO relation_statements(subject_id, verb, object_id, card_id, session, said_at,
                            learned_at, holds) VALUES (?, ?, ?, ?, ?, ?, ?, 1)""",
                         (ent_id[subj], verb, ent_id[obj], cid, f"sess-{cid % 5000}", day, day))
        made.append((stmt, verb, subj, obj))
    conn.execute("""INSERT OR IGNORE INTO relations(subject_id, verb, object_id, holds, weight, first_said, last_said,
                    since, updated_at) SELECT subject_id, verb, object_id, 1, count(DISTINCT session), min(said_at),
                    max(said_at), min(said_at), 't' FROM relation_statements GROUP BY subject_id, verb, object_id""")
    conn.commit()
    db.close()
    return made


def throughput(store: Path, made: list[tuple], embedder, n_new: int, seed: int = 11) -> dict:
    from reverie.consolidate.store import open_db
    from reverie.graph.merge import MergeSession
    from reverie.graph.model import EntityRef, NewCard, RelationRef
    from reverie.graph.store import ensure_vectors

    rng = random.Random(seed)
    db = open_db(store)
    t0 = time.perf_counter()
    ensure_vectors(db, embedder)
    t_vectors = time.perf_counter() - t0
    t0 = time.perf_counter()
    session = MergeSession(db, embedder=embedder)
    t_load = time.perf_counter() - t0
    svcs = sorted({m[2] for m in made})
    hosts = sorted({m[3] for m in made if m[1] in ("runs_on", "deploys_to")})
    dbs = sorted({m[3] for m in made if m[1] == "stores_data_in"})
    cards = []
    for i in range(n_new):
        if rng.random() < 0.3:
            stmt, verb, subj, obj = rng.choice(made)
            stmt = stmt.rstrip(".") + ("!" if i % 2 else "")          # restated, near-exact
        else:
            stmt, verb, subj, obj = _statement(rng, svcs, hosts, dbs)
            stmt = stmt.replace(".", f" (case {i}).", 1) if rng.random() < 0.5 else stmt
        rels = [RelationRef(subj, verb, obj)] if verb and subj != obj else []
        cards.append(NewCard(stmt, "fact", 0.7, f"new-{i % 50}", f"2025-02-{1 + i % 28:02d}T10:00:00Z",
                             entities=[EntityRef(subj, "service"), EntityRef(obj, "other")], relations=rels))
    actions: dict[str, int] = {}
    half = len(cards) // 2
    t0 = time.perf_counter()
    for c in cards[:half]:                      # one merge() per card, as merge_card does
        res = session.merge(c, now="2025-03-01T00:00:00Z")
        actions[res.action] = actions.get(res.action, 0) + 1
    single = time.perf_counter() - t0
    t0 = time.perf_counter()
    for res in session.merge_many(cards[half:], now="2025-03-01T00:00:00Z"):   # batched vector search
        actions[res.action] = actions.get(res.action, 0) + 1
    batched = time.perf_counter() - t0
    elapsed = single + batched
    n_cards = db.conn.execute("SELECT count(*) FROM cards").fetchone()[0]
    db.close()
    return {"embedder": embedder.id, "vectors_s": t_vectors, "load_s": t_load, "merge_s": elapsed,
            "single_per_s": half / single, "batched_per_s": (len(cards) - half) / batched,
            "cards_per_s": n_new / elapsed, "actions": actions, "cards_after": n_cards}


# ---------------------------------------------------------------------------------------------
# html

def html_check(out_prefix: Path) -> dict:
    """Write a `reverie graph --html` page for a small agent and render it in headless chromium."""
    from reverie.graph import view
    from reverie.graph.merge import MergeSession
    from reverie.graph.model import EntityRef, NewCard, RelationRef

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    db = _memory_db()
    s = MergeSession(db)
    facts = [
        ("auth-service runs on mini-lola.", "s1", "2025-01-10T09:00:00Z", [("auth-service", "runs_on", "mini-lola", True)]),
        ("We moved auth-service off mini-lola, it runs on prod-k8s now.", "s2", "2025-02-20T15:30:00Z",
         [("auth-service", "runs_on", "mini-lola", False), ("auth-service", "runs_on", "prod-k8s", True)]),
        ("auth-service stores sessions in redis-01.", "s3", "2025-02-21T10:00:00Z", [("auth-service", "stores_data_in", "redis-01", True)]),
        ("api-gateway calls auth-service for every request.", "s3", "2025-02-21T11:00:00Z", [("api-gateway", "calls", "auth-service", True)]),
        ("mobile-app talks to the backend through api-gateway.", "s4", "2025-02-22T11:00:00Z", [("mobile-app", "depends_on", "api-gateway", True)]),
        ("auth-service uses PostgreSQL 15 for accounts.", "s4", "2025-02-22T12:00:00Z", [("auth-service", "uses", "PostgreSQL", True)]),
        ("Team Identity owns auth-service.", "s5", "2025-02-23T12:00:00Z", [("Team Identity", "owns", "auth-service", True)]),
    ]
    for text, sess, at, rels in facts:
        s.merge(NewCard(text, "fact", 0.9, sess, at, relations=[RelationRef(*r) for r in rels],
                        entities=[EntityRef("mini-lola", "host"), EntityRef("prod-k8s", "host"),
                                  EntityRef("auth-service", "service")]), now="2025-03-01T00:00:00Z")
    eid = db.conn.execute("SELECT id FROM entities WHERE norm = 'auth-service'").fetchone()[0]
    report = view.entity_report(db, eid)
    sub = view.neighbourhood(view.build_graph(db), eid, radius=1)
    page = out_prefix.with_suffix(".html")
    page.write_text(view.to_html(report, sub, eid), encoding="utf-8")
    out = {"html": str(page), "nodes": sub.number_of_nodes(), "edges": sub.number_of_edges(), "browser": browser}
    if not browser:
        out["rendered"] = "chromium not installed"
        return out
    png = out_prefix.with_suffix(".png")
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,720"]
    dom = subprocess.run(args + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=60).stdout
    subprocess.run(args + [f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=60)
    out["rendered"] = 'data-rendered="1"' in dom
    out["svg_circles"] = dom.count("<circle")
    out["svg_lines"] = dom.count("<line")
    out["png"] = str(png) if png.exists() else None
    return out


# ---------------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=100_000)
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--new", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "graph-bench")
    ap.add_argument("--show-errors", action="store_true")
    args = ap.parse_args()

    from reverie.graph.embed import LexicalEmbedder, load_embedder

    embedders = [LexicalEmbedder()]
    if SHARED_MODEL.exists():
        embedders.insert(0, load_embedder(str(SHARED_MODEL)))
    else:
        print(f"note: {SHARED_MODEL} not present; model2vec rows skipped")

    rows: list[tuple[str, ...]] = []
    for emb in embedders:
        d = dedupe_scores(emb)
        ok, total, errs = entity_accuracy(emb if emb.kind != "lexical" else None)
        rows.append((emb.kind, f"{d['precision']:.3f}", f"{d['recall']:.3f}", str(d["merged_opposites"]),
                     f"{d['opposites_detected']:.3f}", str(d["false_opposites"]), f"{ok}/{total} = {ok / total:.3f}"))
        if args.show_errors:
            for e in d["errors"]:
                print("  dedupe", emb.kind, e)
            for e in errs:
                print("  entity", emb.kind, e)
    print(f"\nDedupe on {PAIRS.name} ({d['pairs']} pairs) and entity resolution on {ALIASES.name}")
    head = ("embedder", "precision", "recall", "merged opposites", "opposites detected", "false opposites", "entity accuracy")
    _table(head, rows)
    print("goals: precision >= 0.95, recall >= 0.85, merged opposites = 0")

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.db"
        t0 = time.perf_counter()
        made = build_store(base, args.cards, args.entities)
        print(f"\nbuilt a store of {args.cards:,} cards / ~{args.entities:,} entities in {time.perf_counter() - t0:.1f}s")
        trows = []
        for emb in embedders:
            store = Path(tmp) / f"{emb.kind}.db"
            shutil.copy(base, store)
            r = throughput(store, made, emb, args.new)
            trows.append((emb.kind, f"{args.cards:,}", f"{r['vectors_s']:.1f}", f"{r['load_s']:.2f}", str(args.new),
                          f"{r['single_per_s']:.0f}", f"{r['batched_per_s']:.0f}",
                          ", ".join(f"{k} {v}" for k, v in sorted(r["actions"].items()))))
        print(f"\nMerge throughput into a store of {args.cards:,} cards (one MergeSession; half the cards by merge(),"
              " half by merge_many())")
        _table(("embedder", "cards in store", "embed store s", "session load s", "merged", "merge() cards/s",
                "merge_many() cards/s", "actions"), trows)

    h = html_check(args.out)
    print("\n--html page:", h["html"])
    print(f"  neighbourhood: {h['nodes']} entities, {h['edges']} relations; headless chromium: {h['rendered']}"
          + (f"; svg circles {h['svg_circles']}, lines {h['svg_lines']}; screenshot {h['png']}" if h.get("png") else ""))


def _table(head, rows) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
