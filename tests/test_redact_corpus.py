"""The own secret corpus (bench/secret_corpus/) loads as documented and meets the issue-14 goal:
every case has its label and family, every secret case marks at least one value, the random parts
are the same on every load, and reverie recalls >= 97% of the secret cases while flagging <= 5% of
the not_secret ones (the bench prints the per-family table; this guards the goal)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from reverie.redact.engine import Redactor

BENCH = Path(__file__).resolve().parent.parent / "bench" / "redact_bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("redact_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_corpus_loads_deterministically(bench):
    a, b = bench.load_corpus(), bench.load_corpus()
    assert a == b
    files = {c["file"] for c in a}
    assert {"env_files.txt", "compose_k8s.txt", "ci_configs.txt", "shell_history.txt", "tool_output.txt",
            "code_configs.txt", "more_shapes.txt"} <= files
    for c in a:
        assert c["label"] in ("secret", "not_secret") and c["family"]
        assert "\u27e6" not in c["text"] and "\u27e7" not in c["text"] and "{alnum:" not in c["text"]
        if c["label"] == "secret":
            assert c["values"] and all(v in c["text"] for v in c["values"])
        else:
            assert c["values"] == []


def test_the_independent_corpus_loads_with_both_splits(bench):
    """bench/secret_corpus_indep: the same format; the rounds of `HELD_ROUNDS` are the held-out split."""
    cases = bench.load_corpus(bench.INDEP_DIR)
    assert cases == bench.load_corpus(bench.INDEP_DIR)
    assert {bench.indep_split(c) for c in cases} == {"dev", "held"}
    for split in ("dev", "held"):
        labels = {c["label"] for c in cases if bench.indep_split(c) == split}
        assert labels == {"secret", "not_secret"}
    for c in cases:
        assert "\u27e6" not in c["text"] and "\u27e7" not in c["text"] and "{alnum:" not in c["text"]
        assert (bool(c["values"]) and all(v in c["text"] for v in c["values"])) == (c["label"] == "secret")


def test_corpus_meets_the_goal(bench):
    r = Redactor(None)
    cases = bench.load_corpus()
    secret = [c for c in cases if c["label"] == "secret"]
    other = [c for c in cases if c["label"] == "not_secret"]
    recalled = sum(all(bench.recalled(v, r.redact_text(c["text"])) for v in c["values"]) for c in secret)
    flagged = sum(bool(r.redact(c["text"]).findings) for c in other)
    assert recalled >= 0.97 * len(secret), (recalled, len(secret))
    assert flagged <= 0.05 * len(other), (flagged, len(other))


def test_every_flag_and_transcript_finding_has_a_verdict(bench):
    """bench/secret_verdicts.json judges every not_secret row reverie flags and every value it finds
    on the shared transcripts: a new flag or finding is judged by a person before it lands (the bench
    counts an unjudged one as false), and the judged false findings stay within the goals."""
    from locations import SHARED, SHARED_FIXTURES  # SHARED_FIXTURES: the Claude Code fixtures

    verdicts = bench.load_verdicts()
    kinds = {"credential-context", "provider-slot", "false"}
    assert {v["verdict"] for v in verdicts["rows"].values()} <= kinds
    assert {v["verdict"] for v in verdicts["transcripts"].values()} <= kinds
    r = Redactor(None)
    rows = [row for name in ("gitleaks_cases", "detect_secrets_cases")
            for row in bench.load(SHARED / "bench" / "secrets" / f"{name}.jsonl.gz")]
    negatives = [row for row in rows if row["label"] == "not_secret"]
    flagged = [row for row in negatives if r.redact(row["text"]).count]
    unjudged = [(row["rule"], bench.row_id(row)) for row in flagged if bench.row_id(row) not in verdicts["rows"]]
    assert unjudged == []
    false = bench.judged_false([bench.verdict_of(verdicts["rows"], bench.row_id(row)) for row in flagged])
    assert false / len(negatives) <= 0.05

    texts, _, total = bench.fixture_texts([SHARED_FIXTURES, SHARED / "fixtures" / "real-sessions"])
    found = bench.transcript_findings(texts, total)
    assert found["unjudged"] == []
    assert found["false"] / (total / 1e6) <= 1.0


def test_unjudged_counts_as_false(bench):
    assert bench.verdict_of({}, "0" * 16) == "unjudged"
    assert bench.judged_false(["false", "unjudged", "credential-context", "provider-slot"]) == 2


def test_no_rule_fails_on_a_case_of_either_corpus(bench, caplog):
    """A handler that raises (or returns no iterable) has its match redacted whole and logged: no
    case of the own or the independent corpus may make one fail."""
    import logging

    r = Redactor(None)
    with caplog.at_level(logging.ERROR, logger="reverie.redact.scanner"):
        for c in bench.load_corpus() + bench.load_corpus(bench.INDEP_DIR):
            r.redact(c["text"])
    assert [rec.getMessage() for rec in caplog.records if rec.name == "reverie.redact.scanner"] == []
