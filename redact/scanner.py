"""The fast core of detection: one prefilter pass finds the rules that can match, then RE2 per rule.

Invariants:
  * Cost on a text where no rule can match: one UTF-8 encode plus one prefilter pass
    (`redact.prefilter`: a few RE2 Set passes, every rule's pattern loosened); no per-rule regex
    and no Python check runs. A batch of texts can share that pass
    (`Scanner.fired_many`).
  * The prefilter can report a rule that then does not match (its patterns are supersets), never
    miss one; a Set that gives up on a text names every rule it holds: slower, never less.
  * Every regex is RE2 (no backtracking), compiled once per process, run on the UTF-8 bytes of the
    text (encoded once per call, `surrogatepass` so any str is accepted), so no input takes
    super-linear time in the regex engine; the Python post-processing is linear in the matches.
    Matches are read straight from RE2's own `Match` call (group spans as tuples), not through
    the `re2` wrapper's per-hit match objects (see `_raw_match`): same matches, a fraction of the
    per-hit cost.
  * `scan` returns spans of *values* (the key is kept by the caller's replacement), never raises on
    any str input, and never logs content.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import shapes
from .handlers import HANDLERS, STATEFUL_KINDS, value_group
from .keys import PAIR_NEXT
from .prefilter import NO_RULES, Prefilter, latin1_options
from .rules import RULES, Rule

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Span:
    """A value to redact: [start, end) in characters of the scanned text."""

    start: int
    end: int
    label: str
    rule: str


_GENERIC_LABELS = frozenset({"token", "secret", "api_key", "password", "credential", "authorization", "bearer", "remembered"})

# --- the scanner ---------------------------------------------------------------------------------


def _raw_match(rx):
    """`Match(anchor, data, pos, endpos) -> [(start, end) per group]` of a compiled `re2` pattern.

    The C++ RE2 object's own method when the `re2` wrapper exposes it (google-re2's `_regexp`):
    `finditer` calls it too, then builds a Python match object per hit and re-reads each group
    through several wrapper calls. A wrapper without it gets an equivalent built on `search`."""
    raw = getattr(getattr(rx, "_regexp", None), "Match", None)
    if raw is not None and _unanchored() is not None:   # the raw call needs RE2's anchor enum too
        return raw

    def match(anchor, data, pos, endpos):
        m = rx.search(data, pos, endpos)
        if m is None:
            return [(-1, -1)]
        return [m.span(k) for k in range(rx.groups + 1)]

    return match


def _unanchored():
    import re2

    anchor = getattr(re2, "_Anchor", None)
    return anchor.UNANCHORED if anchor is not None else None


_UNANCHORED = None  # set on the first Scanner build (re2 is imported only then)


#: `fired_many` confirms at most this many fired rules over the joined batch (then per-text Sets).
_CONFIRM_IN_BATCH = 8
#: `fired_many` gives a text this long its own Set pass rather than a place in the joined one.
_ALONE_BYTES = 2048


class Scanner:
    """Compiled rules plus the prefilter (`fired`); build once per process (`Scanner.shared()`)."""

    _shared: "Scanner | None" = None

    def __init__(self, rules: tuple[Rule, ...] = RULES) -> None:
        import re2

        global _UNANCHORED
        _UNANCHORED = _unanchored()
        opts = latin1_options()
        self.rules = rules
        self._compiled = []
        for rule in rules:
            try:
                self._compiled.append(re2.compile(rule.pattern.encode("latin-1"), opts))
            except Exception as exc:  # a bad pattern is a programming error: fail loudly at build
                raise ValueError(f"rule {rule.name}: {exc}") from exc
        self.prefilter = Prefilter(rules)
        self.all_rules = self.prefilter.all_rules
        #: `fired(data)`: the indices of the rules that can match the UTF-8 bytes `data`
        #: (`Prefilter.fired`: a pass of each RE2 Set; a Set that gives up names all its rules).
        self.fired = self.prefilter.fired
        self._multiline: dict[int, object] = {}
        self._match = [_raw_match(rx) for rx in self._compiled]

    @classmethod
    def shared(cls) -> "Scanner":
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    # -- prefilter --
    def triggered(self, text: str) -> frozenset[int]:
        """`fired` for a str."""
        if not text:
            return NO_RULES
        return self.fired(text.encode("utf-8", "surrogatepass"))

    def fired_many(self, datas: Sequence[bytes]) -> list[frozenset[int]]:
        """For each of `datas`: `fired` (its rules), or no rule when no rule can match it alone.

        A text of `_ALONE_BYTES` or more gets its own Set pass. The shorter ones share one: a pass
        over them joined with "\n" (the Set is multi-line, so it fires on the join whenever it
        fires on one of them). When that names no rule, none of them can match; when it names few
        (ordinary text), `_confirm` checks them over the join and only the texts they touch get
        their own pass; when it names many, every short text gets its own pass. Either way a text
        holding a match gets exactly `fired` of it; the others get no rule (so `scan` would find
        nothing in them). Long texts stay out of the join because text read once costs most (each
        new combination of partial matches builds automaton states), and a join that fires is
        read again.
        """
        out: list[frozenset[int]] = [NO_RULES] * len(datas)
        fired = self.fired
        short: list[int] = []
        for i, d in enumerate(datas):
            if len(d) >= _ALONE_BYTES:
                out[i] = fired(d)
            elif d:
                short.append(i)
        if len(short) == 1:
            out[short[0]] = fired(datas[short[0]])
        elif short:
            texts = [datas[i] for i in short]
            joined = b"\n".join(texts)
            rules = fired(joined)
            if rules:
                todo: Sequence[int] = range(len(texts))
                if rules is not self.all_rules and len(rules) <= _CONFIRM_IN_BATCH:
                    todo = sorted(self._confirm(texts, rules, joined))
                for k in todo:
                    out[short[k]] = fired(texts[k])
        return out

    def _confirm(self, datas: Sequence[bytes], rules: frozenset[int], joined: bytes) -> set[int]:
        """Positions in `datas` (joined with "\n" into `joined`) overlapped by a match of one of
        `rules` in the joined batch: a superset of the texts that `fired` would report one by one,
        since a match of a text alone is found at the same place in the batch (the separator
        satisfies the same anchors and boundaries as the text's edges), or an earlier match
        overlapping that text is."""
        starts: list[int] | None = None  # offset of each text in `joined`, built at the first match
        out: set[int] = set()
        for i in rules:
            match = self._multiline.get(i)
            if match is None:
                import re2

                match = self._multiline[i] = _raw_match(re2.compile(
                    b"(?m)" + self.rules[i].pattern.encode("latin-1"), latin1_options()))
            pos, n = 0, len(joined)
            while True:
                s0, e0 = match(_UNANCHORED, joined, pos, n)[0]
                if s0 < 0:
                    break
                if starts is None:
                    starts = list(itertools.accumulate((len(d) + 1 for d in datas), initial=0))
                first = bisect.bisect_right(starts, s0) - 1
                last = bisect.bisect_right(starts, max(s0, e0 - 1)) - 1
                out.update(range(first, last + 1))
                if pos == n:
                    break
                pos = e0 if e0 != pos else pos + 1
        return out

    # -- scanning --
    def scan(self, text: str, rule_ids: set[int] | frozenset[int] | None = None,
             data: bytes | None = None) -> list[Span]:
        """Spans of secret values in `text`; overlapping spans are merged by the caller.

        `data` is `text` encoded (UTF-8, surrogatepass) when the caller has it already.
        """
        if not text:
            return []
        if data is None:
            data = text.encode("utf-8", "surrogatepass")
        if rule_ids is None:
            rule_ids = self.fired(data)
        if not rule_ids:
            return []
        raw: list[tuple[int, int, str, str]] = []  # byte offsets
        n = len(data)
        for i in sorted(rule_ids):
            rule = self.rules[i]
            handler = HANDLERS[rule.kind]
            match = self._match[i]
            paired = rule.kind in _PAIRED_KINDS
            budget = rule.options.get("max_matches")   # matches read per text, if the rule caps them
            if rule.kind in STATEFUL_KINDS:    # a handler that keeps state over one scan's matches
                state: dict = {}
                handler = functools.partial(handler, state=state)
            pos = 0
            while True:
                # RE2's own match call (what `finditer` loops over, without building a match
                # object per hit): the spans of every group, (-1, -1) for one that took no part
                sp = match(_UNANCHORED, data, pos, n)
                s0, e0 = sp[0]
                if s0 < 0:
                    break
                if budget is not None:
                    if budget == 0:
                        break
                    budget -= 1
                found = len(raw)
                try:
                    for s, e, label in handler(rule, sp, data):
                        if e > s:
                            raw.append((s, e, label, rule.name))
                except Exception:  # never let one odd match break redaction of the rest
                    logger.exception("rule %s failed on a match; span redacted whole", rule.name)
                    raw.append((s0, e0, rule.label, rule.name))
                if pos == n:
                    break
                nxt = e0 if e0 != pos else pos + 1  # an empty match moves one byte on
                if paired:
                    # `passwd_file=pw.txt,password=S3cr3t`: the bare value ran on over a next
                    # `,name=` pair (`keys._clean_bare` cut it there); that pair is matched anew
                    glued = _PAIR_NEXT_B.search(data, s0 + 1, e0)
                    if glued:
                        nxt = glued.start() + 1
                    elif rule.kind == "assign":
                        inner, end, quoted = value_group(sp, 3)
                        brk = None if quoted or inner < 0 else _ESCAPED_BREAK.search(data, inner, end)
                        if brk:
                            # a bare value in JSON-escaped text ran on over `\n` into the next lines
                            # (`K=v\nDB_PASSWORD=...`: an env file inside a tool result): they are
                            # matched anew (`keys._clean_bare` cut the value there)
                            nxt = brk.end()
                        elif len(raw) == found and quoted and inner > pos and (
                                _PAIRS_INSIDE.search(data, inner, end)
                                or (data[sp[2][0]:sp[2][1]] == b"," and _KEY_AFTER.match(data, end))):
                            # a quoted value that is no secret may hold pairs of its own:
                            # `"AzureWebJobsStorage": "...;AccountKey=..."` (a connection string), a
                            # query string, JSON in a string; after a comma it may be the next pair's
                            # key (`"mailgun", "api_key": "v"`: a list item, then a pair); a bare one
                            # (`K=NAME:latest`) is read as is
                            nxt = inner
                pos = nxt
        if not raw:
            return []
        return _to_char_spans(text, data, _with_wrapped_rests(data, raw))


#: The rest of a value a terminal wrapped onto the next line: that line holds it alone, or up to a
#: `;` or `&` (a connection string's next pair); token characters, ending in a letter, digit or `=`.
_WRAPPED_REST = re.compile(rb"\r?\n([A-Za-z0-9+/_\-.]{0,200}[A-Za-z0-9]={0,2})(?=\r?\n|[;&]|$)")
#: How long a line is at least when a terminal wrapped it (80 columns and more; a prompt or a
#: key may come before the value).
WRAPPED_LINE = 60
#: At most this many lines of one value a terminal wrapped follow its first; more lines of the
#: same width are a dump (hex, base64), whose lines are none of the value's.
WRAPPED_LINES = 8


def _wrapped_rest(data: bytes, e: int, value: bytes, last: bool = False) -> tuple[int, int] | None:
    """The span of the rest of `value` (a found value that ends at `e`, the end of its line) on the
    next line (`_WRAPPED_REST`): 8 characters or more, random (a digit, two kinds of characters, no
    word, some entropy), no symbol the value's encoding has none of (`_SYMBOL_FAMILIES`: `HTTP/1.1`
    after a hex token is the next line, not its rest; `python3`, `step-2` are words). `last`: after a
    line of the value's that filled the terminal's width, any 3 characters or more of them."""
    m = _WRAPPED_REST.match(data, e)
    if m is None:
        return None
    rest = m.group(1).rstrip(b"=").decode("ascii")
    kinds = set(value.decode("utf-8", "replace"))
    for family in _SYMBOL_FAMILIES:
        if kinds & family:
            kinds |= family
    if len(rest) < 3 or any(not c.isalnum() and c not in kinds for c in rest):
        return None
    if not last and (len(rest) < 8 or not any(c.isdigit() for c in rest) or shapes.char_classes(rest) < 2
                     or shapes.is_wordy(rest) or shapes.shannon(rest) < 2.5):
        return None
    return m.start(1), m.end(1)


#: Symbols that come together in one encoding: base64's, base64url's (a JWT's parts, between dots).
_SYMBOL_FAMILIES = (frozenset("+/="), frozenset("-_."))


def _uniform_after(data: bytes, last: tuple[int, int]) -> bool:
    """Whether the line after a value's last rest (`last`) is one more of the same width and kind:
    a block of uniform lines (a hex or base64 dump), where a wrapped value's last line is shorter."""
    m = _WRAPPED_REST.match(data, last[1])
    return m is not None and m.end(1) - m.start(1) == last[1] - last[0]


