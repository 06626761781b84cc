"""Real published transcripts (../shared/fixtures) never crash consolidation (issue 13), and a draft
that breaks a model limit is repaired or rejected with a counted reason, never raised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.consolidate.writers.repair import build_draft, cut_statement, repair_cards, short_name

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
PROJECT_DIRS = sorted(FIXTURES.glob("real-sessions/claude-code/*/projects")) + \
    ([FIXTURES / "claude-code"] if (FIXTURES / "claude-code").is_dir() else [])


def _reverie(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "REVERIE_", "CLAUDE_"))}
    env.update(REVERIE_HOME=str(home), CLAUDE_CONFIG_DIR=str(home / "no-claude"))
    return subprocess.run([sys.executable, "-m", "reverie.consolidate", "--home", str(home), *args, "--json"],
                          capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.skipif(not PROJECT_DIRS, reason="the shared real-session fixtures are not checked out")
@pytest.mark.parametrize("projects", PROJECT_DIRS, ids=lambda p: p.parent.name if p.name == "projects" else p.name)
def test_every_real_transcript_consolidates_without_an_escaping_exception(tmp_path, projects):
    home = tmp_path / "home"
    indexed = _reverie(home, "index", "--projects-dir", str(projects))
    assert indexed.returncode == 0, indexed.stderr[-2000:]
    run = _reverie(home, "consolidate", "--now", "--all", "--writer", "offline")
    assert run.returncode == 0, run.stderr[-2000:]
    summaries = json.loads(run.stdout)
    assert summaries and all(not s.get("failed") for s in summaries)
    # No stretch crashed: every fault would be an error of kind "crash" in its agent's summary.
    assert [e for s in summaries for e in s["errors"] if e.get("kind") == "crash"] == []
    assert sum(s["passages"] for s in summaries) > 0


def test_a_long_path_becomes_its_last_components_and_a_long_statement_is_cut_at_a_clause():
    path = "/Users/someone/" + "very-long-folder-name/" * 8 + "src/components/TodoItem.vue"
    assert short_name(path) == "very-long-folder-name/" * 4 + "src/components/TodoItem.vue"
    assert len(short_name(path)) <= 120
    assert short_name("x" * 300) == "x" * 120
    assert short_name("   ") is None
    statement = "The deploy pipeline ships to Cloud Run, " + "it also does many other things, " * 12
    cut = cut_statement(statement)
    assert cut is not None and len(cut) <= 400 and cut.endswith(".")
    assert cut_statement("x" * 500) is None      # no clause boundary: rejected, never half a word


def test_drafts_are_repaired_or_rejected_by_reason_and_never_raise():
    long_entity = "/home/me/" + "a" * 200 + "/App.vue"
    draft, reason = build_draft(statement="App.vue renders the todo list.", category="fact", evidence=["P1"],
                                entities=[{"name": long_entity, "type": "file"}],
                                relations=[{"subject": long_entity, "verb": "uses", "object": "vue", "holds": True},
                                           {"subject": "a", "verb": "likes", "object": "b"}])
    assert reason is None
    assert [(e.name, e.type) for e in draft.entities] == [("App.vue", "file")]
    assert [(r.subject, r.verb, r.object) for r in draft.relations] == [("App.vue", "uses", "vue")]
    cards, rejected = repair_cards([
        {"statement": "x" * 450, "category": "fact", "evidence": ["P1"]},
        {"statement": "Use pnpm in this repo.", "category": "rule", "evidence": ["P1"]},
        {"statement": "Use pnpm in this repo.", "category": "preference", "evidence": []},
        {"statement": "Use pnpm in this repo.", "category": "preference", "evidence": ["P1"], "importance": 9},
        "not a card",
    ])
    assert [(c.statement, c.importance) for c in cards] == [("Use pnpm in this repo.", 4)]
    assert rejected == {"repair_statement": 1, "repair_category": 1, "repair_evidence": 1, "repair_invalid": 1}
    assert repair_cards(None) == ([], {"repair_invalid": 1})
