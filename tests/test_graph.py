"""graph.view and `reverie graph`: networkx algorithms, text / --json / --dot / --html output."""

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.store import open_db
from reverie.graph import view
from reverie.graph.merge import MergeSession
from reverie.graph.model import EntityRef, NewCard, RelationRef

NOW = "2025-03-01T00:00:00Z"
FACTS = [
    ("auth-service runs on the mini-lola host.", "s1", "2025-01-10T09:00:00Z",
     [("auth-service", "runs_on", "the mini-lola host", True)]),
    ("We moved auth-service off mini-lola, it runs on prod-k8s now.", "s2", "2025-02-20T15:30:00Z",
     [("auth-service", "runs_on", "mini-lola", False), ("auth-service", "runs_on", "prod-k8s", True)]),
    ("api-gateway calls auth-service for every request.", "s3", "2025-02-21T11:00:00Z",
     [("api-gateway", "calls", "auth-service", True)]),
    ("The gateway in front calls auth-service to check tokens </script><b>x</b>.", "s4", "2025-02-22T11:00:00Z",
     [("api-gateway", "calls", "auth-service", True)]),
    ("mobile-app depends on api-gateway.", "s4", "2025-02-22T12:00:00Z", [("mobile-app", "depends_on", "api-gateway", True)]),
    ("Team Identity owns auth-service.", "s5", "2025-02-23T12:00:00Z", [("Team Identity", "owns", "auth-service", True)]),
]


def fill(db):
    s = MergeSession(db)
    for text, sess, at, rels in FACTS:
        s.merge(NewCard(text, "fact", 0.9, sess, at, relations=[RelationRef(*r) for r in rels],
                        entities=[EntityRef("the mini-lola host", "host"), EntityRef("prod-k8s", "host"),
                                  EntityRef("auth-service", "service")]), now=NOW)


@pytest.fixture
def agent(reverie_home):
    db = open_db(agent_db_path(reverie_home, "demo"))
    fill(db)
    db.close()
    return "demo"


def ids(db):
    return {n: i for i, n in db.conn.execute("SELECT id, name FROM entities")}


def test_networkx_view(tmp_path):
    db = open_db(tmp_path / "agent.db")
    fill(db)
    e = ids(db)
    g = view.build_graph(db)
    assert sorted((g.nodes[s]["name"], k, g.nodes[o]["name"], d["holds"]) for s, o, k, d in g.edges(keys=True, data=True)) == [
        ("Team Identity", "owns", "auth-service", True), ("api-gateway", "calls", "auth-service", True),
        ("auth-service", "runs_on", "mini-lola", False), ("auth-service", "runs_on", "prod-k8s", True),
        ("mobile-app", "depends_on", "api-gateway", True)]
    names = lambda xs: sorted(g.nodes[x]["name"] for x in xs)  # noqa: E731
    assert names(view.dependents(g, e["prod-k8s"])) == ["api-gateway", "auth-service", "mobile-app"]
    assert names(view.dependents(g, e["mini-lola"])) == []          # ended relations do not count
    assert names(view.dependencies(g, e["mobile-app"])) == ["api-gateway", "auth-service", "prod-k8s"]
    assert [[g.nodes[x]["name"] for x in p] for p in view.paths(g, e["mobile-app"], e["prod-k8s"])] == [
        ["mobile-app", "api-gateway", "auth-service", "prod-k8s"]]
    assert names(view.neighbourhood(g, e["api-gateway"]).nodes) == ["api-gateway", "auth-service", "mobile-app"]
    db.close()


def test_graph_json(agent):
    res = CliRunner().invoke(build_cli(), ["graph", "Mini-Lola host", "--agent", agent, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["entity"] == {"name": "mini-lola", "type": "host", "aliases": []}
    assert out["relations"] == [{"subject": "auth-service", "verb": "runs_on", "object": "mini-lola", "state": "ended",
                                 "weight": 2, "last_said": "2025-02-20T15:30:00.000Z",
                                 "since": "2025-02-20T15:30:00.000Z", "cards": [2, 1]}]
    assert out["dependents"] == []


def test_graph_text_current_first_strongest_first(agent):
    res = CliRunner().invoke(build_cli(), ["graph", "auth-service", "--agent", agent])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        "auth-service (service)",
        "  api-gateway calls auth-service  (2 sessions, since 2025-02-21)",
        "      #4 The gateway in front calls auth-service to check tokens </script><b>x</b>.",
        "      #3 api-gateway calls auth-service for every request.",
        "  Team Identity owns auth-service  (1 session, since 2025-02-23)",
        "      #6 Team Identity owns auth-service.",
        "  auth-service runs_on prod-k8s  (1 session, since 2025-02-20)",
        "      #2 We moved auth-service off mini-lola, it runs on prod-k8s now.",
        "  auth-service runs_on mini-lola  (no longer, since 2025-02-20; 2 sessions)",
        "      #2 We moved auth-service off mini-lola, it runs on prod-k8s now.",
        "      #1 auth-service runs on the mini-lola host.",
        "  other memories that mention it:",
        "      #5 mobile-app depends on api-gateway.",
        "  depends on it (transitively): api-gateway, mobile-app",
    ]


def test_graph_dot(agent):
    res = CliRunner().invoke(build_cli(), ["graph", "mini-lola", "--agent", agent, "--dot"])
    assert res.exit_code == 0, res.output
    assert res.output == (
        'digraph reverie {\n  rankdir=LR;\n  node [shape=box, style="rounded"];\n'
        '  n1 [label="mini-lola\n(host)", penwidth=2];\n'
        '  n3 [label="auth-service\n(service)"];\n'
        '  n3 -> n1 [label="runs_on (no longer)", style=dashed, color=gray50, fontcolor=gray50];\n}\n')


def test_graph_unknown_entity_and_agent(agent):
    res = CliRunner().invoke(build_cli(), ["graph", "auth-servic", "--agent", agent])
    assert res.exit_code == 0 and res.output.startswith("auth-service (service)")   # a confident fuzzy match
    res = CliRunner().invoke(build_cli(), ["graph", "payments", "--agent", agent])
    assert res.exit_code == 1 and "No entity named 'payments' in agent 'demo'." in res.output
    res = CliRunner().invoke(build_cli(), ["graph", "x", "--agent", "nobody"])
    assert res.exit_code == 1 and "No memory for agent 'nobody' yet" in res.output


def test_graph_html_is_self_contained(agent, tmp_path):
    page = tmp_path / "auth.html"
    res = CliRunner().invoke(build_cli(), ["graph", "auth-service", "--agent", agent, "--html", str(page)])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "<script src" not in text and "<link" not in text
    assert "</script><b>" not in text                  # card text cannot close the data script
    assert text.count("</script>") == 2


def test_graph_html_renders_in_headless_chromium(agent, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not browser:
        pytest.skip("no chromium binary")
    page = tmp_path / "auth.html"
    CliRunner().invoke(build_cli(), ["graph", "auth-service", "--agent", agent, "--html", str(page)])
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90).stdout
    assert 'data-rendered="1"' in dom
    assert 'data-nodes="5"' in dom and 'data-edges="4"' in dom
    assert dom.count("<circle") == 5 and dom.count('class="edge"') == 4
    assert "runs_on (no longer)" in dom
    assert "The gateway in front calls auth-service to check tokens &lt;/script&gt;&lt;b&gt;x&lt;/b&gt;." in dom
