"""A person's verdicts on what reverie redacts where no label says it should (bench/secret_verdicts.json,
its "about" says how they were made): the flagged not_secret rows of the scanner corpora and the
findings on the shared transcripts. Read by bench/redact_bench.py and tests/test_redact_corpus.py."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

VERDICTS = Path(__file__).resolve().parent / "secret_verdicts.json"


def row_id(row: dict) -> str:
    """The key of a scanner row in `VERDICTS` (the rows carry no id)."""
    return hashlib.sha256(f"{row['rule']}\0{row['label']}\0{row['text']}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def finding_id(text: str, start: int, end: int, rule: str) -> str:
    """The key of a transcript finding in `VERDICTS`: its rule, the 60 characters before it and its
    length, never the value (a hash of a low-entropy password could be guessed back)."""
    before = text[max(0, start - 60):start]
    return hashlib.sha256(f"{rule}\0{before}\0{end - start}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def load_verdicts(path: Path = VERDICTS) -> dict:
    """{"rows": {row_id: {verdict, why, ...}}, "transcripts": {finding_id: {...}}}: a person's verdict on each
    flagged not_secret row and each transcript finding (see the file's "about"); empty when missing.
    Read once per process (callers only read it)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"rows": {}, "transcripts": {}}
    return {"rows": data.get("rows", {}), "transcripts": data.get("transcripts", {})}


def verdict_of(table: dict, key: str) -> str:
    """The judged verdict, or "unjudged" (which the figures count as a false finding)."""
    return table.get(key, {}).get("verdict", "unjudged")


#: The verdicts the figures count as a false finding.
FALSE_VERDICTS = ("false", "unjudged")


def judged_false(verdicts: list[str]) -> int:
    return sum(v in FALSE_VERDICTS for v in verdicts)
