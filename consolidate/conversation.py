"""Rebuild a conversation from the index, in order, whether or not its transcript still exists.

Invariants: reads only the index (redacted text; nothing here touches the transcript's content);
message order is the order of each transcript file (message id) with sub-agent streams merged in by
timestamp; `rebuilt` is True exactly when the conversation's main transcript is no longer on disk
(checked now, not from the last index run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ReverieError
from .paths import agent_db_path


class UnknownConversation(ReverieError):
    pass


def _order(messages: list[dict]) -> list[dict]:
    """Stable order: within one source file, file order; across files, by timestamp.

    A message without a timestamp takes the last timestamp seen before it in its own file."""
    last_ts: dict[Any, str] = {}
    keyed = []
    for m in messages:  # already in id order
        stream = m.get("source_path")
        ts = m.get("timestamp") or last_ts.get(stream, "")
        last_ts[stream] = ts
        keyed.append((ts, m["id"], m))
    keyed.sort(key=lambda k: (k[0], k[1]))
    # Keep each file's own order even where its timestamps go backwards.
    by_stream: dict[Any, list[dict]] = {}
    for m in messages:
        by_stream.setdefault(m.get("source_path"), []).append(m)
    cursors = {s: iter(ms) for s, ms in by_stream.items()}
    return [next(cursors[m.get("source_path")]) for _, _, m in keyed]


def rebuild(home: Path, conversation_id: str, agent: str | None = None) -> dict[str, Any]:
    """The conversation `conversation_id` (or a unique prefix of it) of `agent` (default: any agent).

    Returns {id, agent, harness (the coding agent that wrote it: claude-code | codex | gemini), title, cwd, git_branch, version, first, last, message_count, transcripts:
    [{path, kind, on_disk}], transcript_on_disk, rebuilt, messages: [{id, uuid, role, kind,
    timestamp, is_sidechain, subagent, model, blocks: [{idx, type, tool_name, tool_use_id,
    is_error, text, original_size, clipped}]}]}.
    """
    from .index_read import find_conversation, load_conversation

    home = Path(home)
    matches = find_conversation(home, conversation_id, agent)
    if not matches:
        where = f"agent {agent}" if agent else "any agent"
        raise UnknownConversation(
            f"No conversation {conversation_id!r} in {where}. List agents with `reverie agents`, "
            "index new transcripts with `reverie index`.")
    if len(matches) > 1:
        listed = ", ".join(f"{cid} (agent {a})" for a, cid in matches[:5])
        raise UnknownConversation(
            f"{conversation_id!r} matches several conversations: {listed}. Give the full id or `--agent ID`.")
    agent_id, cid = matches[0]
    data = load_conversation(agent_db_path(home, agent_id), cid)
    if data is None:  # pragma: no cover  (deleted between the two reads)
        raise UnknownConversation(f"Conversation {cid!r} disappeared while reading; run the command again.")
    conv = data["conversation"]
    transcripts = [{"path": s["path"], "kind": s["kind"], "on_disk": Path(s["path"]).exists()}
                   for s in data["sources"]]
    main_on_disk = any(t["on_disk"] for t in transcripts if t["kind"] == "main")
    messages = _order(data["messages"])
    title = conv.get("title")
    if not title:
        first_human = next((m for m in messages if m["role"] == "user" and m["kind"] == "message"
                            and not m["is_sidechain"] and m["blocks"]), None)
        if first_human is not None:
            text = " ".join(first_human["blocks"][0]["text"].split())
            title = text[:80] + ("…" if len(text) > 80 else "")
    return {
        "id": cid,
        "agent": agent_id,
        "harness": conv.get("harness") or "claude-code",
        "title": title,
        "cwd": conv.get("cwd"),
        "git_branch": conv.get("git_branch"),
        "version": conv.get("version"),
        "first": conv.get("first_at"),
        "last": conv.get("last_at"),
        "message_count": len(messages),
        "transcripts": transcripts,
        "transcript_on_disk": main_on_disk,
        "rebuilt": not main_on_disk,
        "messages": [{k: m[k] for k in ("id", "uuid", "role", "kind", "timestamp", "is_sidechain", "subagent",
                                        "model", "blocks")} for m in messages],
    }


def render(conv: dict[str, Any], *, max_block_chars: int = 2000) -> str:
    """Human-readable text of a rebuilt conversation."""
    out = [f"Conversation {conv['id']}  (agent {conv['agent']}, {conv.get('harness') or 'claude-code'})"]
    if conv.get("title"):
        out.append(f"Title: {conv['title']}")
    out.append(f"Directory: {conv.get('cwd') or '?'}   branch: {conv.get('git_branch') or '-'}")
    out.append(f"From {conv.get('first') or '?'} to {conv.get('last') or '?'}, {conv['message_count']} messages")
    if conv["rebuilt"]:
        out.append("Rebuilt from the index: the transcript is no longer on disk.")
    else:
        out.append("Transcript still on disk; shown from the index.")
    out.append("")
    for m in conv["messages"]:
        who = m["role"] if m["kind"] in ("message",) else f"{m['role']}/{m['kind']}"
        if m["is_sidechain"]:
            who += f" [sub-agent {m['subagent']}]" if m.get("subagent") else " [sidechain]"
        out.append(f"--- {m.get('timestamp') or '?'}  {who}")
        for b in m["blocks"]:
            text = b["text"] or ""
            if len(text) > max_block_chars:
                text = text[:max_block_chars] + f" … [{len(text) - max_block_chars} more characters]"
            if b["type"] == "text":
                out.append(text)
            elif b["type"] == "tool_use":
                out.append(f"[tool_use {b.get('tool_name') or '?'}] " + text.replace("\n", "\n    "))
            elif b["type"] == "tool_result":
                label = f"[tool_result{' ' + b['tool_name'] if b.get('tool_name') else ''}"
                label += " error" if b.get("is_error") else ""
                label += f", clipped from {b['original_size']} characters" if b.get("clipped") else ""
                out.append(label + "] " + text.replace("\n", "\n    "))
            else:
                out.append(f"[{b['type']}] " + text.replace("\n", "\n    "))
    return "\n".join(out)
