"""The offline card writer: deterministic extraction, no model, no network.

For each candidate passage (best first: importance, then keep probability, then confidence), up to
the request's card cap:

* statement: the passage's key sentence (the sentence with the strongest cues and most named
  things), made self-contained: discourse openers and correction openers stripped ("No, ...",
  "From now on, ...", "Remember that ..."), a leading "it/this/that" replaced by the thing the
  request named, clipped at a clause boundary to at most 35 words; and first person resolved:
  - a passage with a speaker label ("Caroline: I went to ...", a transcript of several people)
    names the speaker: the first "I/we/my/me" becomes the name ("Caroline went to ...", with the
    verb agreed: "I love" -> "Caroline loves"), later ones "they/their/them";
  - a user turn without a label (Claude Code: the user is talking to the agent) states the point
    itself, never "the user ...": "I prefer X" -> "Prefer X", "we decided to use X" -> "Use X",
    "we moved X off Y" -> "Moved X off Y", "I always X" -> "Always X";
  - a human turn that answers the question the previous human turn ends with carries that
    question: whole when it fits (`(asked by Melanie: "How was the camping trip?")`), else its
    content words that fit (`(asked by Melanie about idea, colors, patterns)`), so a card whose
    answer says "those" or "it" still holds the words it is about (`with_question`);
* entities: named things of the statement by pattern (`consolidate.names.named_things`: hyphenated
  service names, hosts, buckets, repos, paths, backticked identifiers, well-known tools, capitalised
  names) plus the agent's known entity names, plus the speaker (a person) when the statement
  names them;
* relations: a lexicon of verb phrases between two entities for the 20 fixed verbs; "moved X off
  Y", "no longer" and "retired" end a relation (`holds: false`); nothing when no phrase matches;
* evidence: the passage the statement comes from, plus the user turn it answers when the statement
  draws on it (an assistant paragraph whose "it" was resolved from the request) and that turn is a
  candidate of the same call.

Calls: `call_per_exchange` asks the pipeline for one call per exchange (a user turn and its answer),
so the card cap max(1, min(5, ceil(n/3))) applies per exchange: an informative exchange gets a card.
Two candidates that give the same statement yield one card citing both.

Speaker labels: a user turn that starts with one or two capitalised words and a colon ("Caroline: ",
"Mary Ann: ") is read as spoken by that person, unless the label is a common heading word ("Note:",
"Context:", "Update:", ... `classify.NOT_SPEAKERS`; `classify.speaker_label` reads them).
"""

from __future__ import annotations

import logging
import re
from typing import Iterator

from reverie.graph.text import STOPWORDS

from ..classify import CHATTER_ANY, CHATTER_START, RULE_ADVERB, agent_exchange, answers_question, speaker_label
from ..names import KNOWN_TOOLS, Named, named_things
from .base import CardDraft, WriteRequest, WriteResult, sequential, MAX_WORDS
from .offline_coding import statements_for as coding_statements, user_card_ok
from .relations import UNRESOLVED_PERSON, findings, relations
from .repair import build_draft

log = logging.getLogger(__name__)

#: A statement that opens on a pronoun standing for something earlier in the transcript (after
#: `_self_contained` found nothing to put in its place): "It ...", "Without it, ...", "This means ...".
_BACK_REFERENCE = re.compile(r"^\W*(?:(?:with|without|for|from|because of|after|before|unlike)\s+)?(?:it|they|them)\b"
                              r"|^\W*(?:this|that|these|those)\s+(?:is|are|was|were|means|makes|will|would|can|should)\b",
                              re.I)
#: The keep a coding candidate needs before the offline writer writes it: the classifier's bar
#: (0.5) admits weak candidates for the model writers, which can discard them; an extracting writer
#: cannot rephrase a weak one, so it takes only the strong.
CODING_KEEP = {"user": 0.6, "assistant": 0.6, "summary": 0.7, "report": 0.65, "file": 0.5, "written": 0.65,
               "answer": 0.5}

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+|(?<=:)\s+(?=[-*•]\s)|\s+[-*•]\s+")
_OPENERS = re.compile(
    r"^(?:ok(?:ay)?|so|well|also|btw|by the way|hey|please|and|but|oh|alright|right|note|fyi|just|hmm|"
    r"one more thing|important|heads up|ps)\b[,:;!.\-]*\s+", re.I)
