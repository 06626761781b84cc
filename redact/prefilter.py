"""The prefilter: which rules can match a text, in one pass over it, before any rule runs.

`Prefilter(rules).fired(data)` names the indices of the rules whose pattern can match the UTF-8
bytes `data`. Every rule goes, as a prefilter pattern (`set_pattern`: loosened, see `loosen`), into
one of a few RE2 Sets (google-re2), grouped so their partial matches do not multiply
(`_set_group`).

Invariants:
  * A rule whose pattern matches a text is always named for it (every prefilter pattern matches a
    superset of its rule's); tests/test_redact_prefilter.py checks it on every corpus we have.
  * A Set that gives up on a text (RE2 bails out when its state cache thrashes; a sentinel that
    always matches tells) names every rule it holds: slower, never less.
  * Patterns are multi-line (`^`/`$` also hold at line breaks), so a rule that matches a text alone
    also fires on it inside a batch joined with "\n" (`Scanner.fired_many`).

hyperscan (vectorscan 5.4.12, python `hyperscan` 0.9.1) ran this prefilter 4-5x faster, but misses
matches: `"[^"\n]*"[ \t]*[!=]==?[ \t]*password` finds nothing in `abcd"` + 40 x `a` + `" ==
password` (58 bytes), and finds it without the first four bytes. A prefilter that can miss a rule
loses secrets, so it is not used.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from .rules import Rule

logger = logging.getLogger(__name__)

NO_RULES: frozenset[int] = frozenset()


def latin1_options():
    """RE2 options of every rule and Set: patterns and text as Latin-1 bytes (the text is UTF-8)."""
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    opts.max_mem = 64 << 20
    return opts


_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def loosen(pattern: str, cap: int) -> str:
    """`pattern` with every counted repetition `{m}`, `{m,}`, `{m,n}` turned into `{min(m, cap),}`.

    The result matches a superset of what `pattern` matches (a lower bound can only drop and the
    upper bound goes), so it is a safe prefilter. Counted repetitions are what make a combined
    automaton of ~100 patterns blow up (each count is a counter the automaton must track), so the
    prefilter holds loosened patterns: provider tokens with `cap=1` (their literal prefix is what
    matters), the other rules with a cap above their lower bounds (only upper bounds go).
    """
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            for lead in "^]":
                if i < n and pattern[i] == lead:
                    out.append(lead)
                    i += 1
            continue
        m = _COUNT.match(pattern, i) if ch == "{" else None
        if m:
            low = min(int(m.group(1)), cap)
            out.append("*" if low == 0 else "+" if low == 1 else "{%d,}" % low)
            i = m.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# How far each rule kind is loosened (see `loosen`): provider tokens down to their literal prefix
# (115 of them share one RE2 Set); the other rules keep their lower bounds (all below the default
# cap: a value of >= 24 characters after `api_key` in prose), which in their smaller Sets cost no
# measurable speed and keep ordinary text ("the token limit") from firing.
_SET_CAP = {"token": 1}
_SET_CAP_DEFAULT = 64


def set_pattern(rule: Rule) -> str:
    """The prefilter pattern of `rule`: loosened, or as it is when the rule asks (`exact_in_set`:
    loosening would let back in what its counts leave out), or the rule's own (`set_pattern`: the
    start of its pattern with the key word and the value left loose, which matches wherever the
    rule does and keeps the key word alternation and the value's counts out of the Set)."""
    own = rule.options.get("set_pattern")
    if own:
        return loosen(own, _SET_CAP_DEFAULT)
    if rule.options.get("exact_in_set"):
        return rule.pattern
    return loosen(rule.pattern, _SET_CAP.get(rule.kind, _SET_CAP_DEFAULT))


# --- RE2 Sets ------------------------------------------------------------------------------------

# The RE2 groups, one Set (one automaton) each: provider tokens, the assignment rule, the other
# rules built on a key word (`KEY_RE`-like: keyed elements, flags, comparisons, keyword and prose
# values), the positional rules (`_POSITIONAL_KINDS`), and the rest. A combined automaton's states
# are sets of partial matches, so over varied text (each transcript line brings combinations not
# seen before) one Set of every rule builds states for the product of what its patterns track,
# while separate Sets build each for its own; each Set costs one more pass over the text, so the
# groups pair the patterns whose partial matches multiply (bench/redact_bench.py measures the
# throughput, text read once). Three literal-led output and protocol kinds (`generated`,
# `userlist`, `redis_auth`) measured cheaper in "keyed": in "other" they cost every Set together
# about a tenth of their speed (38.9 against 43.0 MB/s). A rule may name its Set (`set_group`)
# when it measured cheaper there than its kind's.
_KEYED_KINDS = frozenset({"xml", "cli", "reverse", "kwvalue", "kwquoted", "is", "nextline",
                          "generated", "userlist", "redis_auth"})