def _with_wrapped_rests(data: bytes, raw: list) -> list:
    """`raw` and, for each one-line span that ends a line of `WRAPPED_LINE` bytes or more, the rest
    of its value on the next lines (`_wrapped_rest`), with its label: a long value wrapped by a
    terminal or a pager; a rest that fills its line as the first did (the terminal's width) goes
    on to the line after it."""
    out = raw
    for s, e, label, name in raw:
        line_start = data.rfind(b"\n", 0, e) + 1
        width = e - line_start
        if width < WRAPPED_LINE or line_start > s:
            continue
        end, rests = e, []
        for k in range(WRAPPED_LINES + 1):
            span = _wrapped_rest(data, end, data[s:e], last=k > 0)
            if span is None:
                break
            rests.append(span)
            if span[1] - span[0] != width or data[span[1]:span[1] + 1] not in (b"\n", b"\r"):
                break
            end = span[1]
        if not rests or len(rests) > WRAPPED_LINES or _uniform_after(data, rests[-1]):
            continue   # lines of one width go on: a dump (hex, base64) whose lines are none of the value's
        if out is raw:
            out = list(raw)
        out.extend((a, b, label, name) for a, b in rests)
    return out


#: A JSON-escaped line break.
_ESCAPED_BREAK = re.compile(rb"\\[nr]")
#: Rules whose bare values may hold a comma (`patterns.VALUE_RE`), and a next pair inside such a value.
_PAIRED_KINDS = frozenset({"assign", "is"})
_PAIR_NEXT_B = re.compile(PAIR_NEXT.pattern.encode())
#: A quoted value's closing quote (escaped, maybe twice), then a key's separator: the value is a key.
_KEY_AFTER = re.compile(rb"""(?:\\\\)*\\?["'][ \t]*[:=]""")
#: What a quoted value holds when it holds pairs of its own (`a=1;b=2`, `a=1&b=2`, `{"a": 1, ...}`).
_PAIRS_INSIDE = re.compile(rb"[;&,\s]")