_CORRECTION_OPENERS = re.compile(
    r"^(?:no|nope|wrong|actually|not quite|incorrect|that'?s (?:not right|not correct|wrong|incorrect)|"
    r"that is (?:not right|wrong|incorrect))\b[,.!:;\-]*\s*", re.I)
_RULE_OPENERS = re.compile(r"^(?:from now on|going forward|in the future|remember(?: that)?|keep in mind(?: that)?|"
                           r"note that|for the record)\b[,:]?\s*", re.I)
_LEADING_PRONOUN = re.compile(r"^(it|this|that)\b(?!'s (?:great|fine|ok|okay))\s", re.I)
_KNOWN_LOWER = set(KNOWN_TOOLS)
#: A speaker's account (see `key_sentence`) takes sentences up to this many words.
ACCOUNT_WORDS = MAX_WORDS
_COMMON_STARTS = frozenset("yeah yes yep no nope wow oh well thanks thank sure totally absolutely definitely "
                           "anyway also plus so and but still even just time here there".split())
_CHATTER = re.compile(f"(?:{CHATTER_START.pattern})|(?:{CHATTER_ANY.pattern})", re.I)
_INTERJECTION = re.compile(
    r"^(?:(?:wow|woah|whoa|oh|ooh|aw+|yeah|yea|yes|yep|yup|hey|hi|hello|thanks|thank you|thx|sure|totally|haha|"
    r"hah|lol|omg|great|cool|awesome|nice|sweet|right|ok|okay|hmm|well|gosh|geez|congrats|congratulations|"
    r"absolutely|definitely|exactly|true|indeed|ah+)\b(?: so much| a lot)?[\s,!.…\-]*)+(?=\S)", re.I)
_BRACKETED = re.compile(r"^\s*\[[^\]]*\][.!]?\s*$")
#: A sentence that continues the one before it (its subject or link refers back).
_REFERS_BACK = re.compile(r"^(?:it|it's|its|this|that|these|those|they|they're|them|their|he|she|his|her|there|"
                          r"which|so|here's|there's)\b", re.I)

_APOS = "['\u2019]"
#: Words that may sit between a subject pronoun and its verb ("I really love ...").
_ADVERBS = frozenset("""just really also always never still usually often actually totally definitely even
    finally recently already sometimes truly absolutely honestly kinda kind of mostly only especially
    literally seriously currently generally normally rarely seldom sure each both all once""".split())
#: After one of these the verb needs no agreement with a third-person subject.
_NO_AGREEMENT = frozenset("""can could will would should might must may shall did didn't didnt can't cant won't
    wont couldn't wouldn't shouldn't mustn't used had hadn't was gotta gonna wanna got went made took saw met
    found bought began held won lost ran wrote gave left came felt told built sold kept taught caught flew
    drove became chose ate drank grew spent thought brought heard said knew sent paid put let set read fell
    forgot hung hit hurt sang sat slept spoke stood swam threw understood woke wore lit led lent meant rode
    rose shot shut stuck struck tore broke bit blew cut dug drew fed fought fled forgave froze hid laid lay
    quit sank shook sought spread stole swore swept swung wept wound been being""".split())
_AGREE = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "don't": "doesn't",
          "dont": "doesn't", "haven't": "hasn't", "havent": "hasn't", "aren't": "isn't", "weren't": "wasn't",
          "ain't": "isn't", "go": "goes"}
_FP_WORDS = "I|i|me|Me|my|My|mine|Mine|myself|Myself|we|We|us|Us|our|Our|ours|Ours|ourselves|Ourselves"
_FIRST_PERSON_RE = re.compile(
    r"(?<![\w'\u2019\-])(?P<p>" + _FP_WORDS + r")(?:" + _APOS + r"(?P<c>m|ve|ll|d|re))?(?![\w\-]|" + _APOS + r"\w)"
    r"(?P<rest>(?:\s+(?:" + "|".join(sorted(_ADVERBS, key=len, reverse=True)) + r")\b)*\s+"
    r"(?!(?:" + _FP_WORDS + r")\b)(?P<v>[a-z]+(?:" + _APOS + r"t)?)\b)?")
