"""The offline writer's statements for coding work: memory, not transcript (issue 13).

Used for every passage of a person working with an agent (`consolidate.classify.agent_exchange`)
and for the agent's own text, summaries, sub-agent reports, docs and answers; a conversation among
people ("Caroline: ...") keeps the account-writing of `writers.offline`.

One card is one self-contained sentence of durable knowledge: the best sentence of the passage
that passes every check below (`statement_for`; a compaction summary's paragraph gives its best
`SENTENCES_PER_PASSAGE`, `statements_for`), or no card at all:

* never a question, the agent's narration ("Let me ...", "Now add ...", "I've updated ..."), a
  status line ("All green", "STATUS: Complete"), a list fragment (a bare item, "2.", a heading
  with a colon), a table or pasted output, code (a sentence that is mostly code: braces,
  assignments, a shell prompt; inline code in backticks is quoted, not pasted), or a sentence that
  still says "I"/"you" after the rewrites below (how a finding was reached goes first:
  "Established that X" is X);
* never a transient state: what is true only at the moment ("the build is passing now", "the DNS
  is configured correctly", "something went wrong", "is still running"), and, in the agent's own
  sentences, a gap found today outside a condition or rule ("X is missing Y", "Y doesn't exist
  yet", "not implemented yet"; `gap_found`);
* a user's imperative is a rule only with a rule cue (always, never, don't, prefer, use X not Y,
  from now on, make sure, should, must); a bare request ("add a button", "commit this") is a
  one-off and gives no card; "I want/I'd like/we need X" becomes "The user wants X";
* a sentence that mixes an outdated and a current fact ("it was X, now it is Y", "X (previously
  Y)") keeps the current part;
* a sentence of the agent's must state something: a lesson or reason cue, or a named thing with a
  present-tense state verb (`classify_coding.fact_sentence` >= `MIN_FACT`); a sub-agent report's
  verdict on the code it read ("has proper error handling", `_VERDICT`) is no fact.

Agent instruction files (CLAUDE.md, AGENTS.md, CONTRIBUTING, ...), read or written, give their strongest rule line
(a readme, plan or config read once may be outdated by the session's own edits: no offline card); answers to the agent's questions give
"The user chose <answer> for <question>" (not when the question only asked how to go on now: "Would
you like to ... first?", "Ready to ...?"); another doc the agent wrote gives its best sentence, held to
a sub-agent report's bar; failed commands give no offline card (the model writers
may read a lesson in them).
"""

from __future__ import annotations

import re

from reverie.graph.text import normalize_statement

from .. import classify_coding as coding
from ..classify import REQUEST
from ..names import KNOWN_TOOLS
from .base import MAX_WORDS
from .relations import UNRESOLVED_PERSON

#: An agent sentence needs at least this `fact_sentence` score to become a card.
MIN_FACT = 0.55
#: A user sentence needs a rule cue, or a correction, plus at least this many words.
MIN_USER_WORDS = 5

_OPENER = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|well|also|good|great|perfect|excellent|right|ah|oh|yes|yep|no|nope|got it|i see(?: the issue)?|"
    r"good call|good catch|thanks!?|thank you|note|important|heads up|fyi|btw|actually|expected|interesting|"
    r"found it|confirmed|understood|makes sense)\b[\s,.:;!\-\u2013\u2014]+)+", re.I)
#: How a finding is reported, before the finding itself ("Established that this project uses X").
_FOUND_THAT = re.compile(r"^(?:(?:we|i|it was) )?(?:established|confirmed|found|discovered|determined|verified|"
                         r"learned|realized|noticed|clarified)(?: (?:out|again|here))?(?: that|,? yes,)\s+(?=\S)", re.I)
_MARKDOWN = re.compile(r"(\*\*|__|\*)(?=\S)(.+?)(?<=\S)\1")
_TRAILING_NARRATION = re.compile(
    r"(?:[.;:,]|\s[-\u2013\u2014])\s*(?:now\s+)?(?:let me|let's|i'll|i will|i need to|i'm going to|we'll|next,? i)\b.*$",
    re.I)
