"""Secret redaction: presidio-analyzer as the framework, our recognizers, remembered secrets.

`Redactor(secrets_dir)` is heavy (imports presidio, compiles the RE2 rules and the prefilter
Set): build it once per process and reuse it.

Invariants:
  * The presidio `AnalyzerEngine` runs a `NoOpNlpEngine` (no spaCy model, nothing downloaded) and an
    explicit `RecognizerRegistry` holding only our recognizers (no predefined PII recognizers).
    It is presidio's engine minus the steps that do nothing for exact recognizers (NLP pass,
    context enhancement, score threshold, quadratic de-duplication: see `_lean_analyzer_class`);
    overlapping spans are unioned by `merge_spans` instead, in O(n log n).
  * Our recognizers (`SecretRecognizer`, one per category) run RE2 (linear-time) patterns behind a
    prefilter: one RE2 Set pass over the text names the rules that can match; a text where none
    can skips presidio entirely, so `redact()` on ordinary text costs almost nothing, and
    `redact_many()` shares that one pass (and the secret memory's) across a whole batch and makes
    ONE presidio `analyze` call per chunk of candidate texts (each text still scanned on its own,
    so every text gets exactly the spans it gets alone).
  * `Redaction.text` never contains a detected value nor a remembered one: detected values are
    replaced where found (key kept: `DB_PASSWORD=[REDACTED:password]`), and every other occurrence
    of a detected credential-like value in the same text is replaced too, context or not, glued to
    anything (`-p<value>`, `svc-<value>`); a detected value that is not credential-like (>= 8
    characters, no placeholder: `rootpasswd`, a passphrase) wherever it stands apart from letters
    and digits. Linear time in the text and the occurrences (`_occurrences`).
  * Values are each recognizer's own span (never a union of overlapping spans, which can hold more
    than the secret): they are what is searched again in the text and what may be remembered.
  * Terminal control sequences (`grep --color`) are looked through: detection reads the text
    without them and spans are mapped back to the input (`_strip_ansi`); a text without an ESC
    character costs one scan for it.
  * `Finding`s carry type, span (in the input), rule and a short keyed hash prefix; never the value.
  * With `secrets_dir`, credential-like detected values are remembered (keyed hash, see
    `redact.memory`) and remembered values are removed anywhere, later, with no hint around them.
  * Nothing here logs content.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import shapes
from .memory import MIN_LEN
from .memory import REPLACEMENT as REMEMBERED_REPLACEMENT
from .memory import SecretMemory, _hmac, _hmac_pads
from .handlers import HANDLERS
from .scanner import Scanner, Span, merge_spans

logger = logging.getLogger(__name__)

LANGUAGE = "en"
#: Shorter texts cannot contain a finding: remembered values have >= MIN_LEN chars, rules need more.
MIN_SECRET_TEXT = MIN_LEN
#: Rules whose value passes no shape check (any URL password): their weak values are not searched again.
_UNSHAPED_RULES = frozenset({"url-userinfo"})
#: Rules whose findings are removed where they are seen but never remembered: with no key or
#: provider prefix to show for it, a value found by them alone is too weak evidence to erase it
#: from every later text.
_UNREMEMBERED_RULES = frozenset({"quoted-high-entropy"})
#: A detected value made of letters only is searched again only from this length: shorter ones
#: are everyday words too (`POSTGRES_PASSWORD: postgres`, then `image: postgres:16`).
_WEAK_WORD_MIN = 10
#: Texts per presidio `analyze` call in `redact_many` (bounds the joined text and result lists).
_DETECT_BATCH = 256

# Recognizer categories: rule kinds grouped the way the issue lists them; every other kind (a key
# and its value, a command's argument, a call's, prose) is an assignment.
_NAMED_CATEGORIES: dict[str, tuple[str, ...]] = {
    "PRIVATE_KEY": ("pem",),
    "PROVIDER_TOKEN": ("token",),
    "HIGH_ENTROPY": ("entropy",),
    "CONNECTION_STRING": ("userinfo", "query"),
    "AUTH_HEADER": ("header", "bearer", "header_kv", "curl_user", "cookie",
                    "cookie_header"),
}
CATEGORIES: dict[str, tuple[str, ...]] = {
    **_NAMED_CATEGORIES,
    "ASSIGNMENT": tuple(k for k in HANDLERS if not any(k in ks for ks in _NAMED_CATEGORIES.values())),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One redacted value: its type (the replacement label), span in the input, rule, hash prefix."""

    type: str
    start: int
    end: int
    rule: str
    hash_prefix: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class Redaction:
    """Redacted text plus what was removed (never the values)."""

    text: str
    findings: list[Finding] = field(default_factory=list)
    learned: int = 0  # secrets newly remembered while redacting this text

    @property
    def count(self) -> int:
        return len(self.findings)

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "count": self.count, "learned": self.learned}