_CONTRACTION = {"m": "is", "ve": "has", "ll": "will", "d": "would", "re": "is"}
_THEY_CONTRACTION = {"m": "'re", "ve": "'ve", "ll": "'ll", "d": "'d", "re": "'re"}

# A user talking to the agent (no speaker label): the point itself, never "the user ...".
_USER_FIRST_PERSON = tuple((re.compile(rx, re.I), rep) for rx, rep in (
    (r"^(?:I|we)(?:" + _APOS + r"d| would)? (?:really |strongly |much |also |generally |usually |definitely )?"
     r"prefer(?:s)?\s+", "Prefer "),
    (r"^(?:I|we)(?: have|" + _APOS + r"ve)? (?:decided|agreed|chose) to\s+", ""),
    (r"^(?:I|we)(?: have|" + _APOS + r"ve)? (?:decided|agreed|settled) on\s+", "Decided on "),
    (r"^we(?:" + _APOS + r"re| are) (?:now )?using\s+", "Use "),
    (r"^we (?:now |always |usually )?(?=(?:use|run|deploy|keep|store|moved|migrated|switched|replaced|retired|"
     r"dropped|went with|picked|chose)\b)", ""),
    (r"^(?:I|we) (?=(?:always|never)\b)", ""),
))

def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def _score_sentence(s: str, known: dict[str, str]) -> float:
    from ..classify import CUES, CORRECTION_RE

    score = 0.0
    for c in CUES:
        if c.pattern.search(s):
            # "always/never" is a rule when it governs an action ("never commit to main"), not in
            # "I'll never forget it" or "you're always welcome".
            weak = c.name in ("always", "never") and not RULE_ADVERB.search(s)
            score += 0.15 if weak else c.weight
    score += 0.1 * min(3, len(named_things(s, known)))
    score += 0.02 * min(15, sum(1 for w in re.findall(r"[A-Za-z][\w'\-]+", s) if w.lower() not in STOPWORDS))
    if CORRECTION_RE.search(s):
        score += 0.2
    if s.rstrip().endswith("?"):
        score -= 0.3
    n = len(s.split())
    if n < 4:
        score -= 0.3
    return score


def key_sentence(text: str, known: dict[str, str], *, speaker: bool = False,
                 people: frozenset[str] | set[str] = frozenset()) -> str:
    """The statement's source text: the sentence with the strongest cues (and most content words),
    with what belongs to it, within `MAX_WORDS`:

    * without a `speaker` (a coding transcript: a user turn mixes separate instructions), the key
      sentence alone, plus the sentence after it when that one gives the reason ("because ...") or
      refers back ("It ...", "They ...", "So ..."), and the one before it when the key sentence
      itself starts by referring back; a sentence in "I/you" (narration, requests to the agent) is
      the key sentence only when nothing else is;
    * with a `speaker` (a conversation among people: a turn is one speaker's account), the turn's
      informative sentences, best first while they fit, kept in their order; greetings, thanks,
      exclamations and questions are left out, bracketed asides ("[shares a photo: ...]") come
      last, and interjections and vocatives of `people` ("Wow, Mel! ...") are stripped; a dash
      between spaces is an aside within the sentence ("me-time each day - running, reading -
      which ..."), never a list bullet."""
    if speaker:
        text = re.sub(r"(?<=[\w,])\s+[-\u2013]\s+(?=\w)", " \u2013 ", text)
    sents = sentences(text)
    if not sents:
        return text.strip()
    if speaker:
        return _account(sents, known, people)

    def score(i: int) -> tuple:
        s = _bare(sents[i])
        person = bool(UNRESOLVED_PERSON.search(user_point(s)))
        aside = 0.3 if _BRACKETED.match(s) else 0.0
        usable = not person and len(s.split()) >= 3
        return (usable, _score_sentence(sents[i], known) - (0.2 if person else 0.0) - aside, -i)

    best = max(range(len(sents)), key=score)
    s = sents[best]
    lo = hi = best                            # sents[lo..hi] are in the statement
    # A reason that follows in the next sentence belongs with it.
    if best + 1 < len(sents) and re.match(r"^(because|since|that's because|the reason)\b", sents[best + 1], re.I):
        s = s.rstrip(".") + ", " + sents[best + 1][0].lower() + sents[best + 1][1:]
        hi += 1

    def joins(sent: str) -> bool:
        return (not sent.rstrip().endswith("?") and len(sent.split()) >= 3 and not _CHATTER.search(sent)
                and len(s.split()) + len(sent.split()) <= MAX_WORDS)

    if lo > 0 and _REFERS_BACK.match(_OPENERS.sub("", sents[lo])) and joins(sents[lo - 1]):
        s = sents[lo - 1] + " " + s
    while hi + 1 < len(sents) and _REFERS_BACK.match(sents[hi + 1]) and joins(sents[hi + 1]):
        s = s + " " + sents[hi + 1]
        hi += 1
    return s


