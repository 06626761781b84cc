"""Credentials told in prose: a sentence that names a credential, links it (`is`, `ist`, `es`,
`:`, `->`) and gives its value, in English and the other languages people write to agents in.

  * `h_told`: a value with a credential's shape after a secret word, up to eight words and a link
    (rules told-credential, told-password);
  * `h_told_phrase`, `h_told_bare_phrase`: a passphrase told in quotes, or with none up to an
    opening bracket or the line's end (rules told-phrase, told-bare-phrase);
  * `h_prose`: a password told in another language (rule prose-password).

Prose is weaker evidence than a key and its value: each value must read as a credential
(`shapes.credential_like`, `told_passphrase`), and words between that name something else (its
hash, its id, its length) or describe the password make it none. Same contract as every handler
(`redact.handlers`): byte spans out, linear in the text, no logging.
"""

from __future__ import annotations

import re

from . import shapes
from .keys import classify_key, names_foreign_credential
from .patterns import ABOUT_A_PASSWORD, CREDENTIAL_WORD, FUNCTION_WORDS
from .spans import first as _first, text as _text


#: Words between a secret word and its value that make the value something else: its hash, its id,
#: its name, its length, where it lives (`the token id is ...`, `the key fingerprint is SHA256:...`).
_TOLD_NOT_IT = frozenset(
    """fingerprint fingerprints hash hashes hashed checksum digest sha sha1 sha256 id ids uuid name names
    prefix suffix length format file path variable var field header hint type kind version
    expiry ttl count number scope scopes usage contract algorithm refresh per""".split())
#: The links of `patterns.TOLD_LINK` as words (and `now`: `is now`).
_LINK_WORDS = frozenset("is are was ist lautet est es era jest adalah ialah hai sono è é är это são now".split())
#: The first word between a password's word and its link when it says whose password it is (`the
#: password for the staging db is`, `the passphrase we use is`, `the password you sent:`, `la
#: contraseña del wifi es`); any other word names a thing of its own (`the password strength label
#: is "Very Strong 4"`).
_WHOSE = frozenset("""for of on to at in from we i you he she they that which this our your my their his
    her its the a an
    de del des du da do di dei della für fuer vom von zum zur pour para per van voor för til dla na""".split())
#: A code mark in a sentence (`for \`deploy\` on staging`): a name, not code between.
_TICKED_NAME = re.compile(r"`[^`\s]{1,60}`")


def _gap_says_it(gap: str, whose: bool = False) -> bool:
    """Whether the words `gap` between a secret's word and its value leave the value the secret: no
    template or code (`_TOLD_CODE_GAP`; a name in backquotes is a name), no word that names
    something else (`_TOLD_NOT_IT`); with `whose`, its first word, if any, says whose it is
    (`_WHOSE`)."""
    gap = _TICKED_NAME.sub("x", gap.lower())
    if _TOLD_CODE_GAP.search(gap):
        return False
    words = [w.strip(".,;:()[]'\"*") for w in gap.split()]
    if any(w in _TOLD_NOT_IT for w in words):
        return False
    words = [w for w in words if w]
    return not (whose and words and words[0] not in _WHOSE and words[0] not in _LINK_WORDS)
#: Ids and references that follow a secret word in a sentence: an address, a cloud resource's id, a
#: digest, an image tag, a typed id (`proj_`, `req_`).
_TOLD_ID = re.compile(r"^(?:0x|proj_|req_|msg_|org-|i-|sg-|ami-|vpc-|subnet-|arn:|sha\d*[:-]|v\d+\.)")


