"""Throughput of redaction on text read once, each measured in a fresh interpreter (RE2's automata
build their states as text brings them, so text read again in one process, as the repeated lines of
bench/redact_bench.py's `throughput`, runs faster than new text does):

  lines   every line of the transcripts, `redact()` per line;
  blocks  the texts the index stores (each block of each record, as the transcript readers give
          them), `redact()` per block: what indexing one record at a time costs;
  batches the same blocks through `redact_many()`, `BATCH_BLOCKS` at a time (what its callers,
          such as the import of Claude Code's auto-memory, pay; `reverie index` redacts per
          block, as `blocks` measures).

`stages(roots)` splits the `blocks` figure by stage, each stage in its own fresh interpreter over
the same blocks: the whole `redact()`, the prefilter alone (every RE2 Set), each Set alone, and a
Set that holds nothing but its end-of-text sentinel: the least one Set pass costs (one call per
block and one automaton step per byte), which bounds what any number of Set passes can reach.
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


def _stage_call(stage: str, scanner):
    """The call that `stage` times on each block's bytes (see `stages`)."""
    if stage == "prefilter":
        return scanner.fired
    if stage == "empty set":
        from reverie.redact.prefilter import compile_set

        return compile_set([])[0]
    group = scanner.prefilter.groups[int(stage.rpartition(" ")[2])]
    return group.match


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
    if mode.startswith("stage:"):
        datas = [x.encode("utf-8", "surrogatepass") for x in items]
        call = _stage_call(mode[6:], r.scanner)
        t0 = time.process_time()
        for d in datas:
            call(d)
        print(n / 1e6, n / 1e6 / (time.process_time() - t0))
        return
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


def stages(roots: list[Path], whole: float | None = None) -> list[tuple[str, float]]:
    """(stage, MB/s) of redacting the stored blocks read once, split by stage (module docstring),
    each in a fresh interpreter: `redact()` (`whole`, when the caller measured it already), the
    prefilter, each of its Sets, and the empty Set."""
    from reverie.redact.prefilter import set_group_members
    from reverie.redact.rules import RULES

    out = [("redact()", whole if whole is not None else read_once_throughput(roots, "blocks")[1]),
           ("prefilter (every Set)", read_once_throughput(roots, "stage:prefilter")[1])]
    for k, (name, members) in enumerate(set_group_members(RULES).items()):
        out.append((f"Set {k}: {name} ({len(members)} rules)", read_once_throughput(roots, f"stage:set {k}")[1]))
    out.append(("Set of the sentinel alone (a pass's least cost)", read_once_throughput(roots, "stage:empty set")[1]))
    return out


def print_stages(roots: list[Path], whole: float | None = None) -> None:
    """The stage table; `whole`: the `blocks` figure already measured, which its ratios are of."""
    rows = stages(roots, whole)
    whole = rows[0][1]
    print(f"  {'stage, stored blocks read once (CPU time)':56} {'MB/s':>8} {'time vs redact()':>17}")
    for name, rate in rows:
        print(f"  {name:56} {rate:8.1f} {whole / rate:16.2f}x")


if __name__ == "__main__":
    shared = BENCH.parent.parent / "shared" / "fixtures"
    roots = [shared / "claude-code", shared / "real-sessions"]
    rates = {}
    for m in MODES:
        mb, rates[m] = read_once_throughput(roots, m)
        print(m, mb, rates[m])
    print_stages(roots, rates["blocks"])
