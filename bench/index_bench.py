"""Index benchmark: first index, no-change rescan, append rescan, db size; with and without redaction.

    python bench/index_bench.py [--mb 200] [--files 1000] [--projects 25] [--keep DIR]

Builds a corpus of Claude Code transcripts shaped like ../shared/fixtures/claude-code (windows of
their real lines, every uuid / sessionId / message.id / cwd rewritten so each session is distinct;
the bundled samples are used when the shared fixtures are absent) in a temporary folder (never
committed; `--keep DIR` keeps and reuses it, restoring any appended file to its built size), then
indexes it twice into fresh homes:

* **with redaction** (the real figure: every text goes through `redact.engine.Redactor`);
* **without redaction** (the redactor replaced by the identity, same everything else): what the
  indexer itself costs, parsing + SQLite + FTS5.

Each pass measures the first index (MB/s of transcript bytes, messages/s), a rescan with no
changes over every file, and a rescan after appending `--append-lines` lines to 10 files (its s/MB
next to the first index's s/MB: proportional means about the same). Times are wall clock and, in
brackets, this process's CPU time: on a shared machine the wall clock also counts time spent
waiting for a core (the load average is printed). Then the db size of the redacted pass: db bytes
per byte of indexed text (the UTF-8 bytes of `blocks.text`; goal <= 1.5) and per transcript byte,
with the `dbstat` breakdown, and the cost of a history search (`consolidate.search.search_history`,
BM25 over the FTS5 index) for a rare and a very common word on the largest agent.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "fixtures" / "claude-code"
SAMPLES = ROOT / "fixtures" / "sample-projects"
SIZES = "corpus-sizes.json"

_ID_FIELDS = ("uuid", "parentUuid", "logicalParentUuid", "leafUuid", "sourceToolAssistantUUID")


def _templates() -> list[list[dict]]:
    src = SHARED if SHARED.is_dir() else SAMPLES
    out = []
    for f in sorted(src.rglob("*.jsonl")):
        lines = [json.loads(x) for x in f.read_bytes().splitlines() if x.strip()]
        if lines:
            out.append(lines)
    return out


def _rewrite(d: dict, ids: dict, session: str, cwd: str, rng: random.Random) -> dict:
    d = dict(d)
    for k in _ID_FIELDS:
        v = d.get(k)
        if isinstance(v, str):
            d[k] = ids.setdefault(v, str(uuid.UUID(int=rng.getrandbits(128), version=4)))
    if "sessionId" in d:
        d["sessionId"] = session
    if "cwd" in d:
        d["cwd"] = cwd
    msg = d.get("message")
    if isinstance(msg, dict) and isinstance(msg.get("id"), str):
        msg = dict(msg)
        msg["id"] = ids.setdefault(msg["id"], "msg_" + uuid.UUID(int=rng.getrandbits(128)).hex[:24])
        d["message"] = msg
    return d


def build_corpus(root: Path, target_mb: float, n_files: int, n_projects: int, seed: int = 7) -> tuple[int, int]:
    """Write about `target_mb` MB in `n_files` transcript files; returns (files, bytes)."""
    rng = random.Random(seed)
    templates = _templates()
    per_file = int(target_mb * 1e6 / n_files)
    total = files = 0
    sizes = {}
    for i in range(n_files):
        tpl = templates[i % len(templates)]
        session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        proj_no = i % n_projects
        cwd = f"/home/bench/work/project-{proj_no:02d}"
        proj = root / cwd.replace("/", "-")
        proj.mkdir(parents=True, exist_ok=True)
        want = int(per_file * rng.uniform(0.3, 1.7))
        start = rng.randrange(len(tpl))
        ids: dict = {}
        chunks, size, j = [], 0, start
        while size < want:
            line = json.dumps(_rewrite(tpl[j % len(tpl)], ids, session, cwd, rng), ensure_ascii=False) + "\n"
            chunks.append(line)
            size += len(line.encode())
            j += 1
            if j % len(tpl) == 0:
                ids = {}  # a new lap of the template: fresh ids, so nothing collides
        data = "".join(chunks).encode()
        path = proj / f"{session}.jsonl"
        path.write_bytes(data)
        sizes[str(path.relative_to(root))] = len(data)
        total += len(data)
        files += 1
    (root.parent / SIZES).write_text(json.dumps(sizes))
    return files, total


def restore_corpus(root: Path) -> None:
    """Cut every file back to its built size (undoes the appends of an earlier pass)."""
    sizes_file = root.parent / SIZES
    if not sizes_file.exists():
        return
    for rel, size in json.loads(sizes_file.read_text()).items():
        p = root / rel
        if p.exists() and p.stat().st_size > size:
            with open(p, "r+b") as fh:
                fh.truncate(size)


def append_lines(path: Path, n: int, rng: random.Random) -> int:
    tpl = [t for t in _templates() if any(x.get("type") in ("user", "assistant") for x in t)][0]
    msgs = [x for x in tpl if x.get("type") in ("user", "assistant")]
    first = json.loads(path.read_bytes().split(b"\n", 1)[0])
    session, cwd = first.get("sessionId"), first.get("cwd")
    ids: dict = {}
    data = "".join(json.dumps(_rewrite(msgs[k % len(msgs)], ids, session, cwd, rng)) + "\n" for k in range(n)).encode()
    with open(path, "ab") as fh:
        fh.write(data)
    return len(data)


class IdentityRedactor:
    """Stands in for redact.engine.Redactor to measure the index alone. Bench only."""

    class _R:
        __slots__ = ("text", "findings", "learned")

        def __init__(self, text: str) -> None:
            self.text, self.findings, self.learned = text, [], 0

    def redact(self, text: str):
        return self._R(text)

    def scrub(self, text: str) -> tuple[str, int]:
        return text, 0


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _agent_dbs(home: Path) -> list[Path]:
    from reverie.consolidate.agents import known_agent_ids
    from reverie.consolidate.paths import agent_db_path

    return [p for p in (agent_db_path(home, a) for a in known_agent_ids(home)) if p.exists()]


def db_report(home: Path) -> dict:
    """db bytes, indexed text bytes, freelist bytes and the dbstat breakdown over every agent db."""
    from reverie.consolidate.index_read import db_bytes

    out = {"db": 0, "text": 0, "free": 0, "dbs": 0, "by_name": {}, "unused": {}}
    for p in _agent_dbs(home):
        conn = sqlite3.connect(p)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        out["text"] += conn.execute("SELECT COALESCE(SUM(length(CAST(text AS BLOB))), 0) FROM blocks").fetchone()[0]
        out["free"] += conn.execute("PRAGMA freelist_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
        for name, size, unused in conn.execute("SELECT name, SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name"):
            out["by_name"][name] = out["by_name"].get(name, 0) + size
            out["unused"][name] = out["unused"].get(name, 0) + unused
        conn.close()
        out["db"] += db_bytes(p)
        out["dbs"] += 1
    return out


def search_costs(home: Path) -> list[tuple[str, int, float]]:
    """(query, blocks matched, seconds) of search_history on the largest agent db."""
    from reverie.consolidate.search import search_history
    from reverie.consolidate.search import _term_query
    from reverie.graph.recall import _fts_terms

    dbs = sorted(_agent_dbs(home), key=lambda p: p.stat().st_size)
    if not dbs:
        return []
    conn = sqlite3.connect(f"file:{dbs[-1]}?mode=ro", uri=True)
    out = []
    for q in ("xyzzy deploy", "file", "tool_result"):
        n = conn.execute("SELECT COUNT(*) FROM blocks_fts WHERE blocks_fts MATCH ?",
                         (" OR ".join(_term_query(w) for w in _fts_terms(q)),)).fetchone()[0]
        _, wall, _ = _timed(lambda: search_history(conn, q, limit=10))
        out.append((q, n, wall))
    conn.close()
    return out


def run_pass(corpus: Path, home: Path, redactor, append_n: int) -> dict:
    from reverie.consolidate.index import index_all

    shutil.rmtree(home, ignore_errors=True)
    restore_corpus(corpus)
    first, w1, c1 = _timed(lambda: index_all(home, corpus, redactor=redactor))
    sizes = db_report(home)
    again, w2, c2 = _timed(lambda: index_all(home, corpus, redactor=redactor))
    rng = random.Random(11)
    files = sorted(corpus.rglob("*.jsonl"))
    targets = files[:: max(1, len(files) // 10)][:10]
    appended = sum(append_lines(p, append_n, rng) for p in targets)
    app, w3, c3 = _timed(lambda: index_all(home, corpus, redactor=redactor))
    restore_corpus(corpus)
    return {"first": first, "first_s": (w1, c1), "again": again, "again_s": (w2, c2), "app": app,
            "app_s": (w3, c3), "appended": appended, "sizes": sizes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="corpus size in MB (default 200)")
    ap.add_argument("--files", type=int, default=1000, help="number of session files (default 1000)")
    ap.add_argument("--projects", type=int, default=25, help="number of projects = agents (default 25)")
    ap.add_argument("--append-lines", type=int, default=200, help="lines appended to each of 10 files")
    ap.add_argument("--keep", default=None, help="keep the corpus and homes in this folder (and reuse the corpus)")
    args = ap.parse_args(argv)
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

    import reverie.consolidate.index  # noqa: F401  (imports outside the timed runs)
    import reverie.consolidate.store  # noqa: F401
    import reverie.graph.store  # noqa: F401

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="reverie-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    corpus = base / "projects"
    if not corpus.exists() or not (base / SIZES).exists():
        shutil.rmtree(corpus, ignore_errors=True)
        t = time.perf_counter()
        n_files, n_bytes = build_corpus(corpus, args.mb, args.files, args.projects)
        print(f"corpus: {n_files} files, {n_bytes / 1e6:.1f} MB built in {time.perf_counter() - t:.1f} s "
              f"from {'shared fixtures' if SHARED.is_dir() else 'bundled samples'} -> {corpus}")
    restore_corpus(corpus)
    n_files = sum(1 for _ in corpus.rglob("*.jsonl"))
    n_bytes = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))

    from reverie.consolidate.paths import secrets_dir
    from reverie.redact.engine import Redactor

    home_r, home_i = base / "home-redacted", base / "home-identity"
    shutil.rmtree(home_r, ignore_errors=True)
    redactor, t_build, _ = _timed(lambda: Redactor(secrets_dir(home_r)))
    load_before = os.getloadavg()[0]
    real = run_pass(corpus, home_r, redactor, args.append_lines)
    bare = run_pass(corpus, home_i, IdentityRedactor(), args.append_lines)
    load_after = os.getloadavg()[0]
    searches = search_costs(home_r)

    mb = n_bytes / 1e6

    def first(r: dict) -> str:
        w, c = r["first_s"]
        msgs = r["first"]["messages_added"]
        return f"{mb / w:.1f} MB/s, {msgs / w:,.0f} msg/s  [cpu {mb / c:.1f} MB/s, {msgs / c:,.0f} msg/s]"

    def first_t(r: dict) -> str:
        w, c = r["first_s"]
        return f"{w:.1f} s [cpu {c:.1f} s]; {r['first']['messages_added']:,} messages"

    def again(r: dict) -> str:
        w, c = r["again_s"]
        return f"{w:.3f} s [cpu {c:.3f} s], {r['again']['files_changed']} of {r['again']['files_seen']} changed"

    def app(r: dict) -> str:
        w, c = r["app_s"]
        amb = r["appended"] / 1e6
        return (f"{w:.3f} s [cpu {c:.3f}] for {amb:.2f} MB, {r['app']['messages_added']} msgs: {w / amb:.3f} s/MB "
                f"[cpu {c / amb:.3f}]")

    def first_cost(r: dict) -> str:
        w, c = r["first_s"]
        return f"{w / mb:.3f} s/MB [cpu {c / mb:.3f}]"

    sz = real["sizes"]
    rows = [
        ("first index", ">= 20 MB/s", first(real), first(bare)),
        ("  time", "", first_t(real), first_t(bare)),
        ("no-change rescan", "<= 0.5 s", again(real), again(bare)),
        ("append to 10 files", "proportional", app(real), app(bare)),
        ("  first index cost", "", first_cost(real), first_cost(bare)),
        ("db / indexed text", "<= 1.5", f"{sz['db'] / max(1, sz['text']):.3f}  ({sz['db'] / 1e6:.1f} MB db, "
                                         f"{sz['text'] / 1e6:.1f} MB text)",
         f"{bare['sizes']['db'] / max(1, bare['sizes']['text']):.3f}"),
        ("db / transcript bytes", "", f"{sz['db'] / n_bytes:.3f}", f"{bare['sizes']['db'] / n_bytes:.3f}"),
        ("skipped / rejected", "", f"{sum(real['first']['skipped'].values()):,} / "
                                   f"{sum(real['first']['rejected'].values()):,} lines",
         f"{sum(bare['first']['skipped'].values()):,} / {sum(bare['first']['rejected'].values()):,} lines"),
        ("re-scrubbed rows", "", f"{real['first']['rescanned']}", f"{bare['first']['rescanned']}"),
    ]
    print(f"\ncorpus: {n_files} files, {mb:.1f} MB, {real['first']['lines_read']:,} lines, {sz['dbs']} agents; "
          f"redactor build {t_build:.2f} s (once per process, not in the times below)")
    print(f"load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores: wall times include "
          f"waiting for a core; [cpu ...] is this process's own time")
    print("REAL figures: the 'with redaction' column. 'without redaction' = identity redactor: the index's own cost.\n")
    h = ("measure", "goal", "WITH redaction (real)", "without redaction (index only)")
    w0 = max(len(r[0]) for r in rows + [h])
    w1 = max(len(r[1]) for r in rows + [h])
    w2 = max(len(r[2]) for r in rows + [h])
    print(f"{h[0]:<{w0}}  {h[1]:<{w1}}  {h[2]:<{w2}}  {h[3]}")
    for r in rows:
        print(f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:<{w2}}  {r[3]}")

    print(f"\ndb breakdown (with redaction; dbstat over {sz['dbs']} agent dbs; freelist {sz['free'] / 1e6:.2f} MB)")
    print(f"{'b-tree':<34} {'MB':>8} {'of db':>6} {'/ text':>7} {'unused MB':>10}")
    items = sorted(sz["by_name"].items(), key=lambda kv: -kv[1])
    shown, rest_n, rest = items[:12], len(items) - 12, sum(v for _, v in items[12:])
    for name, size in shown:
        print(f"{name:<34} {size / 1e6:8.2f} {size / sz['db'] * 100:5.1f}% {size / max(1, sz['text']):7.3f} "
              f"{sz['unused'][name] / 1e6:10.2f}")
    if rest_n > 0:
        print(f"{f'{rest_n} others (graph tables etc.)':<34} {rest / 1e6:8.2f} {rest / sz['db'] * 100:5.1f}% "
              f"{rest / max(1, sz['text']):7.3f}")
    if searches:
        print("\nhistory search on the largest agent (search_history, BM25 over blocks_fts):")
        for q, n, wall in searches:
            print(f"  {q!r:<16} {n:>7,} blocks match  {wall * 1000:8.1f} ms")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
