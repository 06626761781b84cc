"""Keep scores for passages of a person working with a coding agent (consolidate.classify uses them).

A coding session keeps its durable knowledge in a few places (issue 13): the user's instructions,
preferences and corrections; the agent's conclusions ("the root cause is ...", "X requires Y",
"this repo uses ...", "the fix was ..."); final summaries and compaction summaries; the user's
answers to the agent's questions; docs and config files the agent read; failed commands. The
agent's step narration ("Let me check ...", "Now I'll add ..."), status lines ("All green"),
questions and one-word approvals ("yes", "ok", "commit it") are not.

Every score here is read off general English and coding grammar, sentence by sentence, never a
word list of one project:

* `fact_sentence` : a present-tense statement about the project or its tools: a named thing
  (backticked identifier, path, host, port, version, CamelCase or hyphenated name, well-known
  tool) with a state verb ("is", "uses", "requires", "lives in", "defaults to", "doesn't
  support", "is missing", "only ..."), or a lesson/reason cue ("because", "root cause", "the fix",
  "instead of", "fails", "must");
* `narration_sentence` : the agent saying what it does next or just did ("Let me ...", "Now add
  ...", "I've updated ...", "Created X", "Done.").

`agent_user_keep` scores a human turn addressed to the agent; `agent_text_keep` an assistant
paragraph, a summary or a sub-agent report; `file_keep` / `written_keep` / `error_keep` /
`answer_keep` the tool passages `consolidate.passages.tool_passages` cuts. All return a probability-like score in [0, 1];
the settings threshold (`consolidate.keep_threshold`, 0.5) decides.
"""

from __future__ import annotations

import re

