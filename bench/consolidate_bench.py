"""Consolidation benchmark: prints side-by-side tables, asserts nothing.

1. Offline throughput: passages/s of a whole offline consolidation run (passages, classifier,
   offline writer, verification with the real redactor, merge into the graph, progress) over a large
   synthetic agent (`--conversations` x `--turns` exchanges built from realistic coding-session text),
   and passages/s of the classifier alone (`classify()` over every LoCoMo turn and every passage of
   the Claude Code fixtures, best of `--repeat` rounds).
2. Classifier on LoCoMo (../shared/bench/locomo, turns read as bench/locomo.py converts them: one user
   message "Speaker: text" per turn): the share of QA evidence turns (categories 1-4) the classifier
   keeps next to the share of all turns it keeps (goal: >= 90% of evidence turns while keeping
   <= 40%), at the settings threshold and a few others, in three columns: the first five
   conversations (the development split: the classifier's weights were set on them), the other five
   (held out: never looked at while tuning) and all ten. Two threshold-free rows show how well the
   keep probability ranks turns: the evidence share in the top 40% of turns, and the share of turns
   one must keep to hold 90% of the evidence.
3. The shared Claude Code fixtures (../shared/fixtures/claude-code), indexed and consolidated offline:
   per conversation the passages, candidates and cards written, then the totals and the rejected share
   (rejected / (written + rejected)). `--cards` also prints the card statements.
4. `--misses N`: N evidence turns the classifier drops and N other turns it keeps at the settings
   threshold, from the development split only (the held-out conversations stay unread), every
   k-th one so the sample is spread and repeatable; texts go through the redactor before printing.

LoCoMo turns are cut per session, as the pipeline sees the converted transcripts (one transcript per
session): a session's first turn has no previous turn. The weights of the user-turn score are
refitted by bench/classifier_fit.py.

    python bench/consolidate_bench.py [--conversations 200] [--turns 40] [--repeat 3] [--cards] [--misses N]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"
LOCOMO = SHARED / "bench" / "locomo" / "locomo10.json"
FIXTURES = SHARED / "fixtures" / "claude-code"
#: Conversations the classifier was tuned on (the first five samples of locomo10.json).
DEV_SAMPLES = 5

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
    from reverie.consolidate.store import open_db

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
    from reverie.consolidate import settings
    from reverie.consolidate.pipeline import consolidate_agent

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _, n_msgs = build_corpus(home, conversations, turns)
        settings.set_value(home, "consolidate.max_passages", 10**9)
        t0 = time.perf_counter()
        s = consolidate_agent(home, "bench", writer="offline")
        dt = time.perf_counter() - t0
    return {"messages": n_msgs, "passages": s["passages"], "cards": s["cards_written"], "seconds": dt,
            "passages_per_s": s["passages"] / dt if dt else 0.0, "rejected": s["cards_rejected"]}


# ---------------------------------------------------------------------------------------------
# LoCoMo

def locomo_passages() -> list[tuple[int, str, bool, object]]:
    """(sample index, sample id, is_evidence, passage or None) per LoCoMo turn, in file order. Turns are
    cut into passages exactly as the pipeline cuts the converted transcripts: every LoCoMo session is
    one transcript (one conversation), every turn a user message, so a session's first turn has no
    context and every later one the turn before it."""
    from bench import locomo
    from reverie.consolidate.passages import Msg, cut_passages

    if not LOCOMO.exists():
        return []
    out = []
    for n, sample in enumerate(locomo.load(LOCOMO)):
        ev = locomo.evidence_ids(sample)
        sessions: dict[int, list] = {}
        for t in locomo.iter_turns(sample):
            sessions.setdefault(t.session, []).append(t)
        for session, turns in sessions.items():
            msgs = [Msg(id=i + 1, role="user", timestamp=t.timestamp, texts=[t.text]) for i, t in enumerate(turns)]
            conv = locomo.session_id(sample["sample_id"], session)
            by_id = {p.message_id: p for p in cut_passages(conv, msgs).passages}
            for i, t in enumerate(turns):
                out.append((n, sample["sample_id"], t.dia_id in ev, by_id.get(i + 1)))
    return out


def _kept_share(scores: list[tuple[bool, float]], thr: float) -> tuple[float, float]:
    n_ev = sum(1 for e, _ in scores if e)
    kept = [(e, s >= thr) for e, s in scores]
    return (sum(1 for e, k in kept if e and k) / n_ev if n_ev else 0.0,
            sum(1 for _, k in kept if k) / len(kept) if kept else 0.0)


def _ranked(scores: list[tuple[bool, float]], keep: float = 0.40, recall: float = 0.90) -> tuple[float, float]:
    """(evidence share in the top `keep` of turns, share of turns needed to hold `recall` of the evidence).
    Ties at the cut are broken in the evidence's disfavour (no credit for luck)."""
    order = sorted(scores, key=lambda x: (-x[1], x[0]))
    n_ev = sum(1 for e, _ in scores if e) or 1
    top = order[:int(keep * len(order))]
    at_keep = sum(1 for e, _ in top if e) / n_ev
    need, seen = len(order), 0
    for i, (e, s) in enumerate(order, 1):
        seen += e
        if seen >= math.ceil(recall * n_ev):
            # every turn tied with this one is kept too
            need = sum(1 for _, s2 in order if s2 >= s)
            break
    return at_keep, need / len(order)