def _to_char_spans(text: str, data: bytes, raw) -> list[Span]:
    """Map byte spans to character spans; starts snap back and ends snap forward to whole chars."""
    if len(data) == len(text):  # ASCII: byte offsets are char offsets
        return [Span(s, e, label, rule) for s, e, label, rule in raw]
    n = len(data)

    def back(off: int) -> int:
        while 0 < off < n and (data[off] & 0xC0) == 0x80:
            off -= 1
        return off

    def fwd(off: int) -> int:
        while 0 < off < n and (data[off] & 0xC0) == 0x80:
            off += 1
        return off

    fixed = [(back(s), fwd(e), label, rule) for s, e, label, rule in raw]
    offsets = sorted({o for s, e, _, _ in fixed for o in (s, e)})
    mapping: dict[int, int] = {}
    prev_b = prev_c = 0
    for off in offsets:
        prev_c += len(data[prev_b:off].decode("utf-8", "surrogatepass"))
        prev_b = off
        mapping[off] = prev_c
    return [Span(mapping[s], mapping[e], label, rule) for s, e, label, rule in fixed]


#: Rules whose spans lose a tie with another rule's same span (`fallback`: they read a looser context).
_FALLBACK_RULES = frozenset(r.name for r in RULES if r.options.get("fallback"))


def _label_rank(label: str, rule: str = "") -> float:
    rank = 2 if label == "remembered" else (1 if label in _GENERIC_LABELS else 0)
    return rank + 0.5 if rule in _FALLBACK_RULES else rank


def merge_spans(spans: list[Span]) -> list[Span]:
    """Union of overlapping spans, sorted; the merged span keeps the label of its longest part."""
    if not spans:
        return []
    spans = sorted(spans, key=lambda sp: (sp.start, -(sp.end - sp.start), sp.label in _GENERIC_LABELS))
    out: list[Span] = []
    for sp in spans:
        if out and sp.start < out[-1].end:
            last = out[-1]
            ll, sl = last.end - last.start, sp.end - sp.start
            if ll == sl:  # same value found twice: a provider label beats a generic one beats "remembered"
                longer = sp if _label_rank(sp.label, sp.rule) < _label_rank(last.label, last.rule) else last
            else:
                longer = last if ll > sl else sp
            out[-1] = Span(last.start, max(last.end, sp.end), longer.label, longer.rule)
        else:
            out.append(sp)
    return out
