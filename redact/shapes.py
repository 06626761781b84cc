"""Value-shape checks shared by the detector and the secret memory. Standard library only.

Invariants: every function here is linear in the length of its input and never raises on any
string (binary garbage, lone surrogates, empty). The hook path imports this module through
`redact.memory`, so it must stay free of third-party imports.

Redacting and remembering are separate decisions. What is *redacted* is decided by the rules
(`redact.rules`, see its docstring): a value in an unmistakable credential slot (a provider's own
prefix such as `AKC`, `SK`/`AC` + 32, `xoxb-`, `npm_`; a Slack webhook path; a PEM block; a quoted
value of several words after a password key) is redacted even when `is_placeholder` says its body
is a placeholder, because redacting a placeholder costs the reader nothing while leaving a real
value leaks it. What is *remembered* (and then removed anywhere later, with no context) is decided
here alone, and placeholders are never remembered, whatever rule found them: `AP6xxxxxxxxxx`,
`npm_xxxxxxxxxxx` or `"correct horse battery staple"` are redacted where seen, not remembered.

The rule for "looks like a credential" (what may be *remembered*) is `credential_like`:
  * 8 to 512 characters, no whitespace, no quote or angle-bracket characters;
  * not a placeholder (`is_placeholder`: `xxxx`, `****`, `<token>`, `${VAR}`, `$VAR`, `%VAR%`,
    `{{ var }}`, `[REDACTED...]`, `changeme`, `your-api-key`, `example`, `dummy`, ...),
    and not ciphertext meant to be stored (`ENC[AES256_GCM,...` of SOPS, `vault:v1:...`,
    `$ANSIBLE_VAULT;...`);
  * not a typed sequence (`is_typed_sequence`: 10+ letters or digits in alphabet order, such as
    `abcdefghij` or `0123456789`): a weak password like that is still redacted where it is
    detected, but remembering it would redact the same common string everywhere;
  * at least two character classes among lower case, upper case, digits and symbols;
  * Shannon entropy of at least 2.5 bits per character and at least 5 distinct characters;
  * not code-like (`os.environ.get(...)`, `self.token`, `process.env.X`) and not an
    identifier made of letters, `_`, `.` and `-` only.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

# Words that make a value a placeholder when the value contains them (case-insensitive).
#: Length bounds of a value that may be remembered (`credential_like`). The minimum is the remembered-
#: secret lookup's `redact.memory.MIN_LEN` (not imported: this module stays out of the hook's imports
#: until a value is remembered; tests/test_redact*.py hold the two equal).
CREDENTIAL_MIN_LEN = 8
CREDENTIAL_MAX_LEN = 512

PLACEHOLDER_WORDS = (
    "changeme", "change_me", "change-me", "changeit", "your_", "your-", "yourapi", "yourkey",
    "yourtoken", "yoursecret", "yourpassword", "<your", "placeholder", "example", "dummy",
    "redacted", "xxxx", "****", "....", "replace_me", "replaceme", "replace-me", "insert_",
    "insert-", "_here", "-here", "todo", "fixme", "notreal", "not_real", "not-real",
    "fake_", "fakekey", "fake-", "sample", "foobar", "secret_value", "my_secret",
    "mysecret", "mypassword", "my_password",
)
# Whole values that are placeholders or code words (compared lower-cased).
PLACEHOLDER_VALUES = frozenset(
    """none null nil true false undefined yes no on off empty string str int bool password
    passwd pass pwd secret token key apikey api_key value required optional test testing
    tests user username admin root guest default demo sample example changeme changeit
    redacted hidden masked private public secretkey secret_key access_key accesskey
    auth bearer basic credentials credential env environment config setting settings
    n/a na tbd unknown anonymous""".split()
)

_RE_TEMPLATE = re.compile(
    r"""^(?:
        \$\{[^}]*\}?            # ${VAR}
      | \$\([^)]*\)?            # $(command)
      | \$[A-Za-z_][\w.]*       # $VAR
      | \$\d+                   # $1
      | %[A-Za-z_][\w]*%        # %VAR%
      | %\(?[\w]*\)?[sdr]       # %s, %(name)s
      | \{\{.*\}\}?             # {{ var }}
      | \{[^{}]*\}              # {todo.id}
      | <[^<>]*>?               # <token>
      | \[[^\[\]]*\]            # [PASSWORD], [REDACTED:x]
      | @[A-Za-z_]+@            # @VAR@
      | \#\{[^}]*\}             # #{var}
      | process\.env\..*
      | os\.environ.*
      | getenv\(.*
      | env\(.*
    )$""",
    re.X | re.S,
)
# Ten letters or digits in alphabet order (case-insensitive): typed by a person, never generated.
# (A random 40-character base62 token holds such a run with probability ~1e-16.)
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_SEQUENCES = "|".join([_ALPHABET[i:i + 10] for i in range(len(_ALPHABET) - 9)] + ["0123456789"])
_RE_SEQUENCE = re.compile("(?i)" + _SEQUENCES)
_RE_SEQUENCE_LOWER = re.compile(_SEQUENCES)  # on ASCII text lowered first: same answer, ~6x faster
# Encrypted values that are designed to be stored and shared: SOPS, Vault transit, Ansible Vault.
_RE_CIPHERTEXT = re.compile(r"^(?:ENC\[(?:AES256_GCM|[A-Z0-9_]+,)|vault:v\d+:|\$ANSIBLE_VAULT;)")
# Values made only of typical filler characters: xxxx, XXXX, ****, ...., ####, 0000, ----.
_RE_FILLER = re.compile(r"^[xX*.#0\-_•]+$")
# Identifier or attribute chain, optionally a call: self.token, config.get(, AutoTokenizer.from_pretrained(
_RE_CODE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*)?$", re.S)
_RE_IDENT = re.compile(r"^[A-Za-z_.\-]+$")
_RE_URLISH = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.\-]*://|www\.|/[\w.\-]+/|\./|\.\./|~/)")
_RE_DIGITS = re.compile(r"^[0-9.,:\-+]+$")
_RE_WORDY = re.compile(r"^[A-Za-z0-9_\-]+$")
_BAD_CHARS = re.compile(r"[\s\"'<>`]")
_RE_PLACEHOLDER_WORD = re.compile("|".join(re.escape(w) for w in PLACEHOLDER_WORDS))
_RE_LOWER = re.compile(r"[a-z]")
_RE_UPPER = re.compile(r"[A-Z]")
_RE_DIGIT = re.compile(r"[0-9]")
_RE_OTHER = re.compile(r"[^a-zA-Z0-9]")


_CLOG2C = [0.0] + [c * math.log2(c) for c in range(1, 257)]


def _clog2c(c: int) -> float:
    return _CLOG2C[c] if c <= 256 else c * math.log2(c)


@functools.lru_cache(maxsize=256)  # a value is checked by a rule, then again before it is remembered
def shannon(value: str) -> float:
    """Shannon entropy of `value` in bits per character (0.0 for the empty string)."""
    n = len(value)
    if n == 0:
        return 0.0
    # H = log2(n) - sum(c * log2(c)) / n over the character counts c
    counts = Counter(value).values()
    table = _CLOG2C.__getitem__ if n <= 256 else _clog2c  # no count exceeds n
    return max(0.0, math.log2(n) - sum(map(table, counts)) / n)


@functools.lru_cache(maxsize=256)
def char_classes(value: str) -> int:
    """How many of lower / upper / digit / other (ASCII) character classes occur in `value`."""
    return ((_RE_LOWER.search(value) is not None) + (_RE_UPPER.search(value) is not None)
            + (_RE_DIGIT.search(value) is not None) + (_RE_OTHER.search(value) is not None))


def is_typed_sequence(value: str) -> bool:
    """Holds 10+ letters or digits in alphabet order (`abcdefghij`, `KLMNOPQRST`, `0123456789`).

    In a provider token (`AIzaSyabcdefghijklmnopqrstuvwxyz1234567`) that marks a documentation
    example: a random token holds such a run with probability ~1e-16."""
    if value.isascii():
        return _RE_SEQUENCE_LOWER.search(value.lower()) is not None
    return _RE_SEQUENCE.search(value) is not None  # Unicode case folding (`ſ`, `K`) as before


@functools.lru_cache(maxsize=256)  # same: rule checks, then `credential_like`
def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret instead of being one (documented in the module)."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    low = v.lower()
    if low in PLACEHOLDER_VALUES:
        return True
    if _RE_FILLER.match(v) or _RE_TEMPLATE.match(v):
        return True
    if _RE_PLACEHOLDER_WORD.search(low) or _RE_CIPHERTEXT.match(v):
        return True
    # A body dominated by filler characters after a short prefix: AKIAXXXXXXXXXXXXXXXX, fo1_xxxx...
    filler = v.count("x") + v.count("X") + v.count("*")
    if len(v) >= 8 and filler >= 0.6 * len(v):
        return True
    return False


_RE_PIECES = re.compile(r"[._\-/:]+")
_RE_WORDPIECE = re.compile(r"^(?:[A-Za-z]+\d{0,6}|\d+|[A-Za-z0-9]{1,4})$")


def is_wordy(value: str) -> bool:
    """Names made of words: `struct_X509_pubkey_st`, `jetbrains.mps.v8_elimination`, `jjwt-jackson-0.11.2`."""
    pieces = [p for p in _RE_PIECES.split(value) if p]
    if len(pieces) < 2:
        return False
    return all(_RE_WORDPIECE.match(p) for p in pieces)


def dominant_char(value: str) -> float:
    """Share of the most frequent character (1.0 for 'aaaa')."""
    if not value:
        return 1.0
    return max(Counter(value).values()) / len(value)


@functools.lru_cache(maxsize=256)
def is_code_like(value: str) -> bool:
    """Identifiers, attribute chains and calls: `self.token`, `os.getenv(`, `AutoTokenizer.from_pretrained(`."""
    v = value.strip()
    if not v:
        return True
    if _RE_CODE.match(v):
        head, paren, _ = v.partition("(")
        if paren and ("." in head or "_" in head or "::" in head):
            return True  # a call: Base64.url_encode64(...), os.getenv(...)
        if not any(ch.isdigit() for ch in head):
            return True
    return is_wordy(v)


def is_url_or_path(value: str) -> bool:
    return bool(_RE_URLISH.match(value))


def token_shaped(value: str, min_len: int = 16, min_entropy: float = 3.0) -> bool:
    """A random-looking single token: long enough, letters and digits, high entropy, no filler,
    not a name made of words (`jetbrains.mps.v8_elimination`)."""
    if len(value) < min_len or len(value) > 1024 or _BAD_CHARS.search(value):
        return False
    if is_placeholder(value) or is_url_or_path(value) or is_wordy(value):
        return False
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if not (has_digit and has_alpha):
        return False
    return shannon(value) >= min_entropy


def password_shaped(value: str, min_len: int = 6) -> bool:
    """A value set after a password-like key: not a placeholder, not code, some variety."""
    if len(value) < min_len or len(value) > 512:
        return False
    if is_placeholder(value) or is_url_or_path(value) or is_code_like(value):
        return False
    if _RE_DIGITS.match(value) and len(value) < 12:
        return False
    if _RE_IDENT.match(value):
        return False
    if len(set(value)) < 4:
        return False
    return char_classes(value) >= 2 or len(value) >= 12


def secret_shaped(value: str, min_len: int = 8) -> bool:
    """A value set after a token / secret / api-key key."""
    if len(value) < min_len or len(value) > 1024:
        return False
    if is_placeholder(value) or is_url_or_path(value) or is_code_like(value):
        return False
    if _RE_IDENT.match(value):
        return False
    if _RE_DIGITS.match(value) and not (len(value) >= 16 and value.isdigit()):
        return False  # long all-digit ids (client ids, secrets) still count; ports and counts do not
    if len(set(value)) < 5:
        return False
    if char_classes(value) < 2 and not value.isdigit():
        return False
    return shannon(value) >= 2.5


def credential_like(value: str, *, allow_typed_sequence: bool = False) -> bool:
    """Whether a detected value may be remembered (the rule is documented in the module docstring).

    `allow_typed_sequence=True` drops the typed-sequence condition: the engine uses that to remove
    other occurrences of a detected value in the same text, which is safe for any credential."""
    if not CREDENTIAL_MIN_LEN <= len(value) <= CREDENTIAL_MAX_LEN:
        return False
    if _BAD_CHARS.search(value):
        return False
    if is_placeholder(value) or (not allow_typed_sequence and is_typed_sequence(value)):
        return False
    if is_code_like(value) or _RE_IDENT.match(value):
        # Letters-only provider tokens (hf_..., random mixed case) still qualify when long and random.
        if not (_RE_WORDY.match(value) and len(value) >= 20 and char_classes(value) >= 2
                and shannon(value) >= 3.5):
            return False
    if len(set(value)) < 5 or char_classes(value) < 2:
        return False
    return shannon(value) >= 2.5