_TRANSIENT = re.compile(
    r"\b(?:now (?:works|passes|passing|running|working|fixed|green|done|complete)|(?:is|are) (?:now )?(?:passing|working|"
    r"running|done|complete|completed|ready|green|fixed|resolved|configured correctly|up to date|in progress|pending)\b|"
    r"something went wrong|still (?:running|compiling|waiting|loading|failing|in progress)|at the moment|right now|"
    r"currently (?:running|working on|in progress)|for now|so far|this session|"
    r"all (?:tests|checks) pass|\d+ (?:tests?|failures?|passed|failed)\b)", re.I)
#: A gap the agent found today, which the same session usually closes: "X is missing Y", "Y doesn't
#: exist yet", "not implemented yet". Judged in the agent's own sentences only (`gap_found`).
_GAP = re.compile(r"\b(?:(?:is|are) (?:still |currently )?missing\b|(?:does not|doesn'?t|do not|don'?t) exist yet\b|"
                  r"(?:is|are) not yet\b|(?:isn'?t|aren'?t|not) (?:implemented|created|added|written|wired up) yet\b)",
                  re.I)
#: A reviewer's verdict ("has proper error handling", "comprehensive", "is broken"): how a sub-agent
#: judged the code it read, not a fact about it (judged in reports only).
_VERDICT = re.compile(r"\b(?:proper|comprehensive|robust|modern|solid|excellent|elegant|seamless(?:ly)?|"
                      r"well[- ](?:structured|designed|organized|documented|written)|time-consuming|broken|"
                      r"best practices?|production[- ]ready|clean(?:ly)? (?:code|architecture|separation))\b", re.I)
#: What makes a gap part of a lasting rule: a condition ("fails when X is missing"), a rule cue.
_GAP_RULE = re.compile(r"\b(?:if|when|whenever|unless|until|while|whose|once|before|after|never|always|must|"
                       r"should|don'?t|do not)\b", re.I)
_CODE = re.compile(r"[{};]\s*$|^\s*[$#>]\s|=>|\breturn\b.*;|\b(?:const|let|var|def|function|import|export)\s+\w+\s*[=(]|"
                   r"^\s*[\w.]+\([^)]*\)\s*$|</?\w+[^>]*>", re.I)
_OUTDATED = re.compile(r"^(?P<old>.*?)(?:,|;|\s[-\u2013\u2014])\s*(?:but\s+)?(?:it\s+|they\s+|this\s+)?(?:is|are|was|were)?\s*now\s+"
                       r"(?P<new>.+)$", re.I)
_PREVIOUSLY = re.compile(r"\s*\((?:previously|formerly|was|used to be|old)\b[^)]*\)", re.I)
_WANTS = re.compile(r"^(?:i|we)(?:'d| would)? (?:really |also |just |strongly )?(?:want|like|need|prefer)(?: to)?\s+", re.I)
_IMPERATIVE_RULE = re.compile(
    r"(?:^|[,;:]\s*|\b(?:please|and|but|so|just|then)\s+)(?:always|never|don'?t|do not|stop|avoid)\s+[a-z]+|"
    r"\b(?:prefer|from now on|going forward|make sure|ensure|should(?:n'?t)?|must|every time|whenever|instead of|"
    r"rather than|not \w+,? but|no longer|use \S+ (?:not|instead))\b", re.I)
#: A question without its question mark ("what are the skills we don't have yet").
_WH_START = re.compile(r"^\W*(?:what|which|who|whom|whose|where|when|why|how|is|are|does|do|did|can|could|would|"
                       r"should we|shall|will|have you|has)\b", re.I)
#: A condition, then the main clause: a rule, not a question ("When X changes, update Y too.").
_CONDITION = re.compile(
    r"^\W*(?:when|whenever|where|if)\b(?!\s+(?:does|do|did|is|are|was|were|can|could|would|should|will|has|have|"
    r"had|shall)\b)[^,?]{3,},\s+(?!(?:and|or|but|who|what|which|how|why|where|when)\b)\w[^?]*$", re.I)
#: Narration about the person ("User indicated ...", "The user confirmed ...").
_ABOUT_USER = re.compile(r"^\W*(?:the )?user (?:indicated|said|asked|confirmed|requested|approved|mentioned|noted|"
                         r"replied|answered|agreed|wanted)\b", re.I)
