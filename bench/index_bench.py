"""Index benchmark: first index, no-change rescan, append rescan, db size; redaction on.

    python bench/index_bench.py [--mb 200] [--files 1000] [--projects 25] [--keep DIR]

Builds a corpus of Claude Code transcripts shaped like ../shared/fixtures/claude-code (windows of
their real lines, every uuid / sessionId / message.id / cwd rewritten so each session is distinct;
the bundled samples are used when the shared fixtures are absent) in a temporary folder (never
committed), then measures on this machine:

* first index: MB/s (transcript bytes) and messages/s, with the real redaction engine;
* a rescan with no changes over all files (goal <= 0.5 s for 1,000 files);
* a rescan after appending to 10 files (goal: cost proportional to what was appended);
* db bytes per byte of indexed text (goal <= 1.5), indexed text = the UTF-8 bytes stored in blocks.

Prints a table with goal and measured value side by side.
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
        (proj / f"{session}.jsonl").write_bytes(data)
        total += len(data)
        files += 1
    return files, total


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


def _db_totals(home: Path) -> tuple[int, int]:
    from consolidate.agents import known_agent_ids
    from consolidate.index import db_bytes
    from consolidate.paths import agent_db_path

    dbb = text = 0
    for a in known_agent_ids(home):
        p = agent_db_path(home, a)
        conn = sqlite3.connect(p)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        text += conn.execute("SELECT COALESCE(SUM(length(CAST(text AS BLOB))), 0) FROM blocks").fetchone()[0]
        conn.close()
        dbb += db_bytes(p)
    return dbb, text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="corpus size in MB (default 200)")
    ap.add_argument("--files", type=int, default=1000, help="number of session files (default 1000)")
    ap.add_argument("--projects", type=int, default=25, help="number of projects = agents (default 25)")
    ap.add_argument("--append-lines", type=int, default=200, help="lines appended to each of 10 files")
    ap.add_argument("--keep", default=None, help="keep the corpus and home in this folder")
    args = ap.parse_args(argv)
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

    from consolidate.index import index_all

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="reverie-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    corpus, home = base / "projects", base / "home"
    shutil.rmtree(home, ignore_errors=True)
    if not corpus.exists():
        t = time.perf_counter()
        n_files, n_bytes = build_corpus(corpus, args.mb, args.files, args.projects)
        print(f"corpus: {n_files} files, {n_bytes / 1e6:.1f} MB built in {time.perf_counter() - t:.1f} s "
              f"from {'shared fixtures' if SHARED.is_dir() else 'bundled samples'} -> {corpus}")
    n_files = sum(1 for _ in corpus.rglob("*.jsonl"))
    n_bytes = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))

    t = time.perf_counter()
    from redact.engine import Redactor
    from consolidate.paths import secrets_dir

    redactor = Redactor(secrets_dir(home))
    t_build = time.perf_counter() - t

    t = time.perf_counter()
    first = index_all(home, corpus, redactor=redactor)
    t_first = time.perf_counter() - t
    db_b, text_b = _db_totals(home)

    t = time.perf_counter()
    again = index_all(home, corpus)
    t_again = time.perf_counter() - t

    rng = random.Random(11)
    targets = sorted(corpus.rglob("*.jsonl"))[:: max(1, n_files // 10)][:10]
    appended = sum(append_lines(p, args.append_lines, rng) for p in targets)
    t = time.perf_counter()
    app = index_all(home, corpus, redactor=redactor)
    t_app = time.perf_counter() - t

    mbps = n_bytes / 1e6 / t_first
    first_cost = t_first / (n_bytes / 1e6)                  # s per MB on the first index
    app_cost = t_app / (appended / 1e6)
    rows = [
        ("corpus", "", f"{n_files} files, {n_bytes / 1e6:.1f} MB, {first['lines_read']:,} lines"),
        ("redactor build", "", f"{t_build:.2f} s (once per run)"),
        ("first index", ">= 20 MB/s", f"{mbps:.1f} MB/s  ({t_first:.1f} s; {first['messages_added'] / t_first:,.0f} messages/s, "
                                      f"{first['messages_added']:,} messages)"),
        ("no-change rescan", "<= 0.5 s", f"{t_again:.3f} s over {again['files_seen']} files ({again['files_changed']} changed)"),
        ("append to 10 files", "proportional", f"{t_app:.3f} s for {appended / 1e6:.2f} MB appended = {app_cost:.2f} s/MB "
                                               f"(first index {first_cost:.2f} s/MB); {app['messages_added']} messages"),
        ("db / indexed text", "<= 1.5", f"{db_b / max(1, text_b):.2f}  ({db_b / 1e6:.1f} MB db, {text_b / 1e6:.1f} MB text)"),
        ("db / transcript bytes", "", f"{db_b / n_bytes:.2f}"),
        ("skipped / rejected", "", f"{sum(first['skipped'].values()):,} / {sum(first['rejected'].values()):,} lines"),
        ("re-scrubbed rows", "", f"{first['rescanned']}"),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"\n{'measure':<{w}}  {'goal':<13} measured")
    for name, goal, value in rows:
        print(f"{name:<{w}}  {goal:<13} {value}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