#: A named thing of coding work: backticks, paths, file names, ports and versions, CamelCase,
#: snake_case and hyphenated identifiers, CLI flags.
NAMED_CODE = re.compile(
    r"`[^`\n]{2,80}`|(?<![\w/])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)+|\b[\w\-]+\.(?:md|json|ts|tsx|js|jsx|py|ex|exs|rb|go|"
    r"rs|toml|ya?ml|sh|sql|css|html|vue|lock|env|cfg|ini|txt)\b|\bport \d{2,5}\b|:\d{4,5}\b|\bv?\d+\.\d+(?:\.\d+)?\b|"
    r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+\b|\b[a-z]+_[a-z0-9_]+\b|\b[a-z][a-z0-9]*(?:-[a-z0-9]+){1,4}\b|(?<!\w)--[a-z][\w\-]+")
#: A present-tense state of the project: what things are, use, need, lack, default to, live in.
STATE_VERB = re.compile(
    r"\b(?:is|are|isn'?t|aren'?t|was not|has no|have no|has|have|uses?|using|requires?|needs?|lacks?|lives? (?:in|at|under)|"
    r"(?:is|are) (?:in|at|under|on|defined|stored|configured|set|located|called|named|missing|required|needed|"
    r"protected|generated|ignored|gitignored|deprecated|only|not|always|never)|defaults? to|points? to|"
    r"runs? (?:\w+ly )?(?:on|at)|(?:served|hosted|reachable) (?:on|at)|listens? (?:on|at)|depends? on|supports?|"
    r"doesn'?t|don'?t|does not|do not|cannot|can'?t|won'?t|must|should|only|"
    r"expects?|returns?|reads?|writes?|stores?|calls?|loads?|exists?|contains?|holds?|means?|breaks?|fails?|"
    r"works? (?:only|with|when|if)|"
    # German (a team's sessions are often not in English): ist, sind, hat, verwendet, braucht, ...
    r"ist|sind|hat|haben|verwendet|nutzt|benutzt|benötigt|braucht|liegt (?:in|unter)|läuft (?:auf|unter)|"
    r"hängt von|unterstützt|kann nicht|muss|müssen|sollte|erwartet|liefert|speichert|enthält|existiert|bedeutet)\b",
    re.I)
#: A lesson, reason, decision or rule said in so many words.
LESSON_CUE = re.compile(
    r"\b(?:because|since (?:it|the|we|this)|so that|due to|the reason|root cause|caused by|the (?:problem|issue|bug|"
    r"culprit|cause|fix|solution|trick|catch) (?:is|was)|turns? out|it seems|which means|instead of|rather than|"
    r"not supported|doesn'?t support|doesn'?t exist|does not exist|no such|is missing|are missing|not found|"
    r"fails?|failed|error|rejected|denied|protected|requires?|must|need to|needs to|have to|has to|only works|"
    r"workaround|gotcha|careful|make sure|don'?t|never|always|prefer|convention|by default|decided|decision|"
    r"chose|going with|we'?ll use|use \S+ (?:not|instead)|out of scope|deferred|superseded|replaced|no longer|"
    r"renamed|moved to|switched to|is now|are now|"
    r"(?<=\w\s)(?:fixed|resolved|solved|worked around|avoided) (?:by|with|via)|"   # "X resolved with Y", not "Done, fixed by"
    # German: weil, deshalb, die Ursache, das Problem ist, stattdessen, fehlt, erfordert, nie, ...
    r"weil|deshalb|daher|aufgrund|der grund|die ursache|(?:das problem|die lösung|der fehler|der trick) (?:ist|war)|"
    r"stellt sich heraus|es scheint|das heißt|statt|anstatt|stattdessen|nicht unterstützt|existiert nicht|"
    r"gibt es nicht|fehlt|fehlen|nicht gefunden|schlägt fehl|fehlgeschlagen|abgelehnt|verweigert|erfordert|"
    r"muss|müssen|nur wenn|vorsicht|achtung|stell sicher|niemals|nie|immer|bevorzug\w*|konvention|standardmäßig|"
    r"entschieden|entscheidung|gewählt|wir nehmen|verschoben|ersetzt|nicht mehr|umbenannt|umgestellt auf|"
    r"ist jetzt|sind jetzt|(?:behoben|gelöst) (?:durch|mit))\b", re.I)
#: The agent narrating a step: what it does next, or what it just did.
NARRATION = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|good|great|perfect|excellent|now|next|first|then|alright|right|ah|oh|got it|done)[,!.:\-\u2014]*\s+)*"
    r"(?:let me|let's|i'll|i will|i'm going to|i need to|i'm|i am|i've|i have|we'll|we've|now (?:add|update|create|"
    r"let|i|we|the)|running|starting|launching|checking|looking|reading|creating|adding|updating|writing|"
    r"(?:created|added|updated|wrote|fixed|removed|deleted|committed|pushed|merged|ran|moved|renamed|implemented|"
    r"changed|installed|replaced|established|verified|confirmed|configured|refactored|converted|extracted)\b|"
    r"[a-z]{3,}ed\s+(?:the|a|an|all|both|it|its|this|that|these|those|\d+)\b|here'?s|here is|all (?:green|done|set|tests pass)|done\b|complete\b|completed\b|"
    r"status:|next:|completed:|summary:)", re.I)
