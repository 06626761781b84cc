"""Measure the detected-feedback rule (graph/feedback_detect.py) on the project's sample transcripts.

    python bench/feedback_detect_bench.py [--projects fixtures/sample-projects] [--json]

Replays each agent's sessions in order as the hooks would have seen them: the sample transcripts are
indexed and consolidated offline into a scratch home; then, for session k, recall runs on a copy of
the store in which only the cards learned in sessions before k are active (a session-start primer,
then every user prompt), which gives the recall log that session would have written. The session's
passages (user turns with the classifier's correction flag, assistant paragraphs) and that log go
through `graph.feedback_detect.detect`. Prints every recall and every detection with the texts
involved, so each can be judged by reading it, then the counts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", default=str(ROOT / "fixtures" / "sample-projects"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from reverie.consolidate.agents import list_agents
    from reverie.consolidate.classify import classify
    from reverie.consolidate.index import index_all
    from reverie.consolidate.passages import cut_passages, load_messages
    from reverie.consolidate.paths import agent_db_path
    from reverie.consolidate.pipeline import consolidate_agent
    from reverie.consolidate.store import open_db
    from reverie.graph import feedback_detect as fd
    from reverie.graph.recall import recall, recalled_ids

    home = Path(tempfile.mkdtemp(prefix="reverie-fd-bench-"))
    report: dict = {"agents": []}
    try:
        index_all(home, Path(args.projects))
        for agent in list_agents(home):
            aid = agent["id"]
            consolidate_agent(home, aid, writer="offline")
            path = agent_db_path(home, aid)
            db = open_db(path)
            conn = db.conn
            sessions = [r[0] for r in conn.execute(
                "SELECT id FROM conversations ORDER BY first_at, id")]
            learned = {}
            for cid, session in conn.execute("SELECT card_id, session FROM card_sessions"):
                learned.setdefault(cid, set()).add(session)
            statements = dict(conn.execute("SELECT id, statement FROM cards"))
            events, turns = [], []
            for k, session in enumerate(sessions):
                earlier = set(sessions[:k])
                msgs = load_messages(db, session)
                cut = cut_passages(session, msgs)
                for p in cut.passages:
                    if p.kind not in ("user", "assistant"):
                        continue
                    corr = bool(classify(p).correction) if p.kind == "user" else False
                    turns.append(fd.Turn(session, p.timestamp, p.text, corr, p.kind))
                snap = home / f"snap-{aid}-{k}.db"
                shutil.copy(path, snap)
                for suffix in ("-wal", "-shm"):
                    if Path(str(path) + suffix).exists():
                        shutil.copy(Path(str(path) + suffix), Path(str(snap) + suffix))
                sconn = sqlite3.connect(snap)
                active = [cid for cid, ss in learned.items() if ss & earlier]
                sconn.execute("UPDATE cards SET status = 'faded' WHERE id NOT IN (SELECT value FROM json_each(?))",
                              (json.dumps(active),))
                sconn.commit()
                sconn.close()
                users = [p for p in cut.passages if p.kind == "user"]
                if not users:
                    continue
                primer = recall(snap, "", kind="primer")
                ids, ents = recalled_ids(primer)
                if ids:
                    events.append({"at": users[0].timestamp, "session": session, "kind": "primer", "ids": ids,
                                   "entities": ents})
                for p in users:
                    res = recall(snap, p.text, kind="prompt")
                    ids, ents = recalled_ids(res)
                    if ids:
                        events.append({"at": p.timestamp, "session": session, "kind": "prompt", "ids": ids,
                                       "entities": ents})
            det = fd.detect(events, turns, fd.card_points(conn, statements))
            det.detections, outdated = fd.drop_outdated(conn, det.detections)
            corrections = [t for t in turns if t.is_correction]
            entry = {
                "agent": aid, "sessions": len(sessions), "cards": len(statements),
                "user_turns": sum(1 for t in turns if t.role == "user"),
                "assistant_turns": sum(1 for t in turns if t.role == "assistant"),
                "corrections": len(corrections),
                "recall_events": len(events),
                "cards_recalled": sum(len(e["ids"]) for e in events),
                "counts": {**det.counts(), "outdated_in_session": outdated},
                "recalls": [{"session": e["session"][:8], "kind": e["kind"], "at": e["at"],
                             "cards": [f"#{i} {statements.get(i, '?')}" for i in e["ids"]]} for e in events],
                "correction_turns": [{"session": t.session[:8], "at": t.at, "text": t.text[:160]}
                                     for t in corrections],
                "detections": [{"card": d.card_id, "statement": statements.get(d.card_id), "kind": d.kind,
                                "source": d.source, "session": d.session[:8], "at": d.at} for d in det.detections],
            }
            report["agents"].append(entry)
            db.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for a in report["agents"]:
        print(f"== agent {a['agent']}: {a['sessions']} sessions, {a['cards']} cards, {a['user_turns']} user turns, "
              f"{a['assistant_turns']} assistant paragraphs, {a['corrections']} corrections")
        for r in a["recalls"]:
            print(f"  recall {r['kind']:<6} {r['session']} {r['at']}: " + " | ".join(r["cards"]))
        for c in a["correction_turns"]:
            print(f"  correction {c['session']} {c['at']}: {c['text']}")
        for d in a["detections"]:
            print(f"  DETECTED {d['kind']:<7} ({d['source']}) session {d['session']} card #{d['card']}: {d['statement']}")
        print(f"  counts: {a['counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
