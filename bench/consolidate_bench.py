"""Consolidation benchmark: prints one table.

1. Offline throughput: passages/s of a whole offline consolidation run (passages, classifier,
   offline writer, verification with the real redactor, merge into the graph, progress) over a large
   synthetic agent (`--conversations` x `--turns` exchanges built from realistic coding-session text).
2. Classifier on LoCoMo (../shared/bench/locomo, converted by bench/locomo.py): the share of QA
   evidence turns (categories 1-4) the classifier keeps next to the share of all turns it keeps, at
   the settings threshold and a few others (goal: >= 90% of evidence turns kept while keeping <= 40%).
3. The shared Claude Code fixtures (../shared/fixtures/claude-code), indexed and consolidated offline:
   cards per conversation and the rejected share (rejected / (written + rejected)).

    python bench/consolidate_bench.py [--conversations 200] [--turns 40]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"

USER_TEXTS = [
    "From now on, always run the linter before committing in {svc}.",
    "Why does {svc} time out when it talks to {host}?",
    "We decided to keep {svc} on {host} because the GPU nodes are cheaper there.",
    "No, the config for {svc} lives in /etc/acme/{svc}.yaml, not in the repo.",
    "ok thanks",
    "Can you add a test for the retry path in {svc}?",
    "Never deploy {svc} on Fridays; the on-call rotation is thin.",
    "looks good, ship it",
]
ASSISTANT_TEXTS = [
    "Let me look at the logs first.",
    "The root cause is that {svc} opens a new connection to {host} per request and the pool on the other side "
    "is capped at 64, so requests queue and hit the 30s timeout under load.",
    "I've updated `client.py` to reuse one session and added a test.\n\n```python\nsession = Session()\n```",
    "{svc} depends on ledger-db and writes audit events to s3://acme-audit; both are in eu-west-1.",
    "All tests pass now. The change is small: one shared session object and a bounded pool.",
]


def build_corpus(home: Path, conversations: int, turns: int, seed: int = 7) -> tuple[Path, int]:
    from consolidate.store import open_db

    rnd = random.Random(seed)
    path = home / "agents" / "bench" / "agent.db"
    db = open_db(path)
    n = 0
    with db.conn:
        for c in range(conversations):
            conv = f"conv-{c:05d}"
            day = f"2026-{1 + c % 12:02d}-{1 + c % 28:02d}"
            db.conn.execute("INSERT INTO conversations(id, cwd, first_at, last_at) VALUES (?,?,?,?)",
                            (conv, "/w", f"{day}T08:00:00Z", f"{day}T18:{c % 60:02d}:00Z"))
            for t in range(turns):
                svc, host = f"svc-{rnd.randrange(50)}", f"node-{rnd.randrange(20)}"
                for role, pool in (("user", USER_TEXTS), ("assistant", ASSISTANT_TEXTS)):
                    mid = db.conn.execute(
                        "INSERT INTO messages(conversation, uuid, role, kind, timestamp) VALUES (?,?,?,?,?)",
                        (conv, f"{conv}-{t}-{role}", role, "message", f"{day}T09:{t % 60:02d}:00Z")).lastrowid
                    db.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (?,?,?,?)",
                                    (mid, 0, "text", rnd.choice(pool).format(svc=svc, host=host)))
                    n += 1
    db.close()
    return path, n


def bench_throughput(conversations: int, turns: int) -> dict:
    from consolidate import settings
    from consolidate.pipeline import consolidate_agent

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _, n_msgs = build_corpus(home, conversations, turns)
        settings.set_value(home, "consolidate.max_passages", 10**9)
        t0 = time.perf_counter()
        s = consolidate_agent(home, "bench", writer="offline")
        dt = time.perf_counter() - t0
    return {"messages": n_msgs, "passages": s["passages"], "cards": s["cards_written"], "seconds": dt,
            "passages_per_s": s["passages"] / dt if dt else 0.0, "rejected": s["cards_rejected"]}


def bench_locomo(thresholds: list[float]) -> list[dict]:
    from bench import locomo
    from consolidate.classify import classify
    from consolidate.passages import Msg, cut_passages

    path = SHARED / "bench" / "locomo" / "locomo10.json"
    if not path.exists():
        return []
    data = locomo.load(path)
    keeps: list[tuple[bool, float, str]] = []   # (is_evidence, keep, category)
    for sample in data:
        ev = locomo.evidence_ids(sample)
        turns = list(locomo.iter_turns(sample))
        msgs = [Msg(id=i + 1, role="user", timestamp=t.timestamp, texts=[t.text]) for i, t in enumerate(turns)]
        by_id = {p.message_id: p for p in cut_passages(sample["sample_id"], msgs).passages}
        for i, t in enumerate(turns):
            p = by_id.get(i + 1)
            j = classify(p) if p else None
            keeps.append((t.dia_id in ev, j.keep if j else 0.0, j.category if j else "none"))
    out = []
    n_ev = sum(1 for e, _, _ in keeps if e)
    for thr in thresholds:
        kept = [(e, k >= thr and c != "none") for e, k, c in keeps]
        out.append({"threshold": thr, "evidence_kept": sum(1 for e, k in kept if e and k) / n_ev,
                    "all_kept": sum(1 for _, k in kept if k) / len(kept), "turns": len(kept), "evidence_turns": n_ev})
    return out


def bench_fixtures() -> dict:
    from consolidate.index import index_all
    from consolidate.pipeline import consolidate_all

    src = SHARED / "fixtures" / "claude-code"
    if not src.exists():
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        projects = Path(tmp) / "projects"
        # The fixture folders are projects (each one Claude Code project dir).
        projects.mkdir()
        for d in sorted(src.iterdir()):
            if d.is_dir():
                (projects / d.name).symlink_to(d)
        index_all(home, projects)
        runs = consolidate_all(home, writer="offline")
    convs = sum(r["conversations"] for r in runs)
    written = sum(r["cards_written"] for r in runs)
    rejected = sum(sum(r["cards_rejected"].values()) for r in runs)
    return {"agents": len(runs), "conversations": convs, "passages": sum(r["passages"] for r in runs),
            "candidates": sum(r["candidates"] for r in runs), "cards": written, "rejected": rejected,
            "cards_per_conversation": written / convs if convs else 0.0,
            "rejected_share": rejected / (written + rejected) if (written + rejected) else 0.0,
            "reasons": {k: v for r in runs for k, v in r["cards_rejected"].items()}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--turns", type=int, default=40)
    args = ap.parse_args(argv)
    from consolidate.settings import DEFAULTS

    thr = float(DEFAULTS["consolidate"]["keep_threshold"])
    tp = bench_throughput(args.conversations, args.turns)
    loco = bench_locomo(sorted({thr, 0.4, 0.45, 0.5, 0.55, 0.6}))
    fx = bench_fixtures()

    print(f"{'measure':<58} {'value':>14}  goal")
    print("-" * 90)
    print(f"{'offline run: messages in corpus':<58} {tp['messages']:>14,}")
    print(f"{'offline run: passages':<58} {tp['passages']:>14,}")
    print(f"{'offline run: cards written':<58} {tp['cards']:>14,}")
    print(f"{'offline run: seconds':<58} {tp['seconds']:>14.2f}")
    print(f"{'offline run: passages/s (whole pipeline)':<58} {tp['passages_per_s']:>14,.0f}")
    for row in loco:
        mark = " (settings)" if row["threshold"] == thr else ""
        print(f"{'LoCoMo evidence turns kept @ ' + format(row['threshold'], '.2f') + mark:<58} "
              f"{row['evidence_kept']:>14.3f}  >= 0.90")
        print(f"{'LoCoMo all turns kept      @ ' + format(row['threshold'], '.2f') + mark:<58} "
              f"{row['all_kept']:>14.3f}  <= 0.40")
    if loco:
        print(f"{'LoCoMo turns / evidence turns (categories 1-4)':<58} {str(loco[0]['turns']) + ' / ' + str(loco[0]['evidence_turns']):>14}")
    if fx:
        print(f"{'shared fixtures: agents / conversations consolidated':<58} {str(fx['agents']) + ' / ' + str(fx['conversations']):>14}")
        print(f"{'shared fixtures: passages / candidates':<58} {str(fx['passages']) + ' / ' + str(fx['candidates']):>14}")
        print(f"{'shared fixtures: cards per conversation':<58} {fx['cards_per_conversation']:>14.2f}")
        print(f"{'shared fixtures: rejected share':<58} {fx['rejected_share']:>14.3f}  {fx['reasons'] or ''}")


if __name__ == "__main__":
    main()