def bench_locomo(thresholds: list[float]) -> dict:
    from reverie.consolidate.classify import classify

    rows = locomo_passages()
    if not rows:
        return {}
    scored = []
    for n, sid, is_ev, p in rows:
        j = classify(p) if p else None
        # a passage counts as kept when it would be a candidate: keep >= threshold and a category
        scored.append((n, is_ev, j.keep if (j and j.category != "none") else 0.0))
    splits = {
        "dev (first 5)": [(e, s) for n, e, s in scored if n < DEV_SAMPLES],
        "held-out (last 5)": [(e, s) for n, e, s in scored if n >= DEV_SAMPLES],
        "all 10": [(e, s) for _, e, s in scored],
    }
    out = {"splits": list(splits), "thresholds": {}, "ranked": {}, "counts": {},
           "samples": sorted({(n, sid) for n, sid, _, _ in rows})}
    for thr in thresholds:
        out["thresholds"][thr] = {name: _kept_share(sc, thr) for name, sc in splits.items()}
    for name, sc in splits.items():
        out["ranked"][name] = _ranked(sc)
        out["counts"][name] = (len(sc), sum(1 for e, _ in sc if e))
    return out


def locomo_misses(n: int, threshold: float) -> tuple[list[tuple[float, str, str]], list[tuple[float, str, str]]]:
    """(dropped evidence turns, kept other turns) of the development split at `threshold`, `n` of each,
    spread evenly over the split: (keep, previous turn's tail, the turn), texts redacted."""
    from reverie.consolidate.classify import classify
    from reverie.redact.engine import Redactor

    dropped, kept = [], []
    for i, _sid, is_ev, p in locomo_passages():
        if i >= DEV_SAMPLES or p is None:
            continue
        j = classify(p)
        k = j.keep if j.category != "none" else 0.0
        if is_ev and k < threshold:
            dropped.append((k, p.context[-100:], p.text))
        elif not is_ev and k >= threshold:
            kept.append((k, p.context[-100:], p.text))
    red = Redactor(None)

    def pick(rows: list) -> list:
        rows = rows[::max(1, len(rows) // n)][:n] if n > 0 else []
        texts = red.redact_many([t for _, c, x in rows for t in (c, x)])
        return [(k, texts[2 * i].text, texts[2 * i + 1].text) for i, (k, _, _) in enumerate(rows)]

    return pick(dropped), pick(kept)


# ---------------------------------------------------------------------------------------------
# Classifier speed

def fixture_passages() -> list:
    """Every passage of the shared Claude Code fixtures (indexed into a scratch home)."""
    from reverie.consolidate.index import index_all
    from reverie.consolidate.passages import cut_passages, load_messages
    from reverie.consolidate.store import open_db

    if not FIXTURES.exists():
        return []
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        home, projects = _link_fixtures(Path(tmp))
        index_all(home, projects)
        for db_path in sorted((home / "agents").glob("*/agent.db")):
            db = open_db(db_path)
            for (conv,) in db.conn.execute("SELECT id FROM conversations ORDER BY id"):
                out.extend(cut_passages(conv, load_messages(db, conv)).passages)
            db.close()
    return out


def bench_classifier_speed(passages: list, repeat: int) -> dict:
    from reverie.consolidate.classify import classify

    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        for p in passages:
            classify(p)
        best = min(best, time.perf_counter() - t0)
    kinds: dict[str, int] = {}
    for p in passages:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    return {"passages": len(passages), "seconds": best, "per_s": len(passages) / best if best else 0.0,
            "kinds": kinds}


# ---------------------------------------------------------------------------------------------
# Shared fixtures, consolidated

def _link_fixtures(tmp: Path) -> tuple[Path, Path]:
    home, projects = tmp / "home", tmp / "projects"
    projects.mkdir()
    # Each fixture folder is one Claude Code project dir.
    for d in sorted(FIXTURES.iterdir()):
        if d.is_dir():
            (projects / d.name).symlink_to(d)
    return home, projects


def bench_fixtures() -> dict:
    from reverie.consolidate import settings as settings_mod
    from reverie.consolidate.classify import classify
    from reverie.consolidate.index import index_all
    from reverie.consolidate.passages import cut_passages, load_messages
    from reverie.consolidate.pipeline import consolidate_all
    from reverie.consolidate.store import open_db

    if not FIXTURES.exists():
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        home, projects = _link_fixtures(Path(tmp))
        index_all(home, projects)
        thr = float(settings_mod.get(settings_mod.load_settings(home), "consolidate.keep_threshold", 0.5))
        convs = []
        for db_path in sorted((home / "agents").glob("*/agent.db")):
            db = open_db(db_path)
            for (conv,) in db.conn.execute("SELECT id FROM conversations ORDER BY id"):
                ps = cut_passages(conv, load_messages(db, conv)).passages
                cands = sum(1 for j in map(classify, ps) if j.category != "none" and j.keep >= thr)
                convs.append({"agent": db_path.parent.name, "conversation": conv, "passages": len(ps),
                              "candidates": cands, "cards": []})
            db.close()
        runs = consolidate_all(home, writer="offline")
        for c in convs:
            db = open_db(home / "agents" / c["agent"] / "agent.db")
            c["cards"] = [r[0] for r in db.conn.execute(
                """SELECT c.statement FROM cards c WHERE c.id IN
                   (SELECT card_id FROM evidence WHERE conversation = ?) ORDER BY c.id""", (c["conversation"],))]
            db.close()
    written = sum(r["cards_written"] for r in runs)
    rejected = sum(sum(r["cards_rejected"].values()) for r in runs)
    n_conv = sum(r["conversations"] for r in runs)
    return {"agents": len(runs), "conversations": n_conv, "per_conversation": convs,
            "passages": sum(r["passages"] for r in runs), "candidates": sum(r["candidates"] for r in runs),
            "cards": written, "rejected": rejected,
            "cards_per_conversation": written / n_conv if n_conv else 0.0,
            "rejected_share": rejected / (written + rejected) if (written + rejected) else 0.0,
            "reasons": {k: v for r in runs for k, v in r["cards_rejected"].items()}}


# ---------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the classifier-only timing (best is shown)")
    ap.add_argument("--cards", action="store_true", help="print the cards written for each fixture conversation")
    ap.add_argument("--misses", type=int, default=0, metavar="N",
                    help="print N dropped evidence turns and N kept other turns of the LoCoMo dev split")
    args = ap.parse_args(argv)
    from reverie.consolidate.settings import DEFAULTS

    thr = float(DEFAULTS["consolidate"]["keep_threshold"])
    tp = bench_throughput(args.conversations, args.turns)
    loco = bench_locomo(sorted({thr, 0.4, 0.45, 0.5, 0.55, 0.6}))
    speed_passages = [p for _, _, _, p in locomo_passages() if p is not None] + fixture_passages()
    speed = bench_classifier_speed(speed_passages, args.repeat)
    fx = bench_fixtures()

    print(f"{'measure':<58} {'value':>14}  goal")
    print("-" * 90)
    print(f"{'offline run: messages in corpus':<58} {tp['messages']:>14,}")
    print(f"{'offline run: passages':<58} {tp['passages']:>14,}")
    print(f"{'offline run: cards written':<58} {tp['cards']:>14,}")
    print(f"{'offline run: seconds':<58} {tp['seconds']:>14.2f}")
    print(f"{'offline run: passages/s (whole pipeline)':<58} {tp['passages_per_s']:>14,.0f}")
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(speed["kinds"].items()))
    print(f"{'classifier alone: passages (' + kinds + ')':<58} {speed['passages']:>14,}")
    print(f"{'classifier alone: passages/s (best of ' + str(args.repeat) + ')':<58} {speed['per_s']:>14,.0f}")

    if loco:
        names = loco["splits"]
        print()
        print(f"LoCoMo classifier (keep >= threshold and a category); dev = "
              f"{', '.join(s for n, s in loco['samples'] if n < DEV_SAMPLES)}; held-out = "
              f"{', '.join(s for n, s in loco['samples'] if n >= DEV_SAMPLES)}")
        print(f"{'measure':<44}" + "".join(f"{n:>19}" for n in names) + "  goal")
        print("-" * (44 + 19 * len(names) + 10))
        print(f"{'turns / evidence turns':<44}" + "".join(
            f"{str(loco['counts'][n][0]) + ' / ' + str(loco['counts'][n][1]):>19}" for n in names))
        for t, by in loco["thresholds"].items():
            mark = " (settings)" if t == thr else ""
            print(f"{'evidence turns kept @ ' + format(t, '.2f') + mark:<44}" +
                  "".join(f"{by[n][0]:>19.3f}" for n in names) + "  >= 0.90")
            print(f"{'all turns kept      @ ' + format(t, '.2f') + mark:<44}" +
                  "".join(f"{by[n][1]:>19.3f}" for n in names) + "  <= 0.40")
        print(f"{'evidence in the top 40% of turns (ranking)':<44}" +
              "".join(f"{loco['ranked'][n][0]:>19.3f}" for n in names))
        print(f"{'turns kept to hold 90% of evidence':<44}" +
              "".join(f"{loco['ranked'][n][1]:>19.3f}" for n in names))

    if loco and args.misses:
        dropped, kept = locomo_misses(args.misses, thr)
        for title, rows in ((f"evidence turns dropped at {thr:.2f} (dev split)", dropped),
                            (f"other turns kept at {thr:.2f} (dev split)", kept)):
            print()
            print(title)
            for k, ctx, text in rows:
                print(f"  {k:.2f}  {text[:240]}")
                if ctx:
                    print(f"        after: ...{ctx[-80:]}")

    if fx:
        print()
        print(f"Shared Claude Code fixtures, consolidated offline (candidates at threshold {thr:.2f})")
        print(f"{'agent':<14} {'conversation':<38} {'passages':>9} {'candidates':>11} {'cards':>6}")
        print("-" * 82)
        for c in fx["per_conversation"]:
            print(f"{c['agent']:<14} {c['conversation']:<38} {c['passages']:>9} {c['candidates']:>11} "
                  f"{len(c['cards']):>6}")
            if args.cards:
                for s in c["cards"]:
                    print(f"    - {s}")
        print(f"{'total: agents / conversations consolidated':<58} {str(fx['agents']) + ' / ' + str(fx['conversations']):>14}")
        print(f"{'total: passages / candidates':<58} {str(fx['passages']) + ' / ' + str(fx['candidates']):>14}")
        print(f"{'total: cards per conversation':<58} {fx['cards_per_conversation']:>14.2f}")
        print(f"{'total: rejected share':<58} {fx['rejected_share']:>14.3f}  {fx['reasons'] or ''}")


if __name__ == "__main__":
    main()
