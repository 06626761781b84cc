"""The prefilter never misses a rule (redact/prefilter.py): on every text we have (the gitleaks and
detect-secrets cases, the own and the independent corpus, the real transcripts' blocks), every rule
whose regex matches a text is among the rules the prefilter names for it."""

from __future__ import annotations

import gzip
import importlib.util
import json

import pytest
from locations import ROOT, SHARED

from reverie.redact import scanner as scanner_mod
from reverie.redact.scanner import Scanner

BENCH = ROOT / "bench"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def texts() -> list[bytes]:
    """Every text, as the UTF-8 bytes the scanner reads; the transcript blocks joined 64 at a time
    with "\\n" (the patterns are multi-line: what matches in a block matches in the join)."""
    out: list[str] = []
    for name in ("gitleaks_cases", "detect_secrets_cases"):
        with gzip.open(SHARED / "bench" / "secrets" / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
            out += [json.loads(line)["text"] for line in fh]
    import sys
    saved = list(sys.path)     # redact_bench puts bench/ and the checkout on the path: not beyond this test
    try:
        rb = _module("redact_bench")
        out += [c["text"] for c in rb.load_corpus()] + [c["text"] for c in rb.load_corpus(rb.INDEP_DIR)]
        blocks = _module("redact_read_once").block_texts([SHARED / "fixtures" / "claude-code",
                                                         SHARED / "fixtures" / "real-sessions"])
    finally:
        sys.path[:] = saved
    out += ["\n".join(blocks[k:k + 64]) for k in range(0, len(blocks), 64)]
    assert len(out) > 6000
    return [t.encode("utf-8", "surrogatepass") for t in out]


def _misses(scanner: Scanner, datas: list[bytes]) -> list[tuple[str, int]]:
    """(rule, text index) of every rule that matches a text the prefilter did not name it for, and
    ("gave up", text index) where a Set gave up (it then names all its rules: nothing checked)."""
    out = []
    anchor = scanner_mod._UNANCHORED   # set by the first Scanner build
    for k, data in enumerate(datas):
        out += [("gave up", k) for g in scanner.prefilter.groups if g.sentinel not in g.match(data)]
        fired = scanner.fired(data)
        for i, match in enumerate(scanner._match):
            if i not in fired and match(anchor, data, 0, len(data))[0][0] >= 0:
                out.append((scanner.rules[i].name, k))
    return out


def test_prefilter_names_every_rule_that_matches(texts):
    assert _misses(Scanner(), texts) == []