def _secret_recognizer_class():
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    class SecretRecognizer(EntityRecognizer):
        """One category of our rules behind presidio's recognizer interface.

        analyze(): the rules of this category among those the prefilter Set fired for the text (one
        Set pass per text, shared by every recognizer), then their RE2 patterns and checks.
        """

        def __init__(self, category: str, scanner: Scanner, owner: "Redactor") -> None:
            self.category = category
            self.scanner = scanner
            self.owner = owner
            kinds = CATEGORIES[category]
            self.rule_ids = frozenset(i for i, r in enumerate(scanner.rules) if r.kind in kinds)
            self.entity = f"SECRET_{category}"
            super().__init__(
                supported_entities=[self.entity],
                name=f"reverie-secret-{category.lower().replace('_', '-')}",
                supported_language=LANGUAGE,
                version="1",
            )

        def load(self) -> None:  # compiled by the shared Scanner
            return None

        def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):
            owner = self.owner
            batch = owner._batch
            if batch is not None and batch[0] is text:
                segments = batch[1]  # a batch joined by `Redactor._detect_batch`: scan each text alone
            else:
                fired, data = owner._fired_for(text)
                if fired.isdisjoint(self.rule_ids):
                    return []  # the usual answer: none of this category's rules fired
                segments = ((0, text, data, fired),)
            entity = self.entity
            rule_ids = self.rule_ids
            meta_name, meta_id = RecognizerResult.RECOGNIZER_NAME_KEY, RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
            out = []
            for offset, seg, data, fired in segments:
                ids = fired & rule_ids
                if not ids:
                    continue
                for sp in self.scanner.scan(seg, ids, data):
                    out.append(RecognizerResult(
                        entity_type=entity, start=sp.start + offset, end=sp.end + offset, score=1.0,
                        recognition_metadata={"label": sp.label, "rule": sp.rule,
                                              meta_name: self.name, meta_id: self.id},
                    ))
            return out

    return SecretRecognizer


def _no_context_enhancer():
    """Presidio's context enhancer, doing nothing: our findings are exact, never scored up by nearby
    words, and the default (lemma) enhancer deep-copies every result on every call."""
    from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer

    class NoContextEnhancer(ContextAwareEnhancer):
        def __init__(self) -> None:
            super().__init__(context_similarity_factor=0.0, min_score_with_context_similarity=0.0,
                             context_prefix_count=0, context_suffix_count=0)

        def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
            return raw_results

    return NoContextEnhancer()


def _lean_analyzer_class():
    """presidio's `AnalyzerEngine`, minus the steps that do nothing for exact secret recognizers.

    `analyze(text, language, entities)` runs the registry's recognizers for those entities (looked
    up once, again whenever the registry changes) and returns their results as they are. Skipped:
    the NLP pass (the engine is `NoOpNlpEngine`: empty artifacts, which our recognizers ignore),
    context enhancement (our scores are exact, never raised by nearby words), the score threshold
    (every result scores 1.0), and `remove_duplicates` (quadratic in the results of a call; the
    caller unions overlapping spans itself with `merge_spans`, O(n log n), and gives each merged
    span a deterministic label, where presidio's set() kept an arbitrary one of two equal spans).
    A call using any other parameter (allow lists, ad-hoc recognizers, context words, thresholds,
    decision process, precomputed artifacts) goes through presidio's full `analyze`.
    """
    from presidio_analyzer import AnalyzerEngine

    class LeanAnalyzerEngine(AnalyzerEngine):
        _lean_key: tuple | None = None
        _lean_recognizers: list = []

        def analyze(self, text, language, entities=None, correlation_id=None, score_threshold=None,
                    return_decision_process=False, ad_hoc_recognizers=None, context=None,
                    allow_list=None, allow_list_match="exact", regex_flags=None, nlp_artifacts=None,
                    **kwargs):
            if (correlation_id or score_threshold is not None or return_decision_process
                    or ad_hoc_recognizers or context or allow_list or nlp_artifacts is not None
                    or kwargs or not entities or self.log_decision_process):
                full = {} if regex_flags is None else {"regex_flags": regex_flags}
                return super().analyze(
                    text, language, entities, correlation_id=correlation_id,
                    score_threshold=score_threshold, return_decision_process=return_decision_process,
                    ad_hoc_recognizers=ad_hoc_recognizers, context=context, allow_list=allow_list,
                    allow_list_match=allow_list_match, nlp_artifacts=nlp_artifacts, **full, **kwargs)
            key = (language, tuple(entities), tuple(self.registry.recognizers))
            if key != self._lean_key:
                # in entity-type order: the order presidio's de-duplication leaves results in, which
                # decides the label `merge_spans` keeps for two equal spans of different categories
                self._lean_recognizers = sorted(
                    self.registry.get_recognizers(language=language, entities=entities),
                    key=lambda r: sorted(r.supported_entities))
                self._lean_key = key
            results = []
            for recognizer in self._lean_recognizers:
                if not recognizer.is_loaded:
                    recognizer.load()
                    recognizer.is_loaded = True
                found = recognizer.analyze(text=text, entities=entities, nlp_artifacts=None)
                if found:
                    results.extend(found)
            return results

    return LeanAnalyzerEngine