def h_told(rule, sp, data: bytes):
    """A credential told in a sentence: a secret word (group 1, classified), up to eight words,
    a link (`is`, `è`, `ist`, `->`, `:` after a word), the value (group 2; on the next line too);
    rule `told-password`: a password's word, then its value with no link. The value
    must read as a credential (`shapes.credential_like`): random (16 characters or more of three
    kinds, or 32+ hex) or a person's password (a symbol, or both cases and a digit); no id, digest,
    pair or path; no word between names something else (`_TOLD_NOT_IT`: its hash, its id, its usage)."""
    cls = classify_key(_text(data, *sp[1]))
    if cls is None:
        return
    gap = _text(data, sp[1][1], sp[2][0])
    ticked = gap.endswith(("`", "*"))
    if ticked:
        gap = gap[:-1]   # the value's own opening mark (`is \`v\``, `is **v**`), not code between
    if not _gap_says_it(gap, whose=ticked):
        return  # template or code between (`password }}@{{ .Values.db.host }}:5432`), its id, its hash;
        # a thing of its own before a value in backquotes (`the key binding is \`Ctrl+Alt+F2\``)
    s, e = sp[2]
    if after_a_digest(data, s):
        return  # a Go module's hash in go.sum (`.../credentials v1.17.47 h1:...=`), an image's digest
        # (`cosign verify --key cosign.pub ghcr.io/acme/app@sha256:...`)
    value = _text(data, s, e).rstrip(".,;:!?)")
    if not shapes.credential_like(value) or shapes.is_date(value) or shapes.not_a_value(value):
        return
    if shapes.is_url_or_path(value) or _TICKET.match(value) or "**" in value or _TOLD_ID.match(value):
        return
    if "=" in value.rstrip("=") or ":" in value:
        return  # `prompt_tokens=1234`, `host:port`: a pair, not a value
    if "/" in value and not (len(value) >= 20 and shapes.shannon(value) >= 4.0 and "//" not in value):
        return  # a path, a URL (`http://localhost`), not base64
    if (shapes.is_code_like(value) or shapes.is_wordy(value) or _CAMEL_NAME.match(value)) and not _TOLD_SYMBOL.search(value):
        return  # an identifier (`credentialsMatchV1`, `build-77`), not a password
    random = len(value) >= 16 and shapes.token_shaped(value, min_len=16, min_entropy=3.5) and (
        shapes.char_classes(value) >= 3 or _HEX_KEY.fullmatch(value))
    person = len(value) >= 8 and (
        (_TOLD_SYMBOL.search(value) and shapes.char_classes(value) >= 3)
        or (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)))
    if not (random or person):
        return   # random (16+, three kinds, or 32+ hex), or a person's password: not a name, a version
    yield s, s + len(value.encode("utf-8", "surrogatepass")), cls[1]


def told_passphrase(value: str, digit: bool = True) -> bool:
    """Whether a quoted `value` with spaces, told after a password word in a sentence (or given to
    a password flag: `digit=False`, a command's slot is no sentence), is a passphrase: 2 to 8
    words, 8 characters or more, a digit, and no word of a sentence (`"your birth year plus 2
    letters"`, `"in the .env file"`) or about a password (`"at least 12 characters"`)."""
    words = value.lower().split()
    return (2 <= len(words) <= 8 and len(value) >= 8 and (not digit or any(c.isdigit() for c in value))
            and not any(w in FUNCTION_WORDS for w in words) and not ABOUT_A_PASSWORD.search(value)
            and not any(CREDENTIAL_WORD.match(w) for w in words) and shapes.context_secret(value, quoted=True))


def h_told_phrase(rule, sp, data: bytes):
    """A passphrase told in a sentence between quotes (`The signing key passphrase for the release
    builds is "maple river 7 lantern"`; double, single, curly or backquotes): a password word
    (group 1), one to eight words, a link, the quoted words (groups 2 to 5), read as
    `told_passphrase`; the words between say whose it is, and nothing else (`_gap_says_it`)."""
    cls = classify_key(_text(data, *sp[1]))
    found = _first(sp, (2, 3, 4, 5))
    if cls is None or cls[0] != "pw" or found is None:
        return
    g, s, e = found
    if not _gap_says_it(_text(data, sp[1][1], s - (3 if g == 5 else 1)), whose=True):
        return
    if told_passphrase(_text(data, s, e)):
        yield s, e, cls[1]


#: Words that describe a password rather than spell one (`the password is Base64 encoded twice`).
_DESCRIBES_A_PASSWORD = frozenset(
    """encoded encrypted hashed salted stored sent saved kept logged printed shown hidden masked redacted
    required optional needed ignored generated rotated expired expires reset changed updated wrong invalid
    incorrect missing empty blank configured case sensitive insensitive weak strong long short secure
    unique random temporary""".split())
#: Function words beyond `FUNCTION_WORDS`: English pronouns and conjunctions (`whatever you set
#: during install`), and those of the other languages people tell passwords in (`es la de siempre`).
_MORE_FUNCTION_WORDS = frozenset(
    """i you we they he she me us them whatever whichever during after before when while until if so
    but about into onto over under what which who
    la el los las de del en con por para que un una der die das den dem und mit im ein eine le les des
    du et une pour avec do da em il lo di che per y e och""".split())
#: A link or a user's word inside a told phrase makes it a sentence of its own (`K9x y el usuario es root`).
_SENTENCE_WORDS = _LINK_WORDS | frozenset("user username usuario benutzer utilisateur utente login".split())


