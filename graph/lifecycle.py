"""Strength and fading of cards, and folding the recall log into access counts.

States (DESIGN.md "Strength and forgetting"):
- warm: seen in one session;
- recurring: seen in >= 2 distinct sessions of this agent;
- faded: warm, never recalled (access_count 0), not pinned, and last seen more than FADE_AFTER_DAYS
  before `now`. Kept, but excluded from recall and from relation weights (`status = 'faded'`);
- revived: a faded card that comes up again (reinforced by a merge, or recalled) is active again
  (`revived` counts how often).
Superseded cards keep their status; the lifecycle neither fades nor revives them.

The clock is always passed in (`now`), so tests run the lifecycle with a fake one.

Recall log: `<agent dir>/memory-recalls.jsonl`, one JSON object per line
`{"at", "session", "kind", "ids": [card ids], "entities": [names]}` written by recall. `fold_recall_log`
adds each line's ids to `cards.access_count` (and names to `entities.access_count`), remembers in
`graph_meta` how far it read (file identity + byte offset), follows a rotation (the old file
renamed beside it), never consumes a partial last line, and counts bad lines instead of failing.

Invariants: nothing is deleted here; every status change updates `status_at` and recomputes the
relations its statements touch, in the same transaction.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from . import relations
from .model import parse_time, utc_iso
from .store import connection, get_meta, set_meta, transaction

log = logging.getLogger(__name__)

FADE_AFTER_DAYS = 30
RECURRING_SESSIONS = 2


def strength(sessions: int, status: str) -> str:
    """warm | recurring | faded | superseded, from a card's row values."""
    if status in ("faded", "superseded"):
        return status
    return "recurring" if sessions >= RECURRING_SESSIONS else "warm"


def fade(db: Any, *, now: datetime | str, days: int = FADE_AFTER_DAYS) -> list[int]:
    """Fade every active, unpinned card seen in one session only, never recalled, last seen AND
    learned more than `days` before `now`: a card learned from old history (a first backfill of
    months of transcripts) gets its `days` to be recalled before it fades, like any other.
    Returns the faded ids (relation weights are recomputed)."""
    conn = connection(db)
    now_s = utc_iso(now)
    cutoff = utc_iso(parse_time(now_s) - timedelta(days=days))
    with transaction(conn):
        ids = [cid for (cid,) in conn.execute(
            """SELECT id FROM cards WHERE status = 'active' AND sessions < ? AND access_count = 0 AND pinned = 0
               AND last_seen_at < ? AND created_at < ?""", (RECURRING_SESSIONS, cutoff, cutoff))]
        for cid in ids:
            conn.execute("UPDATE cards SET status = 'faded', status_at = ?, updated_at = ? WHERE id = ?",
                         (now_s, now_s, cid))
        if ids:
            relations.recompute(conn, relations.triples_of_cards(conn, ids), now_s)
    return ids