class Redactor:
    """Detects and removes secrets. Heavy: build once per process."""

    def __init__(self, secrets_dir: Path | str | None = None, *, learn: bool = True) -> None:
        from presidio_analyzer import RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine

        self.scanner = Scanner.shared()
        self.memory = SecretMemory(secrets_dir) if secrets_dir is not None else None
        self.learn = learn and self.memory is not None
        self._process_pads = _hmac_pads(os.urandom(32))  # hash prefixes without a memory
        self._current: tuple[str, frozenset[int], bytes] | None = None
        # (joined text, ((offset, text, data, fired), ...)) while `_detect_batch` runs presidio
        self._batch: tuple[str, tuple[tuple[int, str, bytes, frozenset[int]], ...]] | None = None
        cls = _secret_recognizer_class()
        self.recognizers = [cls(cat, self.scanner, self) for cat in CATEGORIES]
        registry = RecognizerRegistry(recognizers=self.recognizers, supported_languages=[LANGUAGE])
        nlp = NoOpNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": "noop"}])
        nlp.load()
        self.analyzer = _lean_analyzer_class()(registry=registry, nlp_engine=nlp, supported_languages=[LANGUAGE],
                                       context_aware_enhancer=_no_context_enhancer())
        self.entities = [r.entity for r in self.recognizers]

    # -- prefilter shared by the recognizers: one Set pass per text --
    def _fired_for(self, text: str) -> tuple[frozenset[int], bytes]:
        cur = self._current
        if cur is not None and cur[0] is text:
            return cur[1], cur[2]
        data = text.encode("utf-8", "surrogatepass")
        fired = self.scanner.fired(data)
        self._current = (text, fired, data)
        return fired, data

    def _hash_prefix(self, value: str) -> str:
        if self.memory is not None:
            try:
                return self.memory.hash_prefix(value)
            except OSError:
                pass
        # HMAC-SHA256 under a per-process key (see redact.memory)
        return _hmac(self._process_pads, value.encode("utf-8", "surrogatepass")).hex()[:8]

    def detect(self, text: str, data: bytes | None = None) -> list[Span]:
        """Detector spans (merged, in `text`), without memory; presidio runs only when the
        prefilter Set fired. Terminal colour codes are looked through (see `_strip_ansi`).

        `data` is `text` encoded (UTF-8, surrogatepass) when the caller has it already.
        """
        plain = _strip_ansi(text)
        if plain is not None:
            return _to_input(self.detect(plain[0]), plain[1], plain[2])
        if data is None:
            data = text.encode("utf-8", "surrogatepass")
        fired = self.scanner.fired(data)
        if not fired:
            return []
        return merge_spans(self._detect_raw(text, data, fired))

    def _detect_raw(self, text: str, data: bytes, fired: frozenset[int]) -> list[Span]:
        """Every recognizer's own spans (not merged) once the prefilter named the rules `fired`
        (not empty) for `text`."""
        self._current = (text, fired, data)
        try:
            results = self.analyzer.analyze(text=text, language=LANGUAGE, entities=self.entities)
        finally:
            self._current = None
        return [_span(r, 0) for r in results]

    def _detect_batch(self, items: list[tuple[str, bytes, frozenset[int]]]) -> list[list[Span]]:
        """`_detect_raw` for each (text, data, fired) of a batch, with ONE presidio `analyze` call.

        presidio analyzes the texts joined with "\n", but each of our recognizers scans every text
        of the batch on its own (its own bytes, its own fired rules) and shifts the spans by the
        text's offset, so no span crosses two texts and each text gets exactly what `detect` gives
        it alone (results are only merged when they overlap, which spans of different texts never
        do). Spans are mapped back by offset; they are not merged (see `_with_values`).
        """
        if not items:
            return []
        if len(items) == 1:
            return [self._detect_raw(*items[0])]
        segments = []
        offsets = []
        pos = 0
        for text, data, fired in items:
            segments.append((pos, text, data, fired))
            offsets.append(pos)
            pos += len(text) + 1
        joined = "\n".join(text for text, _, _ in items)
        self._batch = (joined, tuple(segments))
        try:
            results = self.analyzer.analyze(text=joined, language=LANGUAGE, entities=self.entities)
        finally:
            self._batch = None
        per: list[list[Span]] = [[] for _ in items]
        for r in results:
            i = bisect.bisect_right(offsets, r.start) - 1
            per[i].append(_span(r, offsets[i]))
        return per

    def _with_values(self, text: str, raw: list[Span]) -> tuple[list[Span], set[str]]:
        """Detector spans (`raw`: each recognizer's own, unmerged) merged, plus the other
        occurrences of the detected values in the same text; and the values that may be remembered.

        The values are each detector's own (never the union of overlapping spans, which can hold
        more than a secret). Credential-like values are removed wherever they occur in the text;
        other detected values of >= MIN_LEN characters that are no placeholder (`rootpasswd`, a
        passphrase) where they stand apart from letters and digits (`_occurrences`), if they hold
        a digit or a symbol or have `_WEAK_WORD_MIN`+ letters, and unless only
        a rule that checks no shape found them (`postgres://postgres:postgres@db`: the word
        `postgres` elsewhere in the text is no password). Only
        credential-like values that are no typed sequence may be remembered."""
        if not raw:
            return raw, set()
        strong: set[str] = set()
        weak: set[str] = set()
        pairs = {(text[s.start:s.end], s.rule not in _UNSHAPED_RULES) for s in raw if s.label != "private_key"}
        for v, shaped in pairs:
            if shapes.credential_like(v, allow_typed_sequence=True):
                strong.add(v)
            elif shaped and len(v) >= MIN_LEN and not shapes.is_placeholder(v) \
                    and (len(v) >= _WEAK_WORD_MIN or not v.isalpha()):
                weak.add(v)
        spans = merge_spans(raw) if len(raw) > 1 else raw
        if strong or weak:
            more = _occurrences(text, strong, weak, spans)
            if more:
                spans = merge_spans(spans + more)
        # remembered: what some rule other than an unremembered one found
        kept = {text[s.start:s.end] for s in raw if s.rule not in _UNREMEMBERED_RULES}
        creds = {v for v in strong if v in kept and not shapes.is_typed_sequence(v)}
        return spans, creds

    def _learn(self, creds: set[str]) -> int:
        if not (self.learn and creds):
            return 0
        try:
            return self.memory.remember(creds)
        except Exception:  # memory trouble must not stop redaction
            logger.exception("could not remember secrets")
            return 0

    def _render(self, text: str, spans: list[Span], mem: list[tuple[int, int]], learned: int) -> Redaction:
        if mem:
            spans = merge_spans(spans + [Span(a, b, "remembered", "remembered") for a, b in mem])
        if not spans:
            return Redaction(text, [], learned)
        out: list[str] = []
        findings: list[Finding] = []
        last = 0
        for sp in spans:
            out.append(text[last:sp.start])
            out.append(REMEMBERED_REPLACEMENT if sp.label == "remembered" else f"[REDACTED:{sp.label}]")
            findings.append(Finding(sp.label, sp.start, sp.end, sp.rule, self._hash_prefix(text[sp.start:sp.end])))
            last = sp.end
        out.append(text[last:])
        return Redaction("".join(out), findings, learned)

    def redact(self, text: str) -> Redaction:
        """Redact one text. Never raises on odd input (bytes are decoded, None becomes '')."""
        if text.__class__ is not str:
            text = _as_text(text)
        if len(text) < MIN_SECRET_TEXT:
            return Redaction(text)  # too short to hold any key/value or token we detect or remember
        plain = _strip_ansi(text)  # None unless the text holds a terminal colour code
        seen = text if plain is None else plain[0]
        data = seen.encode("utf-8", "surrogatepass")
        fired = self.scanner.fired(data)
        if fired:
            spans, creds = self._with_values(seen, self._detect_raw(seen, data, fired))
            if plain is not None:
                spans = _to_input(spans, plain[1], plain[2])
            learned = self._learn(creds)
        else:  # no rule can match: the common case, nothing more to do for detection
            spans, learned = [], 0
            if self.memory is None:
                return Redaction(text)
        mem: list[tuple[int, int]] = []
        if self.memory is not None:
            try:
                mem = self.memory.find(text)
            except Exception:
                logger.exception("could not read remembered secrets")
        return self._render(text, spans, mem, learned)

    def redact_text(self, text: str) -> str:
        return self.redact(text).text

    def redact_many(self, texts: Iterable[str]) -> list[Redaction]:
        """Redact a batch: what `redact` gives one by one, at a fraction of the per-call cost.

        One prefilter Set pass over the whole batch (`Scanner.fired_many`) tells whether any text
        can hold a detector finding, and if so each text's own Set pass names its rules; the texts
        with some go through ONE presidio `analyze` call per chunk of up to `_DETECT_BATCH` texts
        (`_detect_batch`). Then one pass of the secret memory over the batch
        (`SecretMemory.find_sparse`). Since detection (and learning) of the whole batch
        comes first, a value learned from any text of the batch is also removed from the texts
        before it, which `redact` one by one cannot do; otherwise the results are the same.
        """
        items = [t if t.__class__ is str else _as_text(t) for t in texts]
        seen = items  # what detection reads: a text with terminal colour codes, without them
        plains: dict[int, tuple[str, list[int], list[int]]] = {}
        for i in [i for i, t in enumerate(items) if "\x1b" in t]:
            plain = _strip_ansi(items[i])
            if plain is not None:
                if seen is items:
                    seen = list(items)
                seen[i] = plain[0]
                plains[i] = plain
        datas = [t.encode("utf-8", "surrogatepass") if len(t) >= MIN_SECRET_TEXT else b"" for t in seen]
        spans: dict[int, list[Span]] = {}
        learned: dict[int, int] = {}
        fired = self.scanner.fired_many(datas)
        todo = [i for i, f in enumerate(fired) if f and datas[i]]
        for k in range(0, len(todo), _DETECT_BATCH):
            chunk = todo[k:k + _DETECT_BATCH]
            detected = self._detect_batch([(seen[i], datas[i], fired[i]) for i in chunk])
            for i, sp in zip(chunk, detected):
                if not sp:
                    continue
                found, creds = self._with_values(seen[i], sp)
                plain = plains.get(i)
                spans[i] = found if plain is None else _to_input(found, plain[1], plain[2])
                n = self._learn(creds)
                if n:
                    learned[i] = n
        mems: dict[int, list[tuple[int, int]]] = {}
        if self.memory is not None:
            try:
                mems = self.memory.find_sparse(items)
            except Exception:
                logger.exception("could not read remembered secrets")
        # the usual text holds nothing: one object each, then the few with findings are rendered
        out = [Redaction(t, [], 0) for t in items]
        for i in spans.keys() | mems.keys():  # (every text that learned something has spans)
            out[i] = self._render(items[i], spans.get(i, []), mems.get(i, []), learned.get(i, 0))
        return out

    def scrub(self, text: str) -> tuple[str, int]:
        """Same shape as `SecretMemory.scrub`: (redacted text, number of findings)."""
        r = self.redact(text)
        return r.text, r.count