#: A setting with its value: "port is 1100", "timeout of 30s", "version 18".
NUMBERED_SETTING = re.compile(r"\b(?:port|version|timeout|limit|ttl|node|python|size)\b[^.;\n]{0,20}?\d+", re.I)
PASSIVE = re.compile(r"\b(?:is|are|isn'?t|aren'?t)\s+(?:\w+ly\s+)?\w{3,}ed\b", re.I)
QUESTION = re.compile(r"\?\s*[\"')\]]*\s*$")
_SENT = re.compile(r"\s+(?=[A-Z]{3,}:\s)|(?<![.][.])(?<=[.!?])\s+(?=[A-Z`\"'(\[*])|\n+|\s+[-*\u2022]\s+(?=\S)|(?<=:)\s+(?=\d+[.)]\s)")
#: Pasted terminal output or a table: box drawing, rules of = or -, check marks.
PASTED = re.compile(r"[\u2500-\u257f\u2550-\u256c]|={6,}|-{6,}|[\u2713\u2714\u2717\u2718\u26a0]")
#: Rule cues in what a person tells the agent.
USER_RULE = re.compile(
    r"\b(?:always|never|don'?t|do not|stop|avoid|prefer|i'?d (?:like|rather|prefer)|i want|we want|i need|we need|"
    r"should(?:n'?t)?|must|make sure|ensure|from now on|going forward|every time|whenever|each time|instead|"
    r"rather than|not \w+ but|no longer|i meant|i mean|remember|keep in mind|the (?:rule|convention) is|"
    r"we use|we'?re using|use \S+ (?:not|instead)|is (?:redundant|superseded|out of scope)|kill|drop|"
    r"let'?s (?:do|go with|use|keep|stick)|out of scope|for v\d|phase \d+ (?:is|should)|"
    # German: immer, nie, vermeide, bevorzuge, ich möchte, sollte, muss, stell sicher, ab jetzt, ...
    r"immer|nie|niemals|vermeide\w*|bevorzug\w*|lieber|ich möchte|wir möchten|ich will|wir wollen|ich brauche|"
    r"wir brauchen|soll|sollte|sollten|sollen|muss|müssen|stell sicher|achte darauf|ab jetzt|von nun an|"
    r"in zukunft|künftig|jedes mal|immer wenn|wann immer|stattdessen|statt|anstatt|nicht mehr|ich meinte|"
    r"merk dir|denk daran|im hinterkopf|wir verwenden|wir nutzen|wir benutzen|die (?:regel|konvention) ist|"
    r"außerhalb des umfangs)\b", re.I)
ACK = re.compile(r"^\W*(?:yes|yep|yeah|ok(?:ay)?|sure|go|go ahead|continue|proceed|do it|lgtm|thanks?|thank you|"
                 r"great|perfect|nice|cool|done|y|n|no|"
                 r"ja|jep|jo|passt|danke|weiter|mach weiter|mach das|los|klar|gut|super|perfekt|nein)\W*$", re.I)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text or "") if s and s.strip() and re.search(r"[A-Za-z]", s)]


def narration_sentence(s: str) -> bool:
    """The agent narrating a step, or a status line, with no lesson in it."""
    return bool(NARRATION.match(s)) and not LESSON_CUE.search(s)


def fact_sentence(s: str) -> float:
    """How much a sentence reads as durable knowledge about the project (0 none, 1 strong):
    a lesson/rule cue, a named thing with a present-tense state verb; questions and narration are 0."""
    s = s.strip()
    if len(s.split()) < 4 or QUESTION.search(s) or narration_sentence(s) or PASTED.search(s):
        return 0.0
    from .names import named_things   # the shared name patterns (known tools, proper names)

    named = max(len(NAMED_CODE.findall(s)) + len(NUMBERED_SETTING.findall(s)), len(named_things(s)))
    lesson = bool(LESSON_CUE.search(s))
    state = bool(STATE_VERB.search(s) or PASSIVE.search(s))
    score = 0.0
    if lesson:
        score += 0.45
    if named and state:
        score += 0.35 + 0.1 * min(2, named - 1)
    elif named:
        score += 0.1
    elif state:
        score += 0.1
    if len(s.split()) >= 10:
        score += 0.05
    return min(1.0, score)


def agent_text_keep(text: str, kind: str) -> float:
    """An assistant paragraph, a summary paragraph or a sub-agent report: its best sentence."""
    sents = sentences(text)
    if not sents or (kind == "summary" and TRANSIENT_SECTION.search(text)):
        return 0.0
    best = max(fact_sentence(s) for s in sents)
    narr = sum(1 for s in sents if narration_sentence(s)) / len(sents)
    score = best - 0.05 * narr
    if kind in ("summary", "report"):
        score -= 0.1
    return max(0.0, min(1.0, score + 0.1))


