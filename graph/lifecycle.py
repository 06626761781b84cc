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
`{"at", "session", "kind", "ids": [card ids], "episodes": [ids], "entities": [names]}` written by
recall, rotated to `.1` at 1 MB. `read_recall_events` is its ONE reader: one cursor per agent db
(`graph_meta['recall_log:<path>']`: file identity + byte offset) follows rotation by identity,
never consumes a partial last line, validates ids (ints 1..2**62) and counts bad lines and ids
instead of failing. `fold_recall_log` adds each event's ids to `cards.access_count` (names to
`entities.access_count`), stores the cursor in the same transaction, and keeps the batch so the
other consumers of the same consolidation pass (feedback detection, episode reinforcement) get
exactly the same new lines (`take_pass_batch`): each line is delivered once.

Invariants: nothing is deleted here; every status change updates `status_at` and recomputes the
relations its statements touch, in the same transaction.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from . import relations
from .model import RECALLED_STATUSES, parse_time, utc_iso
from .store import connection, get_meta, set_meta, transaction

log = logging.getLogger(__name__)

FADE_AFTER_DAYS = 30
RECURRING_SESSIONS = 2


def strength(sessions: int, status: str) -> str:
    """warm | recurring for a card in use (`graph.model.RECALLED_STATUSES`); otherwise its status
    itself (faded, superseded, retired, removed, archived)."""
    if status not in RECALLED_STATUSES:
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


#: Card and episode ids in the recall log are SQLite rowids: 1 .. 2**62 (anything else is counted bad).
MAX_LOG_ID = 2 ** 62
#: Longest entity name taken from a recall-log line (longer ones are counted bad).
MAX_LOG_NAME = 300


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


HEAD_BYTES = 256


def _head(path: Path, n: int) -> str | None:
    """SHA-256 of the first `n` bytes: tells a file from a later one that reused its inode."""
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read(n)).hexdigest()
    except OSError:
        return None


def _valid_id(value: Any) -> int | None:
    """An id from a log line: a JSON integer (not a bool, not a float) within 1..MAX_LOG_ID."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= MAX_LOG_ID else None


def _rotated_siblings(path: Path) -> list[Path]:
    """`<name>.1`, `<name>.2`, ... beside the log, oldest first (the highest number is the oldest).
    Only numeric suffixes: `<name>.lock` and other files are never read."""
    out = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return []
    prefix = path.name + "."
    for p in entries:
        suffix = p.name[len(prefix):] if p.name.startswith(prefix) else ""
        if suffix.isdigit() and p.is_file():
            out.append((int(suffix), p))
    return [p for _, p in sorted(out, reverse=True)]


@dataclass
class RecallBatch:
    """The recall-log lines not read yet by this agent db, as validated events.

    `events`: one dict per good line, in log order, with `ids` / `episodes` reduced to valid ids
    (ints 1..2**62) and `entities` to names (str); other keys as written. `cursor` is where the
    next read starts (stored by `commit_recall_cursor`, never before the batch was used)."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0
    bad: int = 0            # unparseable lines, lines that are not objects, bad timestamps
    bad_ids: int = 0        # ids dropped (not an int in 1..2**62) and over-long names
    lost_rotations: int = 0  # the file read last time was gone (rotated over twice): lines lost
    cursor: dict[str, Any] | None = None


def _cursor_key(path: Path) -> str:
    return "recall_log:" + str(path)


def read_recall_events(db: Any, path: Path) -> RecallBatch:
    """The one reader of the recall log: the lines written since the cursor stored in this agent
    db, across rotation. Rotation is followed by file identity (dev, inode): the file read last
    time is looked up among `<log>.N` siblings and finished from the stored offset, then every newer
    rotated file and the live file are read from the start. A partial last line of the live file
    waits for the next read; `.lock` and non-numeric siblings are ignored. Never raises for bad
    content (counted in the batch); does not write (see `commit_recall_cursor`)."""
    conn = connection(db)
    path = Path(path)
    try:
        state = json.loads(get_meta(conn, _cursor_key(path)) or "{}")
        if not isinstance(state, dict):
            state = {}
    except ValueError:
        state = {}
    batch = RecallBatch(path)
    ident = _identity(path)
    try:
        old_ident = tuple(int(x) for x in state["ident"]) if state.get("ident") else None
        offset = max(0, int(state.get("offset", 0)))
        head_len = max(0, int(state.get("head_len", 0)))
        head = state.get("head")
    except (TypeError, ValueError, OverflowError):
        old_ident, offset, head_len, head = None, 0, 0, None
    siblings = _rotated_siblings(path)

    def same_file(p: Path, ident_p: tuple[int, int] | None) -> bool:
        # identity AND first bytes: an inode freed by a rotation can be reused by the next file
        return ident_p is not None and ident_p == old_ident and (not head or _head(p, head_len) == head)

    if old_ident is not None and ident == old_ident and not same_file(path, ident):
        ident_for_match = None      # the live file reused the inode: it is a new file
    else:
        ident_for_match = ident
    sources: list[tuple[Path, int, bool]] = []      # (file, start, is_live)
    if old_ident is None:
        sources += [(p, 0, False) for p in siblings]
    elif old_ident != ident_for_match:
        matches = [k for k, p in enumerate(siblings) if same_file(p, _identity(p))]
        if matches:
            k = matches[0]
            sources.append((siblings[k], offset, False))
            sources += [(p, 0, False) for p in siblings[k + 1:]]
        else:
            batch.lost_rotations += 1
            sources += [(p, 0, False) for p in siblings]
        offset = 0
    if ident is not None:
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        same = old_ident is not None and old_ident == ident_for_match
        if same and size < offset:
            offset = 0  # truncated in place
        sources.append((path, offset if same else 0, True))
    final: tuple[Path, tuple[int, int], int] | None = None
    for src, start, live in sources:
        try:
            with open(src, "rb") as fh:
                fh.seek(start)
                data = fh.read()
        except OSError:
            batch.bad += 1
            continue
        end = data.rfind(b"\n") + 1 if live else len(data)   # a partial live line waits
        for raw in data[:end].splitlines():
            if raw.strip():
                _parse_line(raw, batch)
        src_ident = _identity(src)
        if src_ident is not None:
            final = (src, src_ident, start + end)
    if final is not None:
        n = min(HEAD_BYTES, final[2])
        batch.cursor = {"ident": list(final[1]), "offset": final[2], "head_len": n, "head": _head(final[0], n)}
    return batch