def _bare(sentence: str, correction: bool = False) -> str:
    """A sentence without discourse, correction (when `correction`) and rule openers."""
    s = sentence.strip()
    for _ in range(3):
        before = s
        s = _OPENERS.sub("", s)
        if correction:
            s = _CORRECTION_OPENERS.sub("", s)
        s = _RULE_OPENERS.sub("", s)
        if s == before:
            break
    return s


def _vocatives(people: frozenset[str] | set[str]) -> str:
    """A regex of `people`'s names and the short forms of their first words ("Mel", "Mela", ...
    for Melanie: three letters or more), as whole words."""
    if not people:
        return ""
    key = frozenset(people)
    cached = _VOCATIVE_CACHE.get(key)
    if cached is None:
        forms: set[str] = set()
        for name in people:
            forms.add(re.escape(name))
            first = name.split()[0]
            if first.isalpha():
                forms.update(re.escape(first[:i]) for i in range(3, len(first)))
        cached = "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + r")(?![\w'\u2019\-])"
        if len(_VOCATIVE_CACHE) > 64:
            _VOCATIVE_CACHE.clear()
        _VOCATIVE_CACHE[key] = cached
    return cached


_VOCATIVE_CACHE: dict[frozenset, str] = {}


def strip_address(sentence: str, people: frozenset[str] | set[str]) -> str:
    """A sentence without leading interjections ("Wow,", "Thanks!") and without vocatives of
    `people` ("Caroline, ...", "..., Caroline!"), nor of their short forms ("Mel" for Melanie:
    the first three or more letters of a name's first word)."""
    s = sentence
    names = _vocatives(people)
    for _ in range(3):
        before = s
        s = _INTERJECTION.sub("", s)
        if names:
            s = re.sub(r"^(?:" + names + r")\s*[,!.:]+\s*", "", s, flags=re.I)
            s = re.sub(r",\s*(?:" + names + r")\s*(?=[!.?]*$)", "", s, flags=re.I)
        if s == before:
            break
    return s[:1].upper() + s[1:] if s and s is not sentence else s


#: A short exclamation that is still an account: a first-person subject and a content word beyond
#: these ("Yeah, I play clarinet!" is kept, "I love it!" is not).
_FP_SUBJECT = re.compile(r"(?<![\w'\u2019])(?:I|we|my|our)(?![\w\-])", re.I)
_EMPTY_VERBS = frozenset("love loved like liked feel felt think agree know hope wish bet guess mean miss totally "
                         "really so too it that this one".split())


def _exclaims_only(s: str) -> bool:
    """A short exclamation with nothing of the speaker's own in it ("That's so cool!", "I love it!")."""
    if not (s.endswith("!") and len(s.split()) <= 5):
        return False
    if not _FP_SUBJECT.search(s):
        return True
    words = [w.lower() for w in re.findall(r"[A-Za-z][\w'\u2019\-]+", s)]
    return not any(w not in STOPWORDS and w not in _EMPTY_VERBS and not _FP_SUBJECT.fullmatch(w) for w in words)


def _account(sents: list[str], known: dict[str, str], people: frozenset[str] | set[str]) -> str:
    """A speaker's turn as one statement (see `key_sentence`)."""
    kept: list[tuple[int, str]] = []
    asides: list[tuple[int, str]] = []
    for i, raw in enumerate(sents):
        s = strip_address(raw, people)
        if _BRACKETED.match(s):
            asides.append((i, s))
        elif s and not s.rstrip().endswith("?") and len(s.split()) >= 3 and \
                not (_CHATTER.search(s) and len(s.split()) < 8) and not _exclaims_only(_INTERJECTION.sub("", s)):
            kept.append((i, s))
    if not kept:
        kept = [(i, strip_address(x, people) or x) for i, x in enumerate(sents)]
        kept = [max(kept, key=lambda t: (_score_sentence(t[1], known), -t[0]))]
    ranked = sorted(kept, key=lambda t: (-_score_sentence(t[1], known), t[0]))
    chosen: list[tuple[int, str]] = []
    n = 0
    for i, s in ranked + asides:
        w = len(s.split())
        if not chosen or n + w <= ACCOUNT_WORDS:
            chosen.append((i, s))
            n += w
    return " ".join(s for _, s in sorted(chosen))


def _clip_words(s: str, limit: int = MAX_WORDS) -> str:
    words = s.split()
    if len(words) <= limit:
        return s
    head = " ".join(words[:limit])
    for sep in ("; ", ", ", " - ", " — ", " \u2013 ", ": "):
        i = head.rfind(sep)
        if i > len(head) * 0.5:
            return head[:i].rstrip(" ,;:") + "."
    return head.rstrip(" ,;:") + "…"




def _third_person(verb: str) -> str:
    """The third-person singular present of a base verb ("love" -> "loves", "try" -> "tries")."""
    low = verb.lower()
    if low in _AGREE:
        return _AGREE[low]
    if low in _NO_AGREEMENT or low.endswith(("ed", "ly", "n't", "\u2019t")) or not low.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def name_speaker(text: str, speaker: str) -> str:
    """First person of `speaker` resolved (see module doc): the first mention becomes the name
    (verb agreed), later ones they/their/them. "we/our/us" are read as the speaker too."""
    state = {"named": False}

    def cap(word: str, like: str) -> str:
        return word[0].upper() + word[1:] if like[:1].isupper() and word[:1].islower() else word

    def sub(m: re.Match) -> str:
        p, c, rest, v = m.group("p"), m.group("c"), m.group("rest") or "", m.group("v")
        low = p.lower()
        first = not state["named"]
        state["named"] = True
        if low in ("i", "we"):
            if first:
                if c:
                    return f"{speaker} {_CONTRACTION[c]}" + rest
                if v is not None:
                    return speaker + rest[: len(rest) - len(v)] + _third_person(v)
                return speaker + rest
            at_start = m.start() == 0 or bool(re.search(r"[.!?]\s+$", m.string[:m.start()]))
            they = "They" if at_start else "they"
            if c:
                return they + _THEY_CONTRACTION[c] + rest
            if v is not None and v.lower() in ("am", "was"):
                return they + rest[: len(rest) - len(v)] + {"am": "are", "was": "were"}[v.lower()]
            return they + rest
        if low in ("my", "our"):
            word = f"{speaker}'s" if first else cap("their", p)
            if not first and m.start() and re.search(r"[.!?]\s+$", m.string[:m.start()]):
                word = "Their"
        elif low in ("mine", "ours"):
            word = f"{speaker}'s" if first else "theirs"
        elif low in ("myself", "ourselves"):
            word = speaker if first else "themselves"
        else:  # me, us
            word = speaker if first else "them"
        return word + (f"'{c}" if c else "") + rest

    return _FIRST_PERSON_RE.sub(sub, text)


def user_point(text: str) -> str:
    """A user's first-person sentence to the agent stated as the point itself (module doc)."""
    for rx, rep in _USER_FIRST_PERSON:
        new = rx.sub(rep, text, count=1)
        if new != text:
            return new
    return text


def self_contained(sentence: str, *, speaker: str | None, correction: bool, context_named: list[Named],
                   user: bool = False) -> str:
    """The key sentence as a card statement (see module doc). `speaker`: the passage's speaker
    label; `user`: a user turn without one (first person stated as the point)."""
    return _self_contained(sentence, speaker=speaker, correction=correction, context_named=context_named,
                           user=user)[0]


def _self_contained(sentence: str, *, speaker: str | None, correction: bool, context_named: list[Named],
                    user: bool = False) -> tuple[str, bool]:
    """(statement, whether it drew on the request: a leading pronoun replaced from the context)."""
    used_context = False
    s = sentence.strip()
    s = re.sub(r"^[-*•>]+\s+", "", s)
    s = re.sub(r"^(?:\*\*|__)?[^*_:\n]{1,40}?(?:\*\*|__):\s+", "", s)    # a bold "**Label**: " heading
    s = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", s).strip("*_ ")    # **bold** -> bold
    s = _bare(s, correction)
    label, rest = speaker_label(s)
    if label:
        speaker = speaker or label
        s = rest
    if speaker:
        s = name_speaker(s, speaker)
        if not re.search(r"(?<![\w\-])" + re.escape(speaker) + r"(?![\w\-])", s):
            # Nothing in it names the speaker: say whose account it is.
            head = s.split(" ", 1)[0].strip(",.!;:").lower()
            common = head in STOPWORDS or head.endswith("ly") or head in _COMMON_STARTS
            s = f"According to {speaker}, " + (s[0].lower() + s[1:] if common and s[1:2].islower() else s)
    elif user:
        s = user_point(s)
    pm = _LEADING_PRONOUN.match(s)
    if pm and context_named:
        s = context_named[0].name + " " + s[pm.end():]
        used_context = True
    s = re.sub(r"\s+", " ", s).strip()
    s = _clip_words(s)
    first = s.split(" ", 1)[0] if s else ""
    if s and s[0].islower() and re.fullmatch(r"[a-z]+", first) and first not in _KNOWN_LOWER:
        s = s[0].upper() + s[1:]
    if s and s[-1] not in ".!?…":
        s += "."
    return s, used_context


def _sentence_category(sentence: str, passage, fallback: str) -> str:
    """The category the key sentence's own cues give (a passage may mix a rule and a decision)."""
    from dataclasses import replace

    from ..classify import classify

    j = classify(replace(passage, text=sentence))
    return j.category if j.category not in ("none", "fact") or fallback == "none" else fallback


#: At most this many words of the question an answer's statement carries (`with_question`).
QUESTION_WORDS = 14
#: A question too long for the statement is carried as its content words: at least this many.
QUESTION_TOPIC_MIN = 2


def question_topic(question: str, people: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The content words of a question, in order, once each: no stopwords, no question words, no
    people's names (the asker is named anyway), no pronouns ("What kind of books you got in your
    library?" -> ["kind", "books", "library"])."""
    out: list[str] = []
    low_people = {p.lower() for p in people}
    for w in re.findall(r"[A-Za-z][\w'\u2019\-]*", question):
        low = w.lower().strip("'\u2019")
        if len(low) < 3 or low in STOPWORDS or low in low_people or low in _QUESTION_NOISE \
                or UNRESOLVED_PERSON.fullmatch(w):
            continue
        if low not in (x.lower() for x in out):
            out.append(w)
    return out


#: Words of a question that say nothing about its topic (beyond the stopword list).
_QUESTION_NOISE = frozenset("""what whats what's when where which who whom whose why how hows how's did does do
    doing done was were is are been anything something thing things kind sort lot lots really tell know
    think get got getting much many yeah wow hey cool awesome great nice sounds sound like also any
    you've you're youre you'll you'd ever lately recently""".split())


def asks_lately(context: str) -> bool:
    """True when one of the last two sentences of a human turn is a question ("What did you paint?
    I'd love to see it!"): the turn after it answers that question (`consolidate.classify.
    answers_question` covers a turn that ends by asking)."""
    _, body = speaker_label(context.lstrip("…"))
    return any(q.rstrip().endswith("?") and len(q.split()) >= 3 for q in sentences(body.lstrip("…"))[-2:])


def question_of(context: str, people: frozenset[str] | set[str]) -> tuple[str | None, str] | None:
    """(asker or None, the last question the context asks), or None when it asks nothing."""
    asker, body = speaker_label(context.lstrip("…"))
    asks = [strip_address(q, people) for q in sentences(body.lstrip("…")) if q.rstrip().endswith("?")]
    return (asker, asks[-1].strip()) if asks else None


def with_question(statement: str, context: str, people: frozenset[str] | set[str]) -> str:
    """An answer's statement with the question it answers ("How was the camping trip?" ->
    "Caroline saw the Perseids (asked by Melanie: "How was the camping trip?")."), so the card says
    what it is about. When the whole question would pass `MAX_WORDS` (or `QUESTION_WORDS`), its
    content words that fit (at least `QUESTION_TOPIC_MIN`) stand for it: "... (asked by Melanie
    about books, library)."; unchanged when not even those fit or the context asks nothing."""
    asked = question_of(context, people)
    if asked is None:
        return statement
    asker, q = asked
    n_q = len(q.split())
    n_s = len(statement.split())
    if n_q < 3:
        return statement
    if n_q <= QUESTION_WORDS and n_s + n_q + 3 <= MAX_WORDS:
        who = f"asked by {asker}" if asker else "asked"
        return statement.rstrip(".!…") + f' ({who}: "{q}").'
    topic = question_topic(q, people)
    room = MAX_WORDS - n_s - (4 if asker else 2)
    if room < QUESTION_TOPIC_MIN or len(topic) < QUESTION_TOPIC_MIN:
        return statement
    who = f"asked by {asker} about" if asker else "asked about"
    return statement.rstrip(".!…") + f" ({who} {', '.join(topic[:room])})."


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


class OfflineWriter:
    """Deterministic card writer (the default)."""

    name = "offline"
    model_backed = False
    #: One call per exchange (module doc): no model call to save, so the cap applies per exchange.
    call_per_exchange = True

    def __init__(self) -> None:
        #: Speakers seen in this run's labelled turns (their names are vocatives to strip elsewhere).
        self._people: set[str] = set()

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        return sequential(self, requests, budget)

    def write_one(self, request: WriteRequest, budget=None) -> WriteResult:
        """Cards of one request. Never raises: a candidate whose draft breaks a limit is repaired or
        rejected (`repair.build_draft`), one whose extraction fails is skipped; both are counted in
        `WriteResult.rejected` and the other candidates still give their cards."""
        cap = request.max_cards
        ranked = sorted(request.candidates,
                        key=lambda c: (-c.judgement.importance, -c.judgement.keep, -c.judgement.confidence,
                                       c.passage.message_id))
        cards: list[CardDraft] = []
        by_norm: dict[str, int] = {}
        rejected: dict[str, int] = {}
        known = request.known_entities
        user_turns = {c.passage.message_id: c.label for c in request.candidates if c.passage.kind == "user"}
        for cand in ranked:
            try:
                got = self._card_fields(cand, known, user_turns)
            except Exception:  # noqa: BLE001 - one passage never stops the exchange
                log.warning("offline writer: extraction failed for %s", cand.passage.key, exc_info=True)
                rejected["writer_error"] = rejected.get("writer_error", 0) + 1
                continue
            for fields in got:
                norm = _norm(fields["statement"])
                if norm in by_norm:
                    card = cards[by_norm[norm]]
                    card.evidence.extend(e for e in fields["evidence"] if e not in card.evidence)
                    continue
                if len(cards) >= cap:
                    continue
                draft, reason = build_draft(**fields)
                if draft is None:
                    rejected[reason or "repair_invalid"] = rejected.get(reason or "repair_invalid", 0) + 1
                    continue
                cards.append(draft)
                by_norm[norm] = len(cards) - 1
        return WriteResult(request.id, cards=cards, rejected=rejected)

    def _coding_fields(self, cand, known: dict[str, str], user_turns: dict[int, str]) -> list[dict]:
        """A coding passage's cards (`writers.offline_coding.statements_for`): its best memory
        sentence (a summary paragraph: its best few), or none. No per-session cap (a resumed run
        must write what one uninterrupted run writes): the quality bars (`CODING_KEEP`,
        `offline_coding.MIN_FACT`) and the exchange's card cap keep a long session to a handful."""
        j, p = cand.judgement, cand.passage
        if j.keep < CODING_KEEP.get(p.kind, CODING_KEEP["assistant"]):
            return []
        # the things the request named, which stand for "it" ("It depends on ledger-db")
        context_named = (named_things(p.context, known)
                         if p.kind in ("assistant", "summary", "report") and p.context else None)
        out = []
        for statement, source in coding_statements(p, j.correction):
            fields = self._coding_card(cand, statement, source, known, user_turns, context_named)
            if fields is not None:
                out.append(fields)
        return out

    def _coding_card(self, cand, statement: str, source: str, known: dict[str, str],
                     user_turns: dict[int, str], context_named: list[Named] | None) -> dict | None:
        """The fields of one coding statement's card, or None when it leans on the transcript.
        `context_named`: the named things of the passage's request, when "it" may stand for one."""
        j, p = cand.judgement, cand.passage
        evidence = [cand.label]
        if context_named is not None:
            statement, drew = _self_contained(statement, speaker=None, correction=False,
                                              context_named=context_named, user=False)
            if drew and user_turns.get(p.exchange) not in (None, cand.label):
                evidence.append(user_turns[p.exchange])
        if _BACK_REFERENCE.match(statement):
            return None   # "Without it, DocGen would ...": what "it" is stayed in the transcript
        # A lone capitalised word ("Added", "Rewrote" after a label) is no name in coding text.
        ents = [e for e in named_things(statement, known)
                if not (e.type == "other" and re.fullmatch(r"[A-Z][a-z]+", e.name) and e.name.lower() not in known)]
        category = "correction" if j.correction else j.category
        if p.kind == "answer":
            category = "decision"
        return {"statement": statement, "category": category, "importance": j.importance,
                "entities": [{"name": e.name, "type": e.type} for e in ents],
                "relations": relations(statement, ents), "evidence": evidence, "quote": source[:200]}

    def _card_fields(self, cand, known: dict[str, str], user_turns: dict[int, str]) -> list[dict]:
        """The fields of the cards one candidate gives (plain values: `build_draft` repairs and
        validates them): none, one, or a coding passage's few."""
        j, p = cand.judgement, cand.passage
        if j.category == "none":
            return []
        speaker, body = speaker_label(p.text) if p.kind == "user" else (None, p.text)
        found = findings(body, known) if p.kind in ("assistant", "summary", "report") else None
        # Coding statements for the agent's text, a turn addressed to the agent, and a session's
        # unlabelled opening prompt; a conversation among people keeps the account writing below.
        coding_user = p.kind == "user" and (agent_exchange(p) or (speaker is None and not p.context))
        if not found and p.kind != "user":
            return self._coding_fields(cand, known, user_turns)
        if found:
            statement, ents, rels = found
            return [{"statement": statement, "category": "fact", "importance": max(2, j.importance),
                    "entities": [{"name": e.name, "type": e.type} for e in ents], "relations": rels,
                    "evidence": [cand.label], "quote": body[:200]}]
        if speaker:
            self._people.add(speaker)
        people = self._people | {n for n, t in known.items() if t == "person"}
        sent = key_sentence(body, known, speaker=bool(speaker), people=people)
        # A user turn's context is the human turn it follows (a question it may answer), never
        # what a leading "it" refers to; an assistant paragraph's is the request it answers.
        context_named = named_things(p.context, known) if p.context and p.kind != "user" else []
        statement, drew = _self_contained(sent, speaker=speaker, correction=j.correction,
                                          context_named=context_named, user=p.kind == "user")
        if len(statement.split()) < 3 or (not speaker and UNRESOLVED_PERSON.search(statement)):
            return []   # "I'm new here", "I'll import the bucket": nothing a future session can use
        if coding_user and not user_card_ok(statement, j.correction):
            return []   # a request for now, a question, a transient state (issue 13)
        answered = answers_question(p) or (p.kind == "user" and bool(p.context_id) and asks_lately(p.context))
        if answered:
            with_q = with_question(statement, p.context, people)
            drew = with_q != statement
            statement = with_q
        evidence = [cand.label]
        if drew and p.kind != "user" and user_turns.get(p.exchange) not in (None, cand.label):
            evidence.append(user_turns[p.exchange])
        if drew and answered and user_turns.get(p.context_id) not in (None, cand.label):
            evidence.insert(0, user_turns[p.context_id])   # built from the question too
        ents = named_things(statement, known)
        if speaker and re.search(r"(?<![\w\-])" + re.escape(speaker) + r"(?![\w\-])", statement) and \
                not any(e.name.lower() == speaker.lower() for e in ents):
            ents.insert(0, Named(speaker, "person", statement.find(speaker)))
        entities = [{"name": e.name, "type": "person" if speaker and e.name == speaker else e.type} for e in ents]
        category = "correction" if j.correction else _sentence_category(sent, p, j.category)
        return [{"statement": statement, "category": category, "importance": j.importance, "entities": entities,
                 "relations": relations(statement, ents), "evidence": evidence, "quote": sent[:200]}]