def _span(result, base: int) -> Span:
    """A recognizer's result as a Span, shifted back by `base` (its text's offset in a batch)."""
    meta = result.recognition_metadata or {}
    return Span(result.start - base, result.end - base, meta.get("label", "secret"), meta.get("rule", "unknown"))


def _as_text(text) -> str:
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "surrogateescape")
    return str(text)


#: With at most this many distinct values, `_occurrences` runs one `str.find` pass per value (C speed,
#: k passes); with more, one pass over the text's aligned 4-character blocks serves them all.
_FIND_EACH_MAX = 24


# Terminal control sequences: CSI (colours `ESC[01;31m`, `ESC[K`), OSC ended by BEL or ST
# (titles, hyperlinks), character set selections (`ESC(B`) and two-character escapes. Each alternative is deterministic: linear time.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[!-/][ -/]*[0-~]|[@-Z\\-_])")


def _strip_ansi(text: str) -> tuple[str, list[int], list[int]] | None:
    """`text` without its terminal control sequences, for detection (`grep --color` wraps a token
    or cuts a key in two with colour codes, which hide it from every rule), or None when there is
    none (the usual case: one scan for an ESC character).

    Returns (plain, at, removed): a sequence was cut at each plain position `at[i]`, and
    `removed[i]` characters had been cut up to and including it (see `_to_input`)."""
    if "\x1b" not in text:
        return None
    pieces: list[str] = []
    at: list[int] = []
    removed: list[int] = []
    last = total = 0
    for m in _ANSI.finditer(text):
        a, b = m.span()
        pieces.append(text[last:a])
        at.append(a - total)
        total += b - a
        removed.append(total)
        last = b
    if not at:
        return None
    pieces.append(text[last:])
    return "".join(pieces), at, removed


