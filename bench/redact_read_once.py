"""Throughput of redaction on text read once, each measured in a fresh interpreter (RE2's automata
build their states as text brings them, so text read again in one process, as the repeated lines of
bench/redact_bench.py's `throughput`, runs faster than new text does):

  lines   every line of the transcripts, `redact()` per line;
  blocks  the texts the index stores (each block of each record, as the transcript readers give
          them), `redact()` per block: what indexing one record at a time costs;
  batches the same blocks through `redact_many()`, `BATCH_BLOCKS` at a time (what its callers,
          such as the import of Claude Code's auto-memory, pay; `reverie index` redacts per
          block, as `blocks` measures).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

#: mode -> what the bench's table calls it
MODES = {"lines": "transcript lines", "blocks": "stored blocks, redact()", "batches": "stored blocks, redact_many()"}

#: the batch size of the `batches` mode, in blocks (about one index chunk of records)
BATCH_BLOCKS = 512


def block_texts(roots: list[Path]) -> list[str]:
    """The text of every block of every record the transcript readers find under `roots` (Claude
    Code and Codex files; a Codex rollout is told by its `rollout-` name), in file order."""
    from reverie.sources import claude_code, codex

    out: list[str] = []
    for path in sorted(p for r in roots for p in r.rglob("*.jsonl")):
        if path.name.startswith("rollout-"):
            state = codex.new_state(None)

            def parse(raw: bytes, state=state):
                return codex.parse_line(raw, state)
        else:
            parse = claude_code.parse_line
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                rec = parse(raw).record
                if rec is not None:
                    out.extend(b.text for b in rec.blocks if b.text)
    return out


def _measure(mode: str, roots: list[str]) -> None:
    import time

    sys.path.insert(0, str(BENCH))
    import redact_bench as rb
    from reverie.redact.engine import Redactor

    paths = [Path(p) for p in roots]
    items = rb.fixture_texts(paths)[1] if mode == "lines" else block_texts(paths)
    r = Redactor(None)
    r.redact("warm")
    n = sum(len(x.encode("utf-8", "surrogatepass")) for x in items)
    t0 = time.process_time()  # CPU time: what the machine's other load does not inflate
    if mode == "batches":
        for k in range(0, len(items), BATCH_BLOCKS):
            r.redact_many(items[k:k + BATCH_BLOCKS])
    else:
        for x in items:
            r.redact(x)
    print(n / 1e6, n / 1e6 / (time.process_time() - t0))


def read_once_throughput(roots: list[Path], mode: str = "lines") -> tuple[float, float]:
    """(MB, MB/s) of redacting the `mode` texts (see the module docstring) of the transcripts under
    `roots`, each once, in a fresh interpreter."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import redact_read_once as m; "
            "m._measure(sys.argv[2], sys.argv[3:])")
    out = subprocess.run([sys.executable, "-c", code, str(BENCH), mode, *map(str, roots)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


if __name__ == "__main__":
    shared = BENCH.parent.parent / "shared" / "fixtures"
    for m in MODES:
        print(m, *read_once_throughput([shared / "claude-code", shared / "real-sessions"], m))
