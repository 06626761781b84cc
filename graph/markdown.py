"""Markdown memory files: export an agent's memory for people to read, review and correct (in git),
and apply their edits back.

Files in DIR (docs/trust.md shows a sample):
- `semantic.md`: active cards grouped by category, one line each
  `- [said date] [confidence] statement <!-- c:ID -->`;
- `episodic.md`: active episodes, `### [salience: x] [confidence: y] [date] [session] <!-- e:ID -->`
  followed by the summary;
- `archive.md`: superseded, faded, retired and archived cards and pruned or removed episodes (read
  only: to restore a card, move its line into semantic.md);
- each file ends with a `## Maintenance Log` of what maintenance and consolidation removed, archived,
  pruned, reinforced or otherwise changed, and why (generated; ignored on import);
- `.reverie-export.json`: the manifest of what was exported (ids and the exact rendered values), so
  that import applies only what a person changed, whatever consolidation did in between.

Import rules (semantic.md):
- a line with a marker whose statement changed: a new card (confidence 1.0, or the line's confidence
  when the person changed that too) supersedes the old one and inherits its entities and sessions;
- only the confidence changed: the card's confidence (and its restore ceiling) is set to it;
- a line moved under another category heading: the card's category changes;
- an exported line that is gone: its card is retired (status 'retired', listed in archive.md);
- a line without a marker under a category heading: a new card with confidence 1.0 (or the
  confidence written in brackets); an exact duplicate of an active card is skipped and counted,
  and so is a statement that was forgotten (`reverie forget`: never learned again, whether the line
  comes from an old export, its marker pointing at a card that is gone, or was typed again);
- a marker of a card that is not active (moved from archive.md): the card is restored.
Every change is logged in the maintenance log. Texts a person wrote pass through `redact` before
they are stored. Import ends by exporting again (new lines get their markers, the manifest is
renewed), so importing twice changes nothing the second time. Without edits, import changes nothing.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from reverie.graph.episodes import record_episode
from reverie.graph.files import write_text_atomic
from reverie.graph.forget import is_forgotten
from reverie.graph.model import CATEGORIES
from reverie.graph.text import normalize_statement
from reverie.graph.trust import (
    _conn,
    _now,
    copy_links,
    insert_card,
    iso,
    log_maintenance,
    parse_ts,
    set_card_status,
    supersede,
    transaction,
)

log = logging.getLogger(__name__)

#: Longest session name taken from episodic.md (ids are far shorter).
MAX_SESSION_CHARS = 128

SEMANTIC, EPISODIC, ARCHIVE, MANIFEST = "semantic.md", "episodic.md", "archive.md", ".reverie-export.json"
MAINTENANCE_HEADING = "Maintenance Log"
HUMAN_CONFIDENCE = 1.0
HUMAN_WRITER = "human"
#: Newest maintenance entries shown in semantic.md / episodic.md (archive.md shows them all).
LOG_TAIL = 200

_MARK_CARD = re.compile(r"\s*<!--\s*c:(\d+)\s*-->\s*$")
_MARK_EPISODE = re.compile(r"\s*<!--\s*e:(\d+)\s*-->\s*$")
_LINE = re.compile(r"^\s*[-*+]\s+(?P<rest>.*)$")
_DATE = re.compile(r"^\[(\d{4}-\d{2}-\d{2})?\]\s*")
_CONF = re.compile(r"^\[(\d(?:\.\d+)?)\]\s*")
_EP_HEAD = re.compile(
    r"^###\s+\[salience:\s*(?P<sal>[0-9.]+)\]\s*\[confidence:\s*(?P<conf>[0-9.]+)\]\s*"
    r"\[(?P<date>[^\]]*)\]\s*\[(?P<session>[^\]]*)\]\s*$"
)


class MarkdownError(ValueError):
    """The directory cannot be imported (no manifest, another agent's export, ...); says the fix."""


# --- rendering --------------------------------------------------------------------------------------

def clean_text(text: str) -> str:
    """One line: whitespace collapsed, comment openers neutralized (so a marker stays unambiguous)."""
    return " ".join((text or "").split()).replace("<!--", "<!-").replace("-->", "->")


def _conf(value: float) -> str:
    return f"{float(value):.2f}"


def _date(value: Any) -> str:
    dt = parse_ts(value)
    return dt.date().isoformat() if dt else ""


def card_line(card: dict[str, Any]) -> str:
    return f"- [{_date(card['said_at'])}] [{_conf(card['confidence'])}] {clean_text(card['statement'])} <!-- c:{card['id']} -->"


def episode_heading(ep: dict[str, Any]) -> str:
    return (f"### [salience: {ep['salience']:.2f}] [confidence: {ep['confidence']:.2f}] "
            f"[{_date(ep['started_at'])}] [{clean_text(ep['session']).replace(']', ')')}] <!-- e:{ep['id']} -->")


def _rows(conn, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _heading(category: str) -> str:
    return f"## {category}"


def _section_category(title: str) -> str | None:
    t = title.strip().lower()
    for c in CATEGORIES:
        if t in (c, c + "s"):
            return c
    return None


def _log_lines(conn, target: str | None, limit: int | None) -> list[str]:
    where = "WHERE m.target = ?" if target else ""
    params: tuple = (target,) if target else ()
    sql = f"""SELECT m.at, m.target, m.target_id, m.action, m.reason, m.source, m.related_id,
                     CASE m.target WHEN 'card' THEN (SELECT statement FROM cards WHERE id = m.target_id)
                                   ELSE (SELECT summary FROM episodes WHERE id = m.target_id) END AS text
              FROM maintenance_log m {where} ORDER BY m.id DESC"""
    if limit:
        sql += f" LIMIT {int(limit)}"
    out = []
    for r in _rows(conn, sql, params):
        tag = ("c:" if r["target"] == "card" else "e:") + str(r["target_id"])
        rel = f" -> c:{r['related_id']}" if r["related_id"] else ""
        words = clean_text(r["text"] or "").split()
        quote = (' "' + " ".join(words[:12]) + ("..." if len(words) > 12 else "") + '"') if words else " (forgotten)"
        out.append(f"- {r['at'][:16].replace('T', ' ')} {tag} {r['action']}{rel} ({r['source']}): {r['reason']}.{quote}")
    return out


def _maintenance_section(conn, target: str | None, limit: int | None) -> list[str]:
    lines = ["", f"## {MAINTENANCE_HEADING}", "",
             "<!-- generated: what maintenance and consolidation removed, archived, pruned or reinforced, and why; "
             "edits here are ignored -->", ""]
    entries = _log_lines(conn, target, limit)
    lines += entries or ["- (nothing yet)"]
    return lines


def export_markdown(db: Any, directory: str | Path, *, agent: str, now: datetime | None = None) -> dict[str, Any]:
    """Write semantic.md, episodic.md, archive.md and the manifest into `directory` (created).
    Deterministic for a given db state apart from the export time in the headers. Returns counts."""
    conn = _conn(db)
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    at = iso(_now(now))
    cards = _rows(conn, "SELECT id, statement, category, confidence, said_at, status, superseded_by, pinned "
                        "FROM cards ORDER BY id")
    active = [c for c in cards if c["status"] == "active"]
    archived = [c for c in cards if c["status"] != "active"]
    episodes = _rows(conn, "SELECT id, session, started_at, summary, salience, confidence, status FROM episodes "
                           "ORDER BY started_at DESC, id DESC")
    live_eps = [e for e in episodes if e["status"] == "active"]
    old_eps = [e for e in episodes if e["status"] not in ("active", "empty")]
    intro = ("> Edit a line to correct a memory, delete it to retire it, add `- statement` under a category to "
             "teach a new one, then run `reverie import --markdown DIR`. Keep the `<!-- c:N -->` markers: they tie "
             "lines to memories.")

    # semantic.md
    cats = list(CATEGORIES) + sorted({c["category"] for c in active} - set(CATEGORIES))
    lines = [f"# Semantic memory: {agent}", "", f"<!-- reverie:semantic agent={agent} exported={at} -->", "", intro]
    for cat in cats:
        lines += ["", _heading(cat), ""]
        lines += [card_line(c) for c in active if c["category"] == cat]
    lines += _maintenance_section(conn, "card", LOG_TAIL)
    write_text_atomic(out_dir / SEMANTIC, "\n".join(lines) + "\n")

    # episodic.md
    lines = [f"# Episodic memory: {agent}", "", f"<!-- reverie:episodic agent={agent} exported={at} -->", "",
             "> One summary per recent session, most recent first. Edit a summary to correct it, delete an entry "
             "(heading and text) to remove it, then run `reverie import --markdown DIR`."]
    for e in live_eps:
        lines += ["", episode_heading(e), "", clean_text(e["summary"])]
    lines += _maintenance_section(conn, "episode", LOG_TAIL)
    write_text_atomic(out_dir / EPISODIC, "\n".join(lines) + "\n")

    # archive.md
    lines = [f"# Archive: {agent}", "", f"<!-- reverie:archive agent={agent} exported={at} -->", "",
             "> Memories no longer recalled, kept as a record. Read only: to restore a memory, move its line into "
             "semantic.md (keep the marker) and import."]
    groups = [("Superseded", "superseded"), ("Retired (line deleted by a person)", "retired"),
              ("Removed by maintenance", "removed"), ("Archived by maintenance", "archived"),
              ("Faded (seen once, never recalled)", "faded")]
    known = {g[1] for g in groups}
    others = sorted({c["status"] for c in archived} - known)
    for title, status in groups + [(s.capitalize(), s) for s in others]:
        rows = [c for c in archived if c["status"] == status]
        lines += ["", f"## {title}", ""]
        for c in rows:
            extra = f" (superseded by c:{c['superseded_by']})" if c["superseded_by"] else ""
            lines.append(f"- [{_date(c['said_at'])}] [{_conf(c['confidence'])}] [{c['category']}] "
                         f"{clean_text(c['statement'])}{extra} <!-- c:{c['id']} -->")
    lines += ["", "## Pruned and removed episodes", ""]
    for e in old_eps:
        lines += [f"- [{_date(e['started_at'])}] [salience: {e['salience']:.2f}] [confidence: {e['confidence']:.2f}] "
                  f"[{e['status']}] [{clean_text(e['session'])}] {clean_text(e['summary'])} <!-- e:{e['id']} -->"]
    lines += _maintenance_section(conn, None, None)
    write_text_atomic(out_dir / ARCHIVE, "\n".join(lines) + "\n")

    manifest = {
        "version": 1, "agent": agent, "exported_at": at,
        "cards": {str(c["id"]): {"category": c["category"], "confidence": _conf(c["confidence"]),
                                 "statement": clean_text(c["statement"])} for c in active},
        "episodes": {str(e["id"]): {"salience": f"{e['salience']:.2f}", "confidence": f"{e['confidence']:.2f}",
                                    "summary": clean_text(e["summary"])} for e in live_eps},
    }
    write_text_atomic(out_dir / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return {"directory": str(out_dir), "cards": len(active), "archived_cards": len(archived),
            "episodes": len(live_eps), "archived_episodes": len(old_eps)}


# --- parsing ----------------------------------------------------------------------------------------

@dataclass
class CardLine:
    lineno: int
    category: str | None       # None: under no known category heading
    card_id: int | None
    confidence: str | None     # as written, "0.90"
    statement: str


@dataclass
class EpisodeEntry:
    lineno: int
    episode_id: int | None
    salience: str
    confidence: str
    date: str
    session: str
    summary: str


def parse_semantic(text: str) -> tuple[list[CardLine], list[int]]:
    """Card lines of semantic.md (the Maintenance Log and non-list lines skipped); returns
    (lines, line numbers of list items that could not be read)."""
    out: list[CardLine] = []
    bad: list[int] = []
    category: str | None = None
    in_log = False
    in_comment = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if in_comment:
            in_comment = "-->" not in line
            continue
        if line.lstrip().startswith("<!--") and "-->" not in line:
            in_comment = True
            continue
        if line.startswith("## "):
            title = line[3:].strip()
            in_log = title.lower() == MAINTENANCE_HEADING.lower()
            category = None if in_log else _section_category(title)
            continue
        if line.startswith("# ") or in_log:
            continue
        m = _LINE.match(line)
        if not m:
            continue
        rest = m.group("rest")
        card_id = None
        mk = _MARK_CARD.search(rest)
        if mk:
            card_id = int(mk.group(1))
            rest = rest[: mk.start()]
        dm = _DATE.match(rest)
        if dm:
            rest = rest[dm.end():]
        cm = _CONF.match(rest)
        conf = None
        if cm:
            conf = cm.group(1)
            rest = rest[cm.end():]
        statement = " ".join(rest.split())
        if not statement:
            if card_id is not None or rest.strip():
                bad.append(n)
            continue
        out.append(CardLine(n, category, card_id, conf, statement))
    return out, bad


def parse_episodic(text: str) -> tuple[list[EpisodeEntry], list[int]]:
    """Entries of episodic.md; returns (entries, line numbers of unreadable `###` headings)."""
    out: list[EpisodeEntry] = []
    bad: list[int] = []
    current: EpisodeEntry | None = None
    body: list[str] = []
    in_log = False

    def close() -> None:
        if current is not None:
            current.summary = " ".join(" ".join(body).split())
            out.append(current)

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if line.startswith("## ") or line.startswith("# "):
            close()
            current, body = None, []
            in_log = line.startswith("## ") and line[3:].strip().lower() == MAINTENANCE_HEADING.lower()
            continue
        if in_log:
            continue
        if line.startswith("### "):
            close()
            current, body = None, []
            eid = None
            mk = _MARK_EPISODE.search(line)
            if mk:
                eid = int(mk.group(1))
                line = line[: mk.start()]
            m = _EP_HEAD.match(line.strip())
            if not m:
                bad.append(n)
                continue
            current = EpisodeEntry(n, eid, m.group("sal"), m.group("conf"), m.group("date").strip(),
                                   m.group("session").strip(), "")
            continue
        if current is not None and line.strip() and not line.lstrip().startswith(">"):
            body.append(line.strip())
    close()
    return out, bad


# --- import -----------------------------------------------------------------------------------------

def _read_manifest(directory: Path, agent: str) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MarkdownError(f"{directory} has no {MANIFEST}: run `reverie export --markdown {directory}` first, "
                            "edit the files, then import them") from None
    except (OSError, ValueError) as exc:
        raise MarkdownError(f"{path} is unreadable ({exc.__class__.__name__}): export again with "
                            f"`reverie export --markdown {directory}`") from None
    if not isinstance(data, dict) or data.get("version") != 1:
        raise MarkdownError(f"{path} is not a reverie export manifest: export again")
    if data.get("agent") != agent:
        raise MarkdownError(f"{directory} holds an export of agent {data.get('agent')!r}, not {agent!r}: "
                            f"pass `--agent {data.get('agent')}` or export this agent into another directory")
    return data


def _float(value: str | None, default: float) -> float:
    try:
        return max(0.0, min(1.0, float(value))) if value is not None else default
    except ValueError:
        return default


def import_markdown(db: Any, directory: str | Path, *, agent: str, redact: Callable[[str], str],
                    now: datetime | None = None, reexport: bool = True) -> dict[str, Any]:
    """Apply a person's edits of semantic.md and episodic.md (module docstring). `redact` turns any
    text into its redacted form before it is stored. One transaction; re-exports afterwards when
    `reexport`. Returns counts per kind of change, plus "unreadable" line numbers per file."""
    conn = _conn(db)
    directory = Path(directory)
    manifest = _read_manifest(directory, agent)
    current = _now(now)
    at = iso(current)
    counts: dict[str, Any] = {
        "unchanged": 0, "edited": 0, "retired": 0, "added": 0, "restored": 0, "recategorized": 0,
        "confidence_changed": 0, "duplicates": 0, "forgotten": 0, "uncategorized": 0, "redacted": 0,
        "episodes_unchanged": 0, "episodes_edited": 0, "episodes_removed": 0, "episodes_added": 0,
        "unreadable": {},
    }
    redacted_count = 0

    def scrub(text: str) -> str:
        nonlocal redacted_count
        out = redact(text)
        if out != text:
            redacted_count += 1
        return out

    sem_path, epi_path = directory / SEMANTIC, directory / EPISODIC
    texts = {}
    for path in (sem_path, epi_path):
        if path.exists():
            try:
                texts[path.name] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise MarkdownError(f"{path.name} is not UTF-8 (byte {exc.start}): save it as UTF-8 and import "
                                    "again; nothing was changed.") from None
    with transaction(conn):
        if sem_path.exists():
            lines, bad = parse_semantic(texts[SEMANTIC])
            if bad:
                counts["unreadable"][SEMANTIC] = bad
            _apply_semantic(conn, lines, manifest.get("cards", {}), counts, scrub, at)
        if epi_path.exists():
            entries, bad = parse_episodic(texts[EPISODIC])
            if bad:
                counts["unreadable"][EPISODIC] = bad
            _apply_episodic(conn, entries, manifest.get("episodes", {}), counts, scrub, at, current)
    counts["redacted"] = redacted_count
    changed = any(v for k, v in counts.items() if k not in ("unchanged", "episodes_unchanged", "unreadable", "redacted"))
    if reexport and changed:
        export_markdown(conn, directory, agent=agent, now=current)
    counts["changed"] = changed
    log.info("markdown import for %s: %s", agent, {k: v for k, v in counts.items() if k != "unreadable"})
    return counts


def _card_state(conn, card_id: int) -> dict[str, Any] | None:
    rows = _rows(conn, "SELECT id, statement, category, confidence, original_confidence, status, pinned "
                       "FROM cards WHERE id = ?", (card_id,))
    return rows[0] if rows else None


def _apply_semantic(conn, lines: list[CardLine], exported: dict[str, Any], counts: dict[str, Any],
                    scrub: Callable[[str], str], at: str) -> None:
    by_id: dict[int, list[CardLine]] = {}
    new_lines: list[CardLine] = []
    for ln in lines:
        if ln.card_id is None:
            new_lines.append(ln)
        else:
            by_id.setdefault(ln.card_id, []).append(ln)
    for cid, group in sorted(by_id.items()):
        spec = exported.get(str(cid))
        card = _card_state(conn, cid)
        if card is None:                         # forgotten since: the text is a new card now
            new_lines.extend(group)
            continue
        if spec is None:                         # not exported as active: a restore (moved from archive.md)
            first, rest = group[0], group[1:]
            new_lines.extend(rest)
            if card["status"] != "active":
                value = _float(first.confidence, HUMAN_CONFIDENCE)
                set_card_status(conn, cid, "active", at=at)
                conn.execute("UPDATE cards SET superseded_by = NULL, confidence = ?, "
                             "original_confidence = max(original_confidence, ?) WHERE id = ?", (value, value, cid))
                conn.execute("UPDATE card_trust SET contradicted = 0, updated_at = ? WHERE card_id = ?", (at, cid))
                log_maintenance(conn, target="card", target_id=cid, action="restored", source="import", at=at,
                                reason=f"moved back into semantic.md (was {card['status']})")
                counts["restored"] += 1
            else:
                counts["unchanged"] += 1
            continue
        unchanged = [ln for ln in group if ln.statement == spec["statement"]]
        primary = unchanged[0] if unchanged else group[0]
        new_lines.extend(ln for ln in group if ln is not primary)
        if primary.statement != spec["statement"]:
            conf_changed = primary.confidence is not None and primary.confidence != spec["confidence"]
            conf = _float(primary.confidence, HUMAN_CONFIDENCE) if conf_changed else HUMAN_CONFIDENCE
            category = primary.category or card["category"]
            new_id = insert_card(conn, statement=scrub(primary.statement), category=category, confidence=conf,
                                 now=at, writer=HUMAN_WRITER)
            copy_links(conn, cid, new_id)
            n_sessions = conn.execute("SELECT count(*) FROM card_sessions WHERE card_id = ?", (new_id,)).fetchone()[0]
            conn.execute("UPDATE cards SET sessions = ?, pinned = ? WHERE id = ?",
                         (max(1, n_sessions), card["pinned"], new_id))
            if card["status"] == "active":
                supersede(conn, cid, new_id, at=at, contradicted=False)
            log_maintenance(conn, target="card", target_id=cid, action="edited", source="import", at=at,
                            reason="line edited in semantic.md: replaced by a new card", related_id=new_id)
            counts["edited"] += 1
            continue
        did = False
        if primary.category and primary.category != spec["category"] and card["category"] != primary.category:
            conn.execute("UPDATE cards SET category = ?, updated_at = ? WHERE id = ?", (primary.category, at, cid))
            log_maintenance(conn, target="card", target_id=cid, action="recategorized", source="import", at=at,
                            reason=f"moved from {card['category']} to {primary.category} in semantic.md")
            counts["recategorized"] += 1
            did = True
        if primary.confidence is not None and primary.confidence != spec["confidence"]:
            value = _float(primary.confidence, card["confidence"])
            conn.execute("UPDATE cards SET confidence = ?, original_confidence = ?, updated_at = ? WHERE id = ?",
                         (value, value, at, cid))
            log_maintenance(conn, target="card", target_id=cid, action="confidence", source="import", at=at,
                            reason=f"confidence set to {value:.2f} in semantic.md (was {card['confidence']:.2f})")
            counts["confidence_changed"] += 1
            did = True
        if not did:
            counts["unchanged"] += 1
    present = set(by_id)
    for key in sorted(exported, key=int):
        cid = int(key)
        if cid in present:
            continue
        card = _card_state(conn, cid)
        if card is None or card["status"] != "active":
            continue                             # forgotten or changed by consolidation since the export
        set_card_status(conn, cid, "retired", at=at)
        log_maintenance(conn, target="card", target_id=cid, action="retired", source="import", at=at,
                        reason="line deleted from semantic.md")
        counts["retired"] += 1
    active_norms = {r[0] for r in conn.execute("SELECT norm FROM cards WHERE status = 'active'")}
    for ln in new_lines:
        text = scrub(ln.statement)
        norm = normalize_statement(text)
        if not norm:
            continue
        if norm in active_norms:
            counts["duplicates"] += 1
            continue
        if is_forgotten(conn, norm):
            # `reverie forget` means never learn it again: a line of an old export (or retyped)
            # does not bring it back; counted so the person sees it
            counts["forgotten"] += 1
            continue
        category = ln.category
        if category is None:
            category = "fact"
            counts["uncategorized"] += 1
        new_id = insert_card(conn, statement=text, category=category,
                             confidence=_float(ln.confidence, HUMAN_CONFIDENCE), now=at, writer=HUMAN_WRITER)
        active_norms.add(norm)
        log_maintenance(conn, target="card", target_id=new_id, action="added", source="import", at=at,
                        reason=f"new line in semantic.md (line {ln.lineno})")
        counts["added"] += 1


def _apply_episodic(conn, entries: list[EpisodeEntry], exported: dict[str, Any], counts: dict[str, Any],
                    scrub: Callable[[str], str], at: str, now: datetime) -> None:
    seen: set[int] = set()
    for e in entries:
        spec = exported.get(str(e.episode_id)) if e.episode_id is not None else None
        row = conn.execute("SELECT id, status FROM episodes WHERE id = ?", (e.episode_id,)).fetchone() \
            if e.episode_id is not None else None
        if spec is None or row is None or e.episode_id in seen:
            if not e.summary:
                continue
            # a person's text like any other: scrubbed, and an over-long "session" is not an id
            session = " ".join(scrub(e.session or "").split())[:MAX_SESSION_CHARS] or f"manual-{at[:10]}"
            exists = conn.execute("SELECT id FROM episodes WHERE session = ?", (session,)).fetchone()
            if exists:
                session = f"{session}-manual-{at}"
            eid = record_episode(conn, session, scrub(e.date or "") or at, scrub(e.summary), now=now,
                                 confidence=_float(e.confidence, HUMAN_CONFIDENCE), writer=HUMAN_WRITER)
            conn.execute("UPDATE episodes SET salience = ? WHERE id = ?", (_sal(e.salience, 1.0), eid))
            log_maintenance(conn, target="episode", target_id=eid, action="added", source="import", at=at,
                            reason="new entry in episodic.md")
            counts["episodes_added"] += 1
            continue
        seen.add(e.episode_id)
        changes = []
        if e.summary != spec["summary"] and e.summary:
            conn.execute("UPDATE episodes SET summary = ?, writer = ?, updated_at = ? WHERE id = ?",
                         (scrub(e.summary), HUMAN_WRITER, at, e.episode_id))
            changes.append("summary edited")
        if e.salience != spec["salience"]:
            conn.execute("UPDATE episodes SET salience = ?, updated_at = ? WHERE id = ?",
                         (_sal(e.salience, 1.0), at, e.episode_id))
            changes.append(f"salience set to {_sal(e.salience, 1.0):.2f}")
        if e.confidence != spec["confidence"]:
            value = _float(e.confidence, 1.0)
            conn.execute("UPDATE episodes SET confidence = ?, original_confidence = ?, updated_at = ? WHERE id = ?",
                         (value, value, at, e.episode_id))
            changes.append(f"confidence set to {value:.2f}")
        if changes:
            log_maintenance(conn, target="episode", target_id=e.episode_id, action="edited", source="import", at=at,
                            reason="; ".join(changes) + " in episodic.md")
            counts["episodes_edited"] += 1
        else:
            counts["episodes_unchanged"] += 1
    for key in sorted(exported, key=int):
        eid = int(key)
        if eid in seen:
            continue
        row = conn.execute("SELECT status FROM episodes WHERE id = ?", (eid,)).fetchone()
        if row is None or row[0] != "active":
            continue
        conn.execute("UPDATE episodes SET status = 'removed', updated_at = ? WHERE id = ?", (at, eid))
        log_maintenance(conn, target="episode", target_id=eid, action="removed", source="import", at=at,
                        reason="entry deleted from episodic.md")
        counts["episodes_removed"] += 1


def _sal(value: str | None, default: float) -> float:
    try:
        return max(0.0, min(2.0, float(value))) if value is not None else default
    except ValueError:
        return default