def _to_input(spans: list[Span], at: list[int], removed: list[int]) -> list[Span]:
    """Spans of the plain text of `_strip_ansi` as spans of its input: a span starts at its first
    character and ends after its last one, so colour codes around a value stay and codes inside
    it go with it. Order and disjointness are kept (the map is increasing)."""
    def orig(k: int) -> int:
        i = bisect.bisect_right(at, k)
        return k + (removed[i - 1] if i else 0)

    return [Span(orig(s.start), orig(s.end - 1) + 1, s.label, s.rule) for s in spans]


def _occurrences(text: str, strong: set[str], weak: set[str], existing: list[Span]) -> list[Span]:
    """Spans of further occurrences of detected values in `text`, not already inside `existing`.

    `strong` values (credential-like: random, >= 8 characters) are removed wherever they occur,
    glued to anything (`-p<value>`, `svc-<value>`, `<value>_backup`): such a value inside a longer
    word is still that credential. `weak` values (detected, >= 8 characters, not placeholders, but
    not credential-like: `rootpasswd`, a passphrase) are removed where they stand apart from
    letters and digits, so a word-like value is not cut out of an unrelated longer word.

    Time is linear in `len(text)` plus the number of occurrences: `existing` (merged, so sorted and
    disjoint) is searched by bisection; a few values are found by one `str.find` pass each, many
    values by one pass over the text (see `_find_many`)."""
    values = strong | weak
    if not values:
        return []
    starts = [s.start for s in existing]
    ends = [s.end for s in existing]
    hits = _find_each(text, values) if len(values) <= _FIND_EACH_MAX else _find_many(text, values)
    out = []
    n = len(text)
    for i, j in hits:
        k = bisect.bisect_right(starts, i) - 1
        if k >= 0 and j <= ends[k]:
            continue  # inside a detector span already
        if text[i:j] not in strong:
            if (i > 0 and text[i - 1].isalnum()) or (j < n and text[j].isalnum()):
                continue
        out.append(Span(i, j, "remembered", "same-text"))
    return out