def agent_user_keep(text: str, *, correction: bool) -> float:
    """A human turn addressed to the agent: instructions with a rule cue, corrections, decisions
    and statements about the project are kept; approvals, bare commands and questions are not."""
    t = (text or "").strip()
    words = t.split()
    if not words or ACK.match(t):
        return 0.0
    if PASTED.search(t) and len(PASTED.findall(t)) >= 3:
        return 0.15   # pasted tool output: the agent's reply says what matters in it
    if correction:
        return 0.9
    sents = sentences(t) or [t]
    asks = sum(1 for s in sents if QUESTION.search(s)) / len(sents)
    rule = bool(USER_RULE.search(t))
    named = len(NAMED_CODE.findall(t))
    score = 0.1
    if rule:
        score += 0.45
    if len(words) >= 12:
        score += 0.15
    if len(words) >= 20:
        score += 0.1
    if len(words) >= 35:
        score += 0.15
    if named:
        score += 0.05 * min(3, named)
    score += 0.5 * max(fact_sentence(s) for s in sents)   # a statement about the project
    score -= (0.15 if len(words) >= 25 else 0.35) * asks
    if t.startswith("/"):
        score -= 0.2   # a slash command line
    return max(0.0, min(1.0, score))


#: Files that state how to work in a project (agent instructions, readme, contributing guide) or
#: its setup (package manifests and tool configs): kept whenever they are read.
#: The names of files that tell an agent how to work in a project (the offline writer's
#: `INSTRUCTION_FILE` is built from them too).
INSTRUCTION_NAMES = "CLAUDE|AGENTS|GEMINI|CONTRIBUTING|CONVENTIONS|STYLE|HACKING|DEVELOPMENT"
RULES_FILE = re.compile(r"(?:^|/)(?:" + INSTRUCTION_NAMES + r"|README)"
                        r"[\w.\-]*$|(?:^|/)(?:package\.json|pyproject\.toml|Cargo\.toml|go\.mod|mix\.exs|Makefile|"
                        r"Justfile|Gemfile|composer\.json|deno\.json|tsconfig[\w.\-]*\.json|\.env\.example|"
                        r"config/[\w.\-]+\.exs|[\w.\-]+\.config\.(?:js|cjs|mjs|ts)|\.[\w\-]+rc(?:\.\w+)?)$", re.I)
#: Compaction-summary sections that hold the state of the moment, not knowledge.
TRANSIENT_SECTION = re.compile(
    r"^\W*(?:\d+\.\s*)?\**(?:pending tasks?|current work|optional next step|next steps?|all user messages|"
    r"analysis|primary request and intent)\b|^\W*(?:if you need specific details|this session is being continued|"
    r"summary:\s*$)", re.I)


def file_keep(text: str) -> float:
    """A docs or config file the agent read: a rules file (`RULES_FILE`) reaches the writer whole;
    another doc or config (a plan, a design note, a CI workflow) when a line of it states a rule or
    a lesson."""
    path, _, body = text.partition("\n")
    if len(body.split()) < 5:
        return 0.0
    if RULES_FILE.search(path.rstrip(":")):
        return 0.8
    cued = sum(1 for line in body.splitlines() if USER_RULE.search(line) or LESSON_CUE.search(line))
    return min(0.7, 0.4 + 0.1 * cued)


def prose_lines(body: str) -> str:
    """A markdown document without its headings, tables and code fences."""
    return "\n".join(ln for ln in body.splitlines()
                     if ln.strip() and not ln.lstrip().startswith(("#", "|", "```")))


def written_keep(text: str) -> float:
    """What the agent wrote into a documentation file (``path:\nbody``): a rules file
    (`RULES_FILE`) whole, another doc (notes, a plan, a conventions page) by its best sentence,
    scored like a sub-agent's report."""
    path, _, body = text.partition("\n")
    if len(body.split()) < 5:
        return 0.0
    if RULES_FILE.search(path.rstrip(":")):
        return 0.8
    prose = prose_lines(body)
    return agent_text_keep(prose, "report") if prose else 0.0


def error_keep(text: str) -> float:
    """A failed command: kept when its error says why (a rule, a missing piece, a refusal), not
    for a bare stack trace or a test failure listing."""
    return 0.6 if LESSON_CUE.search(text) and len(text.split()) >= 6 else 0.2


def answer_keep(text: str) -> float:
    """The user's answers to the agent's questions: the user's decisions."""
    return 0.85 if len(text.split()) >= 3 else 0.3