#: An event told in the past tense that opens the sentence ("Changed X to Y", "Modified ...").
_PAST_EVENT = re.compile(r"^\W*(?:[A-Z][a-z]{2,}ed|Wrote|Made|Ran|Built|Put|Set up|Took)\b(?! by\b)")
#: What makes an agent's sentence a lesson or a rule for the writer (narrower than the classifier's).
_WRITER_LESSON = re.compile(
    r"\b(?:because|since (?:it|the|this)|so that|due to|root cause|caused by|the (?:problem|issue|bug|fix|solution|"
    r"reason|trick|catch) (?:is|was)|turns? out|instead of|rather than|not supported|doesn'?t support|doesn'?t exist|"
    r"does not exist|requires?|must|needs? to|has to|have to|only works|workaround|never|always|don'?t|do not|"
    r"by default|defaults? to|decided|no longer|is now|are now|now \w+s|out of scope)\b", re.I)


#: A number at the end of a sentence: the next list item's ("... the client. 2"), unless the word
#: before it names what it counts ("deferred to Phase 2.", "requires Node 18", "step 3").
_GLUED_NUMBER = re.compile(r"(\S+)\s+\d{1,2}([.)]?)\s*$")
_COUNTED = re.compile(r"^(?:[A-Z][\w\-]*|(?i:phase|step|version|part|stage|level|tier|option|round|plan|chapter|item|"
                      r"issue|node|python|java|go|ruby|php|v|no|number|rule|section|task|wave|sprint))$")


def _unglue(m: re.Match) -> str:
    word = m.group(1)
    counted = m.group(2) != ")" and _COUNTED.match(word.strip("`*_(")) and not word.endswith((".", "!", "?", ":"))
    return m.group(0) if counted else word