def _find_each(text: str, values: Iterable[str]) -> Iterable[tuple[int, int]]:
    """(start, end) of every occurrence of each value (overlapping ones included), one `find` pass per value."""
    for v in values:
        find = text.find
        m = len(v)
        i = find(v)
        while i >= 0:
            yield i, i + m
            i = find(v, i + 1)


def _find_many(text: str, values: set[str]) -> list[tuple[int, int]]:
    """`_find_each` for many values (each >= 8 characters) in one pass over the text.

    An occurrence of a value of >= 8 characters at position p holds the text's aligned 4-character
    block starting at the one multiple of 4 in [p, p + 3], which is the value's own 4 characters at
    offset o = (-p) % 4. So: index each value's 4-grams at offsets 0..3; for each aligned block of
    the text whose 4 characters are such a gram at offset o, a value may start at q - o: look its
    8-character head up, then the value itself (exact set lookups by length). Each (start, value)
    is seen from exactly one block, and the work per block is bounded by the distinct (offset,
    length) pairs of values sharing the block and head: linear in the text."""
    grams: dict[str, set[int]] = {}
    heads: dict[str, set[int]] = {}
    for v in values:
        for o in range(4):
            grams.setdefault(v[o:o + 4], set()).add(o)
        heads.setdefault(v[:8], set()).add(len(v))
    grams_get, heads_get = grams.get, heads.get
    out = []
    n = len(text)
    for q in range(0, n - 3, 4):
        offs = grams_get(text[q:q + 4])
        if offs is None:
            continue
        for o in offs:
            p = q - o
            if p < 0:
                continue
            lens = heads_get(text[p:p + 8])
            if lens is None:
                continue
            for m in lens:
                if p + m <= n and text[p:p + m] in values:  # (a slice past the end is shorter)
                    out.append((p, p + m))
    return out
