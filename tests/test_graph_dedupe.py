"""Dedupe judgement on the labeled pairs (fixtures/dedupe_pairs.jsonl) and on the cases the issue names."""

import json
import sys
from pathlib import Path

import pytest

from reverie.graph.dedupe import analyze, judge_pair
from reverie.graph.embed import LexicalEmbedder, Model2VecEmbedder

from locations import SHARED_MODEL

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def test_fixture_is_big_and_balanced():
    rows = [json.loads(x) for x in (ROOT / "fixtures" / "dedupe_pairs.jsonl").read_text().splitlines()]
    labels = [r["label"] for r in rows]
    assert len(rows) >= 200
    assert {k: labels.count(k) >= 50 for k in ("same", "opposite", "different")} == {
        "same": True, "opposite": True, "different": True}


@pytest.mark.parametrize("a, b, cosine, expected", [
    ("use pnpm instead of npm", "never use pnpm, use npm", 0.93, "opposite"),
    ("Enable the query cache in the reporting service.", "Disable the query cache in the reporting service.", 0.95, "opposite"),
    ("Emojis are fine in commit messages.", "Emojis are not allowed in commit messages.", 0.9, "opposite"),
    ("Use pnpm instead of npm.", "Use pnpm instead of npm except in the legacy docs site.", 0.9, "different"),
    ("CI runs on Node 18.", "CI runs on Node 20.", 0.97, "different"),
    ("Deploys to staging require one approval.", "Deploys to production require one approval.", 0.95, "different"),
    ("Never commit directly to main; open a pull request instead.",
     "Do not commit straight to main, always go through a pull request.", 0.9, "same"),
    ("Use ripgrep instead of grep for searching the codebase.", "Search the codebase with ripgrep, not grep.", 0.96, "same"),
])
def test_judgement_examples(a, b, cosine, expected):
    assert judge_pair(a, b, cosine, kind="model2vec").decision == expected


def test_model_judge_is_asked_only_when_ambiguous():
    asked = []

    def judge(a, b):
        asked.append((a, b))
        return "same"

    clear = judge_pair("use pnpm instead of npm", "never use pnpm, use npm", 0.93, judge=judge)
    exact = judge_pair("Use pnpm.", "use pnpm", 0.2, judge=judge)
    qualified = judge_pair("Always squash-merge feature branches.",
                           "Always squash-merge feature branches unless they contain a migration.", 0.9, judge=judge)
    assert (clear.decision, exact.decision, qualified.decision, qualified.by_model) == ("opposite", "same", "same", True)
    assert asked == [("Always squash-merge feature branches.",
                      "Always squash-merge feature branches unless they contain a migration.")]
    broken = judge_pair("Always squash-merge feature branches.", "Always squash-merge feature branches unless hotfix.",
                        0.9, judge=lambda a, b: 1 / 0)
    assert (broken.decision, broken.by_model) == ("different", False)


def test_polarity_analysis():
    a = analyze("Use pnpm instead of npm for installing packages")
    b = analyze("Never use pnpm, use npm")
    assert (a.polarity["pnpm"], a.polarity["npm"], a.polarity["install"]) == ({1}, {-1}, {1})
    assert (b.polarity["pnpm"], b.polarity["npm"]) == ({-1}, {1})


@pytest.mark.parametrize("kind", ["model2vec", "lexical"])
def test_labeled_pairs_meet_the_goals(kind):
    from graph_bench import dedupe_scores

    if kind == "model2vec":
        if not SHARED_MODEL.exists():
            pytest.skip("../shared/models/minilm-l6-m2v-256 not present")
        emb = Model2VecEmbedder(SHARED_MODEL)
    else:
        emb = LexicalEmbedder()
    scores = dedupe_scores(emb)
    assert scores["merged_opposites"] == 0, scores["errors"]
    assert scores["precision"] >= 0.95 and scores["recall"] >= 0.85, scores["errors"]


def test_the_same_lead_choice_is_the_same_point_whatever_each_adds():
    a = ("This repo uses pnpm, not npm: the lockfile is pnpm-lock.yaml, so don't let anything generate a "
         "package-lock.json.")
    b = ("Use pnpm instead of npm because the workspace has 14 packages and pnpm's content-addressed store cuts a "
         "clean install from about 4 minutes to 40 seconds; npm also kept hoisting two versions of zod.")
    got = [(j.decision, j.reason) for j in (
        judge_pair(a, b, 0.68),
        judge_pair("Use npm, not pnpm.", b, 0.7),
        judge_pair("Prefer tabs over spaces in Makefiles.", "Prefer tabs over spaces in Python files.", 0.9),
    )]
    assert got == [("same", "same choice: pnpm over npm"), ("opposite", "polarity: pnpm"),
                   ("different", "one slot differs: makefil / python fil")]
