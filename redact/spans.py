"""Reading an RE2 match's group spans over a text's UTF-8 bytes (`sp[g] == (start, end)`, `(-1, -1)`
for a group that took no part), as every handler (`redact.handlers`) does."""

from __future__ import annotations


def text(data: bytes, s: int, e: int) -> str:
    """The text of data[s:e]; a character a group's bound cuts in two is left out (`ignore`), so a
    value's length in bytes never runs past the group."""
    try:
        return data[s:e].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data[s:e].decode("utf-8", "ignore")


def first(sp, groups: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(group, start, end) of the first of `groups` that took part in the match `sp`."""
    for g in groups:
        if sp[g][0] >= 0:
            return g, sp[g][0], sp[g][1]
    return None


def end(s: int, value: str) -> int:
    """The byte offset where `value`, starting at byte offset `s`, ends."""
    return s + len(value.encode("utf-8", "surrogatepass"))
