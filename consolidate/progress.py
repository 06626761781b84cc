"""What consolidation has done so far, per agent db: the `progress` table (per conversation: the last
message consolidated, failed attempts of the stretch after it, the trust stage's watermark) and
the `runs` table (one row per run, its summary). `consolidate.pipeline` drives them.

Invariants: progress never moves back (`_save_progress` keeps the maximum) and a completed stretch
clears its failed attempts; an attempt's error is a kind and an exception class or a writer's
short message, never passage text; times are UTC ISO-8601 with a `Z`.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Optional


def _now_iso(now: Optional[_dt.datetime]) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=_dt.timezone.utc)
    return now.astimezone(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def pending_conversations(conn) -> list[tuple[str, int]]:
    """(conversation, progress) of conversations with messages past their progress, newest first."""
    return [(r[0], r[1]) for r in conn.execute(
        """SELECT c.id, COALESCE(p.last_message_id, 0) AS done
           FROM conversations c LEFT JOIN progress p ON p.conversation = c.id
           WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation = c.id
                         AND m.id > COALESCE(p.last_message_id, 0))
           ORDER BY COALESCE(c.last_at, '') DESC, c.id""")]


def _save_progress(conn, conversation: str, last_id: int, at: str) -> None:
    """Move the conversation's progress to `last_id` (never back) and clear its failed attempts:
    they belonged to the stretch that just completed."""
    conn.execute(
        """INSERT INTO progress(conversation, last_message_id, updated_at) VALUES (?, ?, ?)
           ON CONFLICT(conversation) DO UPDATE SET last_message_id = MAX(last_message_id, excluded.last_message_id),
           updated_at = excluded.updated_at, attempts = 0, last_error = NULL""",
        (conversation, last_id, at))


def _record_attempt(conn, conversation: str, error: str, at: str) -> int:
    """Count one failed attempt of the stretch after the conversation's progress mark (its own
    transaction); returns the attempts so far. `error` is a kind and an exception class or a
    writer's short message, never passage text."""
    with conn:
        conn.execute(
            """INSERT INTO progress(conversation, last_message_id, updated_at, attempts, last_error)
               VALUES (?, 0, ?, 1, ?)
               ON CONFLICT(conversation) DO UPDATE SET attempts = attempts + 1, last_error = excluded.last_error,
               updated_at = excluded.updated_at""",
            (conversation, at, error[:300]))
    row = conn.execute("SELECT attempts FROM progress WHERE conversation = ?", (conversation,)).fetchone()
    return int(row[0])


def trust_pending(conn) -> list[tuple[str, int, int]]:
    """(conversation, trust watermark, progress) of conversations whose progress is ahead of the
    trust stage (episodes, feedback detection): a killed or failed run leaves them for the next."""
    return [(r[0], int(r[1]), int(r[2])) for r in conn.execute(
        "SELECT conversation, trust_message_id, last_message_id FROM progress "
        "WHERE last_message_id > trust_message_id ORDER BY conversation")]


def _start_run(conn, trigger: str, writer: str, at: str) -> int:
    with conn:
        cur = conn.execute("INSERT INTO runs(trigger, writer, started_at, status, summary) VALUES (?, ?, ?, 'running', '{}')",
                           (trigger, writer, at))
    return int(cur.lastrowid)


def _finish_run(conn, run_id: int, status: str, summary: dict, at: str) -> None:
    with conn:
        conn.execute("UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
                     (at, status, json.dumps(summary, sort_keys=True, default=str), run_id))
