"""Throughput of `redact()` on text read once: every line of some transcripts, each redacted once
in a fresh interpreter (bench/redact_bench.py prints it next to its repeated-lines figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def read_once_throughput(roots: list[Path]) -> tuple[float, float]:
    """(MB, MB/s) of `redact()` over every line of the transcripts under `roots`, each line once, in
    a fresh interpreter: what indexing new transcripts costs. RE2's automata build their states
    as text brings them, so text read again in one process (the repeated lines of `throughput`)
    runs faster than text read once."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); import redact_bench as rb; "
            "from pathlib import Path; from reverie.redact.engine import Redactor; "
            "_, lines, _ = rb.fixture_texts([Path(p) for p in sys.argv[2:]]); r = Redactor(None); "
            "r.redact('warm'); n = sum(len(x.encode('utf-8', 'surrogateescape')) for x in lines); "
            "t0 = time.perf_counter(); [r.redact(x) for x in lines]; "
            "print(n / 1e6, n / 1e6 / (time.perf_counter() - t0))")
    out = subprocess.run([sys.executable, "-c", code, str(BENCH), *map(str, roots)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])