def clean(sentence: str) -> str:
    """A sentence without markdown emphasis, list markers, a leading label ("**Note:**"), discourse
    openers ("Good -", "Got it."), a trailing "Let me ..." clause, and with the outdated half of an
    "X, now Y" sentence dropped."""
    s = _MARKDOWN.sub(r"\2", sentence or "").strip()
    s = re.sub(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+", "", s)
    s = _GLUED_NUMBER.sub(_unglue, s)                 # the next list item's number glued on
    # a label ("ANALYSIS:", "Note:", "P0:", "Step 3:") goes; a ticket id or an identifier as the
    # label stays, it is the subject ("ISS-001:", "MAX_RETRIES:", "config.ts:")
    label = re.match(r"^([^:\s][^:]{0,40}):\s+(?=\S)", s)
    if label and not re.fullmatch(r"[A-Z][A-Z0-9]*-\d+|\S*[_.]\S*", label.group(1)) and \
            re.fullmatch(r"[A-Z][A-Z ]{2,20}|[A-Z][\w\-]*(?: [\w\-]+){0,3}", label.group(1)):
        s = s[label.end():]
    s = _FOUND_THAT.sub("", _OPENER.sub("", _FOUND_THAT.sub("", s)))
    s = _TRAILING_NARRATION.sub("", s).strip()
    s = _PREVIOUSLY.sub("", s)
    m = _OUTDATED.match(s)
    if m and len(m.group("new").split()) >= 3:
        subject = re.match(r"^\s*((?:the |our |this )?[`\w.\-/]+(?: [`\w.\-/]+)?)\s+(?:is|are|was|were|used|ran|lived)\b",
                           m.group("old"), re.I)
        new = m.group("new")
        pronoun = re.match(r"^(?:it|they|this)\s+", new, re.I)
        if subject and pronoun:
            new = new[pronoun.end():]
        s = (subject.group(1) + " now " if subject else "Now ") + new
    s = re.sub(r"\s+", " ", s).strip(" -\u2013\u2014:;,")
    first = s.split(" ", 1)[0] if s else ""
    if s and s[0].islower() and not re.search(r"[\-_/.\d`]", first) and first.lower() not in KNOWN_TOOLS:
        s = s[0].upper() + s[1:]
    if s and s[-1] not in ".!?":
        s += "."
    return s


#: A sentence cut short: it ends on an auxiliary, an article, a conjunction or a preposition that
#: needs its object ("`trading_stats_5m`, `trading_stats_1h` all have.", "Store modules in the.");
#: "the port it listens on." ends a sentence.
_DANGLING = re.compile(r"\b(?:(?i:have|has|had|is|are|was|were|be|been|the|and|or|that|which|than|its|their|our|"
                       r"of|into|via|per)|a|an)\W*$")   # "A" ends "uses Plan A."


def _fragment(s: str) -> bool:
    """A list fragment, a heading, a bare item: no verb-like word, or ends with a colon."""
    body = s.rstrip(".")
    words = body.split()
    if len(words) < 5 or body.endswith(":") or re.fullmatch(r"[\W\d]+", body):
        return True
    return not re.search(r"\b(?:is|are|was|were|be|has|have|had|do|does|did|can|cannot|can't|must|should|will|would|"
                         r"need|needs|uses?|requires?|runs?|lives?|works?|fails?|means?|keeps?|stores?|reads?|writes?|"
                         r"calls?|returns?|defaults?|points?|takes?|gets?|makes?|goes|holds?|contains?|"
                         r"exists?|supports?|expects?|provides?|means|breaks?|depends?|refers?|lacks?|allows?|"
                         r"prevents?|handles?|triggers?|owns?|follows?|matches?|includes?|accepts?|rejects?|shows?|"
                         r"sends?|serves?|listens?|loads?|sets?|builds?|ships?|deploys?|creates?|prefers?|wants?|"
                         r"doesn'?t|don'?t|isn'?t|aren'?t|won'?t|never|always|only|"
                         # the participle of an elliptical fact, with its agent or object: "X resolved
                         # with Y", "Phase 19 superseded by 22" (not "the required variables")
                         r"(?:resolved|fixed|solved|superseded|replaced|caused|blocked) (?:by|with|via)|"
                         r"required (?:by|for)|renamed to|deprecated (?:in|since|by))\b",
                         body, re.I)


def gap_found(s: str) -> bool:
    """An agent's sentence that reports a gap found today (`_GAP`) outside any condition or rule:
    "The test config is missing `secret_key_base`." (transient) but not "The build fails when
    `DATABASE_URL` is missing." (a lasting fact)."""
    m = _GAP.search(s)
    return bool(m) and not _GAP_RULE.search(s[:m.start()])


def acceptable(s: str) -> str | None:
    """Why `s` is no memory sentence ("question", "narration", ...), or None when it is one."""
    words = s.split()
    if len(words) < 4:
        return "too_short"
    if coding.QUESTION.search(s) or re.search(r"\?\s+\S", s):
        return "question"
    if re.search(r"\s[-\u2013\u2014]\s+(?:[A-Z][a-z]{2,}ed|Added|Wrote|Made)\b", s):
        return "narration"     # "`file.ex` — Changed X to Y": what was done to a file
    if coding.narration_sentence(s) or _ABOUT_USER.match(s) or \
            (_PAST_EVENT.match(s) and not _WRITER_LESSON.search(s)) or re.match(r"^\W*needs? to\b", s, re.I):
        return "narration"
    if _WH_START.match(s) and not re.search(r"\b(?:is|are)\b.*\b(?:because|so)\b", s) and not _CONDITION.match(s):
        return "question"
    if re.search(r"\]\(https?://|^\W*[\u2190-\u21ff]|[\u2190-\u21ff]\s*\w+ (?:has|is)", s):
        return "fragment"
    if coding.PASTED.search(s):
        return "pasted"
    # inline code in backticks is quoted, not pasted: the sentence around it is judged
    prose = re.sub(r"`[^`\n]{1,80}`", "`x`", s)
    if _CODE.search(prose) or sum(ch in "{}=;<>|" for ch in prose) >= 4:
        return "code"
    if _TRANSIENT.search(s):
        return "transient"
    if _fragment(s) or _DANGLING.search(s) or "\u2026" in s or "..." in s or s.count("`") % 2 or \
            len(re.findall(r"\b[A-Z][A-Za-z ]{1,20}:\s", s)) >= 2 or \
            re.match(r"^(?:since|because|if|when|while|although|though|unless|as|so that)\b[^,]*$", s, re.I):
        return "fragment"
    if len(words) > MAX_WORDS:
        return "too_long"
    return None


def _user_statement(s: str, correction: bool) -> str | None:
    """A user's sentence as a rule or preference, or None for a one-off request."""
    raw = s.strip()
    if not (correction or _IMPERATIVE_RULE.search(raw)):
        # A statement of fact about the project ("We moved auth-service to prod-k8s") is memory;
        # a request for now ("add a button", "I want to rename the repo") is not.

        plain = clean(raw)
        if REQUEST.search(plain) or coding.fact_sentence(plain) < MIN_FACT or \
                re.match(r"^(?:i|we)\W*(?:'d| would)? (?:\w+ )?(?:want|like|need)\b", plain, re.I):
            return None
    bare = _OPENER.sub("", _MARKDOWN.sub(r"\2", raw))
    m = _WANTS.match(bare)
    if m:
        rest = bare[m.end():].strip()
        if len(rest.split()) >= 3:
            verb = "wants to " if re.match(r"^(?:i|we)\W*(?:'d| would)? (?:\w+ )?(?:want|like|need) to\b", bare, re.I) else "wants "
            raw = "The user " + (verb if not re.match(r"^(?:i|we)\W*(?:'d| would)? (?:\w+ )?prefer", bare, re.I)
                                 else "prefers ") + rest
    if re.search(r"(?<![\w'])i(?![\w'])", raw):
        return None     # "which i have already created": the person speaking is still in it
    out = clean(raw)
    for _ in range(2):
        out = re.sub(r"^(?:please|pls|just|also|and|so|from now on|going forward|in the future|remember(?: that)?|"
                     r"keep in mind(?: that)?|note that|for the record)\b[,:]?\s+", "", out, flags=re.I)
    out = out[0].upper() + out[1:] if out else out
    if len(out.split()) < MIN_USER_WORDS or UNRESOLVED_PERSON.search(out):
        return None
    return out


#: The most cards one passage gives, by kind: a summary paragraph (a compaction summary, the
#: account of a whole session) often states several points in as many sentences; every other
#: passage gives its best sentence.
SENTENCES_PER_PASSAGE = {"summary": 2}


def statement_for(passage, correction: bool = False) -> tuple[str, str] | None:
    """(statement, the source sentence) of the best memory sentence of a coding passage, or None."""
    got = statements_for(passage, correction, limit=1)
    return got[0] if got else None


def statements_for(passage, correction: bool = False, limit: int | None = None) -> list[tuple[str, str]]:
    """(statement, the source sentence) of the passage's memory sentences, best first, at most
    `limit` (default: `SENTENCES_PER_PASSAGE` of its kind, else 1) and never two alike; every one
    passes the same checks as the best."""
    kind = passage.kind
    text = passage.text
    if limit is None:
        limit = SENTENCES_PER_PASSAGE.get(kind, 1)
    if kind == "error" or limit < 1:
        return []
    path, _, body = text.partition("\n") if kind in ("file", "written") else ("", "", "")
    path = path.rstrip(":")
    if kind == "answer" or kind == "file" or (kind == "written" and INSTRUCTION_FILE.search(path)):
        # one card at most: the user's choice, or a docs file by its strongest rule
        one = _answer(text) if kind == "answer" else _file_rule(path, body)
        return [one] if one else []
    bar = MIN_FACT + (0.2 if kind in ("report", "written") else 0.0)
    if kind == "written":
        # another doc the agent wrote gives its best sentence (headings and tables are no
        # sentences), held to a sub-agent report's bar
        text = coding.prose_lines(body)
    found: list[tuple[float, int, str, str]] = []
    for at, raw in enumerate(coding.sentences(text)):
        if kind == "user":
            out = _user_statement(raw, correction)
            score = 1.0 if out else 0.0
        else:
            out = clean(raw)
            score = coding.fact_sentence(out) + (0.1 if _WRITER_LESSON.search(out) else 0.0)
            # The agent's sentence names what it is about (a file, a tool, a setting, a service):
            # "Breaking changes require careful analysis" helps no future session.
            if score < bar or UNRESOLVED_PERSON.search(out) or not _names(out) or gap_found(out) or \
                    (kind == "report" and _VERDICT.search(out)):
                continue
        if not out or acceptable(out) is not None:
            continue
        found.append((score, at, out, raw))
    found.sort(key=lambda f: (-f[0], f[1]))     # best first; of equals, the earlier sentence
    best: dict[str, tuple[str, str]] = {}       # by the stored cards' norm: never two alike
    for _, _, out, raw in found:
        best.setdefault(normalize_statement(out), (out, raw))
        if len(best) >= limit:
            break
    return list(best.values())


#: A change of the project's state the user reports ("we moved X back to Y", "switched to Z").
_CHANGE = re.compile(r"\b(?:moved|migrated|switched|replaced|renamed|retired|dropped|deprecated|upgraded|downgraded|"
                     r"pinned|decommissioned|removed)\b", re.I)


def user_card_ok(statement: str, correction: bool) -> bool:
    """Whether a statement the offline writer drew from a turn addressed to the agent is memory: a
    rule (a rule cue), a correction, or a fact about named things; never a question, narration,
    pasted output, code, a transient state or a bare request ("add a button", "commit this")."""

    s = statement.strip()
    if len(s.split()) < 3 or coding.QUESTION.search(s) or re.search(r"\?\s+\S", s) or _WH_START.match(s):
        return False
    if coding.PASTED.search(s) or _CODE.search(s) or _TRANSIENT.search(s) \
            or "\u2026" in s:
        return False
    if correction or _IMPERATIVE_RULE.search(s):
        return True
    if REQUEST.search(s):
        return False
    return coding.fact_sentence(s) >= 0.35 or (_names(s) >= 2 and bool(coding.STATE_VERB.search(s) or _CHANGE.search(s)))


def _names(s: str) -> int:
    """Named things of a sentence: code names and the shared name patterns."""
    from ..names import named_things

    return len(coding.NAMED_CODE.findall(s)) + len(named_things(s))


#: A question about how the agent goes on right now ("Would you like to map the codebase first?",
#: "Ready to create the roadmap?", "How thorough should planning be?"): its answer steers this
#: session's next step, not the project.
_NEXT_STEP_QUESTION = re.compile(
    r"(?:^|[.!]\s+)(?:would you like|do you want|shall (?:i|we)|should (?:i|we) (?:now|first|go ahead|proceed|continue|start)|"
    r"ready to|proceed|continue|how (?:thorough|detailed|deep|much detail)|want me to)\b", re.I)


def _answer(text: str) -> tuple[str, str] | None:
    """'"Which mode?"="Interactive"' -> 'The user chose "Interactive" for: Which mode.'; None when
    every question asked how to go on now (`_NEXT_STEP_QUESTION`)."""
    pairs = [(q, a) for q, a in re.findall(r'"([^"]{3,200})"\s*=\s*"([^"]{1,200})"', text)
             if not _NEXT_STEP_QUESTION.search(q)]
    if not pairs:
        return None
    q, a = max(pairs, key=lambda qa: len(qa[1]))
    q = q.rstrip("? ").strip()
    out = f'The user chose "{a.strip()}" for: {q}.'
    words = out.split()
    if len(words) > MAX_WORDS:
        out = " ".join(words[:MAX_WORDS]).rstrip(",;:") + "."
    return out, text[:200]


#: Files written to instruct whoever works in the repo: their rules hold until someone edits them.
INSTRUCTION_FILE = re.compile(r"(?:^|/)(?:" + coding.INSTRUCTION_NAMES + r"|\.cursorrules|copilot-instructions)"
                              r"[\w.\-]*\.(?:md|mdx|markdown|rst|txt)$", re.I)


def _file_rule(path: str, body: str) -> tuple[str, str] | None:
    """The strongest rule line of a docs file, named by the file ("CLAUDE.md: never edit
    generated files."); config files (JSON, TOML, ...) give no offline card."""
    if not INSTRUCTION_FILE.search(path):
        return None     # a readme, plan or config read once may be outdated: the model writers weigh it
    name = path.rsplit("/", 1)[-1]
    best: tuple[float, str, str] | None = None
    for line in coding.prose_lines(body).splitlines():
        s = clean(line.strip())
        if not (coding.USER_RULE.search(s) or coding.LESSON_CUE.search(s)) or acceptable(s) is not None:
            continue
        if UNRESOLVED_PERSON.search(s):
            continue
        score = coding.fact_sentence(s) + (0.3 if _IMPERATIVE_RULE.search(s) else 0.0)
        if best is None or score > best[0]:
            best = (score, s, line)
    if best is None or best[0] < MIN_FACT:
        return None
    statement = f"{name}: {best[1]}"
    if len(statement.split()) > MAX_WORDS:
        statement = best[1]
    return statement, best[2]
