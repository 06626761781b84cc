"""Prompts of the model backends: pure functions from a request to the messages sent.

`INSTRUCTIONS` is the fixed part (cached with `cache_control` by the API writer); the per-call part
lists the candidate passages under labels P1..Pn with the user's request they answer. Passage texts
come from the index and are already redacted; nothing else of the user's is sent.
"""

from __future__ import annotations

from reverie.graph.model import CATEGORIES, VERBS

from ..passages import CONSOLIDATION_MARKER
from .base import MAX_WORDS, WriteRequest

INSTRUCTIONS = f"""You turn excerpts of a coding agent's conversations into memory cards for a FUTURE session of the same agent.
A card states what that future session will need to know: decisions and their reasons, stable facts about the systems and people involved, the user's preferences and rules, recurring patterns, lessons learned, and corrections. Progress reports, narration, plans for the next five minutes and task chatter are NOT memory: write no card for them.

Rules for every card:
- statement: ONE self-contained sentence of at most {MAX_WORDS} words, with the specific names (services, hosts, files, tools, people) spelled exactly as in the passage. Write it as durable knowledge ("auth-service runs on prod-k8s", "Use pnpm, not npm, in this repo"), never as narration ("the user said", "we discussed", "today").
- category: one of {", ".join(CATEGORIES)}.
- importance: 0-4 (4: a rule the agent must never break; 3: a decision, preference or lesson; 2: a useful fact; 1: minor).
- entities: named things only (no generic words like "config", "tests", "the server"), each with a type.
- relations: only with these verbs: {", ".join(VERBS)}; subject and object must be entities of the card; set holds=false when the passage says the relation ended ("moved X off Y", "no longer", "retired"). Leave relations empty rather than guess.
- evidence: the labels (P1, P2, ...) of the passages that support the card; quote: a short verbatim span of one cited passage that supports it.
- Never write a card that is: a fragment or list item; the agent's narration ("Now I'll update ...", "Created X"); a question; a one-off request ("make the button blue"); a transient state ("the build passes now", "the DNS is configured correctly"); or code.
- A user's imperative becomes a rule only when it says so: always, never, don't, prefer, use X not Y, from now on, make sure. A request for the task at hand is no card.
- A sentence mixing an outdated and a current fact: keep the current one only ("Odoo 18 uses list, not tree").
- Good cards: "Proto generation in this repo needs Docker running (make proto uses a container).", "Never edit files under gen/: they are generated.", "The user wants file paths when asking where something is." The docs and config files the agent read (kind file), what the agent wrote into documentation files (kind written: its notes, plans and conventions, which may state the current state of work, not knowledge), the user's answers to the agent's questions (kind answer), sub-agent reports (kind report) and failed commands (kind error) are evidence like any other passage: a failed command's lesson is stated as the right way to do it.
- A user turn that corrects the agent yields a card stating the right way (category correction).
- Never copy a secret, password, token or key value into a card; "[REDACTED:...]" placeholders mean a secret was removed: do not reproduce them.
- Write at most the number of cards you are told, fewer is better, and ZERO cards when nothing qualifies.
Answer only with JSON matching the schema."""


#: The user's turn that opened an exchange is sent whole up to this many characters, once per
#: exchange, before the exchange's passages (the whole exchange rather than isolated paragraphs).
EXCHANGE_TURN_MAX = 1500


def passages_block(request: WriteRequest) -> str:
    """The candidates, exchange by exchange: the user's turn that opened the exchange once (whole
    when it is a candidate itself, else its clipped context), then the exchange's passages, then the
    agent's final answer in it when no candidate holds it (`request.answers`)."""
    lines = []
    shown_exchange = -1
    user_ids = {c.passage.message_id for c in request.candidates if c.passage.kind == "user"}

    def close_exchange() -> None:
        answer = request.answers.get(shown_exchange)
        if answer:
            lines.append("(the agent's final answer in this exchange, context only, not a passage to cite:)")
            lines.append("  " + answer.replace("\n", "\n  "))

    for cand in request.candidates:
        p = cand.passage
        exchange = p.message_id if p.kind == "user" else p.exchange
        if exchange and exchange != shown_exchange:
            close_exchange()
        if p.kind != "user" and p.exchange and p.exchange != shown_exchange:
            shown_exchange = p.exchange
            # the request as context: an agent paragraph's (a file's, a write's or a failed
            # command's context is its path or command, shown with the passage below)
            if p.exchange not in user_ids and p.context and p.kind in ("assistant", "summary", "report"):
                lines.append(f"(exchange opened by the user's turn: {p.context[:EXCHANGE_TURN_MAX]})")
        elif p.kind == "user":
            shown_exchange = p.message_id
        head = f"[{cand.label}] {p.kind}"
        if p.timestamp:
            head += f" at {p.timestamp[:16]}"
        lines.append(head)
        if p.kind == "file" and p.context:
            lines.append(f"  (a file the agent read: {p.context})")
        elif p.kind == "written" and p.context:
            lines.append(f"  (what the agent wrote into {p.context})")
        elif p.kind == "error" and p.context:
            lines.append(f"  (a command that failed: {p.context})")
        if p.kind == "user" and cand.judgement.correction and p.previous_reply:
            lines.append(f"  (the agent had just said: {p.previous_reply})")
        lines.append("  " + p.text.replace("\n", "\n  "))
    close_exchange()
    return "\n".join(lines)


def user_prompt(request: WriteRequest) -> str:
    known = sorted(request.known_entities)[:60]
    known_line = f"Names this agent already knows (reuse their spelling): {', '.join(known)}\n" if known else ""
    return (
        f"Agent: {request.agent}\n{known_line}"
        f"Write at most {request.max_cards} card(s) from these {len(request.candidates)} passage(s):\n\n"
        f"{passages_block(request)}"
    )


def api_messages(request: WriteRequest) -> tuple[list[dict], list[dict]]:
    """(system blocks, messages) for the Messages API; the fixed instructions carry cache_control."""
    system = [{"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]
    messages = [{"role": "user", "content": user_prompt(request)}]
    return system, messages


def cli_prompt(request: WriteRequest) -> str:
    """The prompt (stdin) for `claude -p`: the consolidation marker line (so a child transcript that
    was persisted anyway is recognisable and skipped by consolidation), then the per-call part. The
    fixed instructions go in `--system-prompt` and the schema in `--json-schema` (claude_cli.argv),
    so nothing is sent twice."""
    return f"{CONSOLIDATION_MARKER}\n{user_prompt(request)}"