def revive(db: Any, card_ids: list[int], *, now: datetime | str) -> list[int]:
    """Make faded cards active again; returns the ids that were faded."""
    conn = connection(db)
    now_s = utc_iso(now)
    with transaction(conn):
        ids = []
        for cid in sorted(set(card_ids)):
            cur = conn.execute(
                """UPDATE cards SET status = 'active', status_at = ?, updated_at = ?, revived = revived + 1
                   WHERE id = ? AND status = 'faded'""", (now_s, now_s, cid))
            if cur.rowcount:
                ids.append(cid)
        if ids:
            relations.recompute(conn, relations.triples_of_cards(conn, ids), now_s)
    return ids


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def fold_recall_log(db: Any, path: Path, *, now: datetime | str) -> dict[str, int]:
    """Fold new lines of the recall log into access counts. Returns counts: lines, recalls (card
    ids counted), entities, unknown (ids of cards no longer there), bad (unparseable lines),
    revived (faded cards that were recalled)."""
    conn = connection(db)
    path = Path(path)
    key = "recall_log:" + str(path)
    try:
        state = json.loads(get_meta(conn, key) or "{}")
    except ValueError:
        state = {}
    sources: list[tuple[Path, int]] = []
    ident = _identity(path)
    old_ident = tuple(state["ident"]) if state.get("ident") else None
    offset = int(state.get("offset", 0))
    if old_ident and ident != old_ident:
        # rotated: finish the old file (now renamed beside it) from where we were, then the new one
        for sibling in sorted(path.parent.glob(path.name + ".*")):
            if _identity(sibling) == old_ident:
                sources.append((sibling, offset))
                break
        offset = 0
    if ident is not None:
        size = path.stat().st_size
        if old_ident == ident and size < offset:
            offset = 0  # truncated in place
        sources.append((path, offset))
    counts = {"lines": 0, "recalls": 0, "entities": 0, "unknown": 0, "bad": 0, "revived": 0}
    card_hits: dict[int, tuple[int, str]] = {}
    entity_hits: dict[str, int] = {}
    final: tuple[tuple[int, int], int] | None = None
    for src, start in sources:
        with open(src, "rb") as fh:
            fh.seek(start)
            data = fh.read()
        end = data.rfind(b"\n") + 1   # a partial last line waits for the next fold
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            counts["lines"] += 1
            try:
                rec = json.loads(raw)
                at = utc_iso(rec.get("at") or now)
                ids = [int(i) for i in rec.get("ids") or []]
                names = [str(n) for n in rec.get("entities") or []]
            except (ValueError, TypeError, AttributeError):
                counts["bad"] += 1
                continue
            for cid in ids:
                n, last = card_hits.get(cid, (0, ""))
                card_hits[cid] = (n + 1, max(last, at))
            for name in names:
                entity_hits[name] = entity_hits.get(name, 0) + 1
        src_ident = _identity(src)
        if src_ident is not None:
            final = (src_ident, start + end)
    now_s = utc_iso(now)
    from .entities import EntityResolver

    with transaction(conn):
        faded = []
        for cid, (n, last) in card_hits.items():
            row = conn.execute("SELECT status FROM cards WHERE id = ?", (cid,)).fetchone()
            if row is None:
                counts["unknown"] += n
                continue
            conn.execute(
                """UPDATE cards SET access_count = access_count + ?,
                   last_accessed_at = max(coalesce(last_accessed_at, ''), ?) WHERE id = ?""", (n, last, cid))
            counts["recalls"] += n
            if row[0] == "faded":
                faded.append(cid)
        resolver = EntityResolver(conn)
        for name, n in entity_hits.items():
            eid = resolver.lookup(name)
            if eid is None:
                counts["unknown"] += n
                continue
            conn.execute("UPDATE entities SET access_count = access_count + ? WHERE id = ?", (n, eid))
            counts["entities"] += n
        if final is not None:
            set_meta(conn, key, json.dumps({"ident": list(final[0]), "offset": final[1]}))
    if faded:
        counts["revived"] = len(revive(conn, faded, now=now_s))
    if counts["bad"]:
        log.warning("recall log %s: %d unreadable line(s) skipped", path.name, counts["bad"])
    return counts


def maintain(db: Any, *, now: datetime | str, recall_log: Path | None = None) -> dict[str, int]:
    """What consolidation runs once per agent run: fold the recall log, then fade. Returns counts."""
    out: dict[str, int] = {}
    if recall_log is not None:
        out.update({f"recall_{k}": v for k, v in fold_recall_log(db, recall_log, now=now).items()})
    out["faded"] = len(fade(db, now=now))
    return out


def lifecycle_counts(db: Any) -> dict[str, int]:
    """How many cards are warm, recurring, faded, superseded."""
    conn = connection(db)
    out = {"warm": 0, "recurring": 0, "faded": 0, "superseded": 0}
    for sessions, status, n in conn.execute(
            "SELECT sessions >= ?, status, count(*) FROM cards GROUP BY 1, 2", (RECURRING_SESSIONS,)):
        out[strength(RECURRING_SESSIONS if sessions else 1, status)] += n
    return out