def h_told_bare_phrase(rule, sp, data: bytes):
    """A passphrase told in a sentence with no quotes (group 2, after a password word, group 1, and
    a link): up to an opening bracket or the line's end, so where it ends is told; 3 to 8 words, or
    2 with a digit; no word about it (`_DESCRIBES_A_PASSWORD`, `ABOUT_A_PASSWORD`), no credential word,
    at most one function word when it is long (5 words) or holds a digit (`tangerine wolves debate
    slowly at noon`, `Sommerregen im Hafen 1987`)."""
    cls = classify_key(_text(data, *sp[1]))
    if cls is None or cls[0] != "pw":
        return
    if not _gap_says_it(_text(data, sp[1][1], sp[2][0]), whose=True):
        return
    s, e = sp[2]
    value = _text(data, s, e).rstrip(" \t.,;:!?")
    if any(c in value for c in "«»„“”「」『』‘’"):
        return   # quoted after all (`est « v w »`): rule prose-password reads it
    if any(c in value for c in ",;–—") or " - " in value:
        return   # the sentence goes on (`ist jetzt hOfRy6CU7YmQ?bn6 – bitte im Tableau-Server`)
    words = value.split()
    lowered = [w.lower().strip(".,;:!?") for w in words]
    digit = any(c.isdigit() for c in value)
    if not (3 <= len(words) <= 8 or (len(words) == 2 and digit)) or any(len(w) > 24 for w in words):
        return
    function = sum(w in FUNCTION_WORDS or w in _MORE_FUNCTION_WORDS for w in lowered)
    if function > (1 if len(words) >= 5 or digit else 0):
        return
    if (any(w in _DESCRIBES_A_PASSWORD or w in _SENTENCE_WORDS or CREDENTIAL_WORD.match(w) for w in lowered)
            or ABOUT_A_PASSWORD.search(value) or names_foreign_credential(value)
            or not shapes.context_secret(value, quoted=True)):
        return
    yield s, s + len(value.encode("utf-8", "surrogatepass")), cls[1]


#: A digest's algorithm right before a value (`@sha256:`, `sha512:`, `md5:`, go.sum's `h1:`).
_DIGEST_BEFORE = re.compile(rb"(?i)(?:h1|sha(?:1|224|256|384|512)|md5|blake2b?):$")


def after_a_digest(data: bytes, s: int) -> bool:
    """Whether the value at byte `s` follows a digest's algorithm (`_DIGEST_BEFORE`): a hash, not a
    credential."""
    return bool(_DIGEST_BEFORE.search(data, max(0, s - 8), s))
#: Template or code markup between a secret word and a value: they are not a sentence.
_TOLD_CODE_GAP = re.compile(r"\{\{|\}\}|\$\{|\{%|%\}|[=`]|\\[nrt\"]")
#: A ticket's key (`SEC-142`, `OPS-7`): what a sentence about a secret names, not the secret.
_TICKET = re.compile(r"[A-Z][A-Z0-9]{1,9}-\d{1,6}$")
#: A camelCase name of words of two letters or more, a version at most (`refreshTokenV1`); a person's
#: password ends in a number more often (`blueOcean176`).
_CAMEL_NAME = re.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)+[A-Z]?\d?$")
#: A key in hex, 32 digits or more (Mailgun, Datadog, OpenRouter's body).
_HEX_KEY = re.compile(r"[0-9a-f]{32,}|[0-9A-F]{32,}")
#: A character no identifier holds (`Rpt#CoAEKP92745`).
_TOLD_SYMBOL = re.compile(r"[!#$%&*+@^~?]")


#: Where a value told in prose ends: a quote, CJK or full-width punctuation or bracket.
_PROSE_END = re.compile("[»«」『』「”“„，。、；！？（）【】《》]")


def h_prose(rule, sp, data: bytes):
    """A password told in prose (`patterns.PROSE_PASSWORD`), up to its closing quote or punctuation:
    prose, so it must look like one: 8 or more characters, letters and digits, in a credential
    context (words joined by `-` or `_` count: `Bakso-Malang_2025`). Between quotes (`« ... »`,
    `"..."`) it may be a passphrase: letters and either digits or three words or more."""
    phrase = next((g for g in sp[1:-1] if g[0] >= 0), None)
    s, e = phrase or sp[-1]
    value = _text(data, s, e)
    cut = None if phrase else _PROSE_END.search(value)
    if cut:
        value = value[: cut.start()]
    value = value.rstrip(".,;)")   # `Azerty123!` keeps its `!`
    if phrase:
        lead = value[: len(value) - len(value.lstrip())]
        value = value.strip()
        s += len(lead.encode("utf-8", "surrogatepass"))
        if " " in value and (ABOUT_A_PASSWORD.search(value)
                             or any(w in FUNCTION_WORDS for w in value.lower().split())):
            return   # `„mindestens 12 Zeichen lang“`, `« dans le coffre Bitwarden »`, `"empty by default"`: about it
        shaped = any(c.isdigit() for c in value) or len(value.split()) >= 3
    else:
        shaped = any(c.isdigit() for c in value)
    if (len(value) >= 8 and shaped and any(c.isalpha() for c in value)
            and shapes.context_secret(value)):
        yield s, s + len(value.encode("utf-8", "surrogatepass")), rule.label