# The rules that read a command, a call or an output by position (`redact.arguments`), and the
# cookie headers: a fifth Set, measured faster than the same patterns in "other" (36.0 against
# 27.8 MB/s over every Set, stored blocks read once).
_POSITIONAL_KINDS = frozenset({"command", "htpasswd", "prose", "gradle", "cookie_header", "printed", "piped",
                               "declared_default", "option_default",
                               "envdefault", "call", "setter", "form_fill", "cracked", "found_login", "namevalue", "repl", "values_after"})


# A sixth Set, "screens", holds the patterns that made any of the five Sets two to three times slower
# (measured, stored blocks read once): the key words of other languages (a trie of ~150 words and
# their escapes) and the TOTP setup key (eight counted groups); together they cost one pass at about
# 150 MB/s.


def _set_group(rule: Rule) -> str:
    """The Set of `rule`: its own (`set_group` option: where its partial matches, measured, multiply
    least), or the one of its kind."""
    own = rule.options.get("set_group")
    if own:
        return own
    if rule.kind in ("token", "assign"):
        return rule.kind
    if rule.kind in _POSITIONAL_KINDS:
        return "positional"
    return "keyed" if rule.kind in _KEYED_KINDS else "other"


@dataclass
class SetGroup:
    """One RE2 Set: its Match call, its sentinel's index, the global indices of the rules behind
    each of its patterns (rules with the same prefilter pattern share one), and all its rules."""

    match: object
    sentinel: int
    rules: list[tuple[int, ...]]
    all: frozenset[int]
    nothing: list[int] = field(init=False)   # [sentinel]: what a text that fires no rule gets

    def __post_init__(self) -> None:
        self.nothing = [self.sentinel]


def set_group_members(rules: tuple[Rule, ...]) -> dict[str, list[int]]:
    """Each RE2 Set's group name and its rules' indices, in the order the Sets are built and passed."""
    by_group: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        by_group.setdefault(_set_group(rule), []).append(i)
    return by_group


def compile_set(patterns) -> tuple[object, int]:
    """(Match call, sentinel index) of one RE2 Set of `patterns` (multi-line, Latin-1) and its
    end-of-text sentinel; the bench builds its sentinel-only Set with it too."""
    import re2

    opts = latin1_options()
    opts.max_mem = 256 << 20
    opts.log_errors = False
    rset = re2.Set.SearchSet(opts)
    for pattern in patterns:
        rset.Add(b"(?m)" + pattern.encode("latin-1"))
    sentinel = rset.Add(rb"\z")  # every text has an end: missing from a result = RE2 gave up
    # (`\z` matches once, at the end; an empty pattern would match at every byte, and a Set
    # reports each match it passes, which halved the speed of every pass)
    rset.Compile()
    # RE2's own Set call (the wrapper adds an isinstance check and a call per text)
    return getattr(getattr(rset, "_set", None), "Match", None) or rset.Match, sentinel


def _set_groups(rules: tuple[Rule, ...]) -> list[SetGroup]:
    out: list[SetGroup] = []
    for group in set_group_members(rules).values():
        behind: dict[str, list[int]] = {}   # one Set pattern per distinct prefilter pattern
        for i in group:
            behind.setdefault(set_pattern(rules[i]), []).append(i)
        match, sentinel = compile_set(behind)
        out.append(SetGroup(match, sentinel, [tuple(ids) for ids in behind.values()], frozenset(group)))
    return out


class Prefilter:
    """The rules' prefilter patterns in RE2 Sets."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.all_rules = frozenset(range(len(rules)))
        self.groups = _set_groups(rules)

    def fired(self, data: bytes) -> frozenset[int]:
        """Indices of the rules that can match the UTF-8 bytes `data` (see the module docstring)."""
        out: set[int] | None = None
        for g in self.groups:
            hits = g.match(data)
            if hits == g.nothing:
                continue   # the usual answer: nothing but the sentinel
            if out is None:
                out = set()
            if not hits or g.sentinel not in hits:
                logger.debug("prefilter gave up on %d bytes; running every rule of a group", len(data))
                out.update(g.all)
            else:
                for h in hits:
                    if h != g.sentinel:
                        out.update(g.rules[h])
        if not out:
            return NO_RULES
        return self.all_rules if len(out) == len(self.all_rules) else frozenset(out)