def _parse_line(raw: bytes, batch: RecallBatch) -> None:
    batch.lines += 1
    try:
        rec = json.loads(raw)
    except (ValueError, RecursionError):
        batch.bad += 1
        return
    if not isinstance(rec, dict):
        batch.bad += 1
        return
    at = rec.get("at")
    if at is not None:
        try:
            if not isinstance(at, str):
                raise ValueError("timestamp is not a string")
            utc_iso(at)
        except (ValueError, OverflowError):
            batch.bad += 1
            return
    ev = dict(rec)
    for key in ("ids", "episodes"):
        raw_ids = rec.get(key)
        if raw_ids is None:
            continue
        if not isinstance(raw_ids, list):
            batch.bad_ids += 1
            ev[key] = []
            continue
        good = [v for v in (_valid_id(i) for i in raw_ids) if v is not None]
        batch.bad_ids += len(raw_ids) - len(good)
        ev[key] = good
    names = rec.get("entities")
    if names is not None:
        items = names if isinstance(names, list) else [names]
        good_names = [n for n in items if isinstance(n, str) and 0 < len(n) <= MAX_LOG_NAME]
        batch.bad_ids += len(items) - len(good_names)
        ev["entities"] = good_names
    batch.events.append(ev)


def commit_recall_cursor(db: Any, batch: RecallBatch) -> None:
    """Store where the next read starts (inside the caller's transaction if there is one)."""
    if batch.cursor is not None:
        set_meta(connection(db), _cursor_key(batch.path), json.dumps(batch.cursor))


#: The batch the last fold of each log delivered in this process, for the other consumers of the
#: same consolidation pass (feedback detection, episode reinforcement): see `take_pass_batch`.
_PASS_BATCHES: dict[str, RecallBatch] = {}


def take_pass_batch(path: Path) -> RecallBatch | None:
    """The events the last `fold_recall_log` of `path` read in this process, handed out once (None
    when there was no fold since the last take). This is how one consolidation pass feeds the same
    new lines to the access counts, feedback detection and episode reinforcement: one reader, one
    cursor, each line delivered once."""
    return _PASS_BATCHES.pop(str(Path(path)), None)


def fold_recall_log(db: Any, path: Path, *, now: datetime | str, batch: RecallBatch | None = None) -> dict[str, int]:
    """Fold new lines of the recall log into access counts (reading them with `read_recall_events`
    unless `batch` is given), store the cursor in the same transaction, and keep the batch for
    `take_pass_batch`. Returns counts: lines, recalls (card ids counted), entities, unknown (ids of
    cards no longer there), bad (unreadable lines and invalid ids), revived (faded cards that were
    recalled), lost_rotations. Never raises for bad content."""
    conn = connection(db)
    path = Path(path)
    if batch is None:
        batch = read_recall_events(conn, path)
    counts = {"lines": batch.lines, "recalls": 0, "entities": 0, "unknown": 0,
              "bad": batch.bad + batch.bad_ids, "revived": 0}
    if batch.lost_rotations:
        counts["lost_rotations"] = batch.lost_rotations
    card_hits: dict[int, tuple[int, str]] = {}
    entity_hits: dict[str, int] = {}
    for ev in batch.events:
        at = utc_iso(ev.get("at") or now)
        for cid in ev.get("ids") or []:
            n, last = card_hits.get(cid, (0, ""))
            card_hits[cid] = (n + 1, max(last, at))
        for name in ev.get("entities") or []:
            entity_hits[name] = entity_hits.get(name, 0) + 1
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
        commit_recall_cursor(conn, batch)
    _PASS_BATCHES[str(path)] = batch
    if faded:
        counts["revived"] = len(revive(conn, faded, now=now_s))
    if counts["bad"] or batch.lost_rotations:
        log.warning("recall log %s: %d unreadable line(s) or id(s) skipped, %d rotation(s) lost",
                    path.name, counts["bad"], batch.lost_rotations)
    return counts


def maintain(db: Any, *, now: datetime | str, recall_log: Path | None = None) -> dict[str, int]:
    """What consolidation runs once per agent run: fold the recall log, then fade. Returns counts."""
    out: dict[str, int] = {}
    if recall_log is not None:
        out.update({f"recall_{k}": v for k, v in fold_recall_log(db, recall_log, now=now).items()})
    out["faded"] = len(fade(db, now=now))
    return out


def lifecycle_counts(db: Any) -> dict[str, int]:
    """How many cards are warm, recurring, faded, superseded (and retired, removed, archived when
    there are any)."""
    conn = connection(db)
    out = {"warm": 0, "recurring": 0, "faded": 0, "superseded": 0}
    for sessions, status, n in conn.execute(
            "SELECT sessions >= ?, status, count(*) FROM cards GROUP BY 1, 2", (RECURRING_SESSIONS,)):
        name = strength(RECURRING_SESSIONS if sessions else 1, status)
        out[name] = out.get(name, 0) + n
    return out
