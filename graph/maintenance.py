"""Maintenance: list the cards and episodes below the trust thresholds with a proposed action, and
apply the proposals on request, logging each one. Nothing is hard-deleted: "remove" and "archive"
change a status (the entry leaves recall and semantic.md / episodic.md and is listed in archive.md).

Which entries are listed (docs/trust.md):
- active cards with confidence < 0.2, or flagged for re-validation (180 days without a signal);
- active episodes with salience < 0.1 or confidence < 0.2, and those beyond the 20-episode cap.

Proposed action for a card, first rule that applies:
1. keep    pinned (a person vouched for it);
2. keep    confirmed: maturity established or proven and decayed helpful > decayed harmful;
3. keep    only silent (confidence still >= KEEP_SILENT_CONFIDENCE): nothing says it went wrong;
4. archive once strong: seen in >= 2 sessions, recalled >= 3 times, created with confidence >= 0.9,
           or ever reported helpful;
5. remove  low signal: everything else.
An episode: archive when it was ever recalled, else remove.

Applying: remove -> status 'removed'; archive -> status 'archived'; keep -> "reinforced": confidence
back to its original value, flags cleared, `validated_at` set (a signal for the silence rule).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from reverie.graph.episodes import MAX_EPISODES, PRUNE_CONFIDENCE, PRUNE_SALIENCE
from reverie.graph.trust import (
    MAINTENANCE_BELOW,
    _conn,
    _now,
    iso,
    log_maintenance,
    set_card_status,
    transaction,
    trust_for_cards,
)

log = logging.getLogger(__name__)

KEEP_SILENT_CONFIDENCE = 0.5
ONCE_STRONG_SESSIONS = 2
ONCE_STRONG_ACCESS = 3
ONCE_STRONG_CONFIDENCE = 0.9


def _clip(text: str, n: int = 20) -> str:
    words = (text or "").split()
    return " ".join(words[:n]) + ("..." if len(words) > n else "")


def propose_card(card: dict[str, Any], *, maturity: str, helpful: float, harmful: float,
                 helpful_count: int) -> tuple[str, str]:
    """(action, reason) for one listed card; see the module docstring."""
    conf = float(card["confidence"])
    if card["pinned"]:
        return "keep", "pinned"
    if maturity in ("established", "proven") and helpful > harmful:
        return "keep", f"confirmed by feedback ({maturity}, helpful {helpful:.2f} > harmful {harmful:.2f})"
    if conf >= KEEP_SILENT_CONFIDENCE:
        return "keep", f"silent but confidence {conf:.2f} >= {KEEP_SILENT_CONFIDENCE:g}: nothing says it went wrong"
    strong = []
    if card["sessions"] >= ONCE_STRONG_SESSIONS:
        strong.append(f"seen in {card['sessions']} sessions")
    if card["access_count"] >= ONCE_STRONG_ACCESS:
        strong.append(f"recalled {card['access_count']} times")
    if card["original_confidence"] >= ONCE_STRONG_CONFIDENCE:
        strong.append(f"learned with confidence {card['original_confidence']:.2f}")
    if helpful_count > 0:
        strong.append(f"reported helpful {helpful_count} times")
    why = f"confidence {conf:.2f}" + (f" < {MAINTENANCE_BELOW:g}" if conf < MAINTENANCE_BELOW else "")
    if strong:
        return "archive", f"{why}; once strong: " + ", ".join(strong)
    return "remove", f"{why}; low signal: one session, rarely or never recalled, no helpful feedback"


def plan(db: Any, *, now: datetime | None = None, half_life_days: float = 90.0) -> list[dict[str, Any]]:
    """The listing: one dict per entry {"target", "id", "text", "category"|"session", "confidence",
    "salience"?, "sessions"?, "maturity"?, "flags", "action", "reason"}; cards first (by id), then
    episodes (oldest first). Read-only."""
    conn = _conn(db)
    current = _now(now)
    cur = conn.execute(
        """SELECT c.id, c.statement, c.category, c.confidence, c.original_confidence, c.sessions, c.access_count,
                  c.pinned, coalesce(t.revalidate, 0), coalesce(t.needs_maintenance, 0)
           FROM cards c LEFT JOIN card_trust t ON t.card_id = c.id
           WHERE c.status = 'active' AND (c.confidence < ? OR t.revalidate = 1)
           ORDER BY c.id""", (MAINTENANCE_BELOW,))
    names = [d[0] for d in cur.description]
    cards = [dict(zip(names[:8] + ["revalidate", "needs_maintenance"], r)) for r in cur.fetchall()]
    info = trust_for_cards(conn, [c["id"] for c in cards], now=current, half_life_days=half_life_days)
    counts = {cid: hc for cid, hc in conn.execute(
        "SELECT card_id, count(*) FROM feedback WHERE kind = 'helpful' GROUP BY card_id")} if cards else {}
    out: list[dict[str, Any]] = []
    for c in cards:
        t = info.get(c["id"])
        maturity = t.maturity if t else "candidate"
        action, reason = propose_card(c, maturity=maturity, helpful=t.helpful if t else 0.0,
                                      harmful=t.harmful if t else 0.0, helpful_count=counts.get(c["id"], 0))
        flags = [f for f in ("revalidate", "needs_maintenance") if c[f]]
        if c["confidence"] < MAINTENANCE_BELOW and "needs_maintenance" not in flags:
            flags.append("needs_maintenance")
        out.append({"target": "card", "id": c["id"], "text": _clip(c["statement"]), "category": c["category"],
                    "confidence": round(c["confidence"], 4), "sessions": c["sessions"], "maturity": maturity,
                    "flags": flags, "action": action, "reason": reason})
    rows = conn.execute(
        """SELECT id, session, summary, salience, confidence, recalled_count, started_at FROM episodes
           WHERE status = 'active' ORDER BY salience DESC, started_at DESC, id DESC""").fetchall()
    over = {r[0] for r in rows[MAX_EPISODES:]}
    eps = []
    for eid, session, summary, sal, conf, recalled, started in rows:
        why = []
        if sal < PRUNE_SALIENCE:
            why.append(f"salience {sal:.3f} < {PRUNE_SALIENCE:g}")
        if conf < PRUNE_CONFIDENCE:
            why.append(f"confidence {conf:.2f} < {PRUNE_CONFIDENCE:g}")
        if eid in over:
            why.append(f"over the {MAX_EPISODES}-episode cap")
        if not why:
            continue
        action = "archive" if recalled else "remove"
        why.append(f"recalled {recalled} times" if recalled else "never recalled")
        eps.append((started or "", {"target": "episode", "id": eid, "text": _clip(summary), "session": session,
                                    "confidence": round(conf, 4), "salience": round(sal, 4), "flags": [],
                                    "action": action, "reason": "; ".join(why)}))
    out.extend(e for _, e in sorted(eps, key=lambda x: (x[0], x[1]["id"])))
    return out


def apply(db: Any, entries: list[dict[str, Any]], *, now: datetime | None = None) -> dict[str, int]:
    """Apply proposals from `plan` (one transaction), logging each. Entries whose target changed
    status since planning are skipped and counted. Returns counts per action."""
    conn = _conn(db)
    at = iso(_now(now))
    counts = {"removed": 0, "archived": 0, "reinforced": 0, "skipped": 0}
    with transaction(conn):
        for e in entries:
            table = "cards" if e["target"] == "card" else "episodes"
            row = conn.execute(f"SELECT status FROM {table} WHERE id = ?", (e["id"],)).fetchone()
            if row is None or row[0] != "active":
                counts["skipped"] += 1
                continue
            if e["action"] in ("remove", "archive"):
                status = "removed" if e["action"] == "remove" else "archived"
                if table == "cards":
                    set_card_status(conn, e["id"], status, at=at)
                else:
                    conn.execute("UPDATE episodes SET status = ?, updated_at = ? WHERE id = ?", (status, at, e["id"]))
                log_maintenance(conn, target=e["target"], target_id=e["id"], action=status, reason=e["reason"],
                                source="maintenance", at=at)
                counts[status] += 1
            elif e["action"] == "keep" and e["target"] == "card":
                conn.execute("UPDATE cards SET confidence = max(confidence, original_confidence), updated_at = ? "
                             "WHERE id = ?", (at, e["id"]))
                conn.execute("INSERT OR IGNORE INTO card_trust (card_id, updated_at) VALUES (?, ?)", (e["id"], at))
                conn.execute("UPDATE card_trust SET needs_maintenance = 0, revalidate = 0, validated_at = ?, "
                             "updated_at = ? WHERE card_id = ?", (at, at, e["id"]))
                log_maintenance(conn, target="card", target_id=e["id"], action="reinforced", source="maintenance",
                                at=at, reason=e["reason"])
                counts["reinforced"] += 1
            else:
                counts["skipped"] += 1
    log.info("maintenance applied: %s", counts)
    return counts

