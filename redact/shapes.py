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
  * at least two character classes among lower case, upper case, digits and symbols (with
    three, a value made of words still counts: `hunter2-Xq9-Mv77`);
  * Shannon entropy of at least 2.5 bits per character and at least 5 distinct characters;
  * with fewer than three classes, not code-like (`os.environ.get(...)`, `self.token`,
    `process.env.X`, `struct_X509_pubkey_st`) and not an identifier made of letters, `_`, `.`
    and `-` only; never a code name or a secret's name (`SignerAuthToken2`, `db_password`);
  * not a code token (`is_code_token`: `$_POST[`, `getToken(`, `this.token`, `${...`): a value
    starting with `$`, `%`, `@` or `&`, holding `(`, `[`, `{` or `}`, ending in `.`, `:` or `=`
    after letters, or an attribute path; a false finding of that shape must never spread.

CREDENTIAL CONTEXTS (the one place this rule is written; `context_secret`). A value in a
secret-named context is redacted by default: after a key whose words name a password, passphrase,
secret, token, API key, credential, auth or private key (`DB_PASSWORD=`, `"apiKey":`,
`<password>`, `secret: `), after a password flag of a command line (`--password`, `-p` of
`docker login`/`psexec`/`sshpass`, `mysql -pVALUE`, `-Dsonar.login=`, `-vaultToken`), as a URL's
userinfo password, or as a connection string's `Password=`/`Pwd=`. "Looks like words" is no
exception: `DB_PASSWORD=correct-horse-battery` and `hunter2-Xq9-Mv77` are redacted. The only
exceptions are values that are clearly not a secret:
  * empty, or shorter than 6 characters (the rules need 6: `"input_tokens": 1234` stays);
  * a variable or a reference (`is_reference`): `$VAR`, `${VAR}`, `$(cmd)`, `%VAR%`,
    `process.env.X`, `os.environ[...]`, `getenv(...)`, `{{ ... }}`, `<placeholder>`,
    `[REDACTED...]`, a YAML tag (`!Ref DbPassword`, `!vault`), a ciphertext meant to be stored
    (SOPS `ENC[...]`, `vault:v1:`, `$ANSIBLE_VAULT;`);
  * a function call, an index or an attribute path (`is_code_reference`): `getPassword()`,
    `os.getenv("X")`, `request.form['pw']`, `config.db.password`, `self.token`, `smtp.gmail.com`
    (every dotted part is letters with at most trailing digits: `Sup3r.Secr3t` is no path),
    `(user) => ...`, `!!process.env.X`; unquoted, also a name written as code: snake_case,
    camelCase or PascalCase letters with at most trailing digits (`db_password`, `userPassword`,
    `SignerAuthToken`), a generic type (`Set<string>`), which in an env file is rare and in code
    (`connect(password=db_password)`, `token: TokenResponse;`) is the usual reading; and an
    unquoted identifier right before `,`, `)` or `}` (`{ tokenSymbol: ticker, ...}`); quoted, a
    value is a literal. After `:`, an unquoted word followed by more words is prose
    (`password: Override the config`), and gets the shape checks of weaker evidence;
  * a documented placeholder (`is_placeholder`): changeme, your-..., xxxx, ****, <token>,
    example, dummy, `none`, `password`, ...; a run of one or two characters (`------`); a label
    made of nothing but a credential's words (`My API Key`, `Access token`, `Your password here`:
    a form's label, an SDK's error message);
  * a word that states a status instead of a value (`invalid`, `expired`, `required`, ...), or
    a message: it ends in `...`, `…` or CJK sentence punctuation (`。`, `？`), or holds a format field
    (`{error}`, `%s`); a grep line number (`12:...` after `path/token.ts:`);
  * the name of a secret instead of its value (`is_secret_name`): words joined by `-`, `_` or
    `.`, one of which is password/secret/token/key/credential (`api-key`, `db-password`,
    `my-secrets-manager-secret`: an ExternalSecret's `secretKey:`, a vault path's last part);
    a versioned package name (`jjwt-jackson-0.11.2`, `left-pad@1.3.0`);
  * filler: one character holds most of the value (entropy under 1.5 bits per character over 12+
    characters: `glc_1111111111111`). A typed sequence (`abcdefghij12`) is a weak password:
    redacted, never remembered.
  * a path or a URL (`/run/secrets/db`, `./key.pem`, `https://vault/...`): where the secret is;
    also a credential's id and its file (`LoadCredential=db-password:/run/secrets/db`);
  * what a credential context holds when it holds no secret (`not_a_value`): a password's hash
    (crypt `$6$...`, `$apr1$`, bcrypt, argon2, `{SSHA}`), a size (`password:  24 bytes` of
    `kubectl describe secret`); and, as code, a PowerShell cmdlet (`Get-Credential`) or a call
    with a bang (`System.fetch_env!(...)`).
tests/test_redact_context_rule.py holds each exception and its redacted counterpart.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import unicodedata
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
    "redacted", "xxxx", "***", "....", "replace_me", "replaceme", "replace-me", "insert_",
    "insert-", "replace-with", "replace_with", "fill-in", "fill_in", "_here", "-here", "todo", "fixme", "notreal", "not_real", "not-real",
    "fake_", "fakekey", "fake-", "sample", "foobar", "secret_value", "my_secret",
    "mysecret", "mypassword", "my_password",
    "^pass^", "^user^",   # hydra's slots for the word lists' entries (`user=^USER^&pass=^PASS^`)
    "*sensitive*data*deleted*",   # what Windows writes back into an unattended setup's answer file
)
# Whole values that are placeholders or code words (compared lower-cased).
PLACEHOLDER_VALUES = frozenset(
    """none null nil true false undefined yes no on off empty string str int bool password
    passwd pass pwd secret token key apikey api_key value required optional test testing
    tests user username admin root guest default demo sample example changeme changeit
    redacted hidden masked private public secretkey secret_key access_key accesskey
    auth bearer basic credentials credential env environment config setting settings
    n/a na tbd unknown anonymous incomplete object callable""".split()
) | frozenset(("(sensitive value)", "(sensitive)", "<sensitive>", "(known after apply)")
)

_RE_TEMPLATE = re.compile(
    r"""^(?:
        \$\{[^}]*\}?            # ${VAR}
      | \$\([^)]*\)?            # $(command)
      | \$env:[A-Za-z_]\w*     # PowerShell's $env:VAR
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
      | @Microsoft\.KeyVault\(.*  # an App Service Key Vault reference
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
_RE_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
# Identifier or attribute chain, optionally a call: self.token, config.get(, AutoTokenizer.from_pretrained(
_RE_CODE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*(?:\(.*|\[.*)?$", re.S)
_RE_IDENT = re.compile(r"^[A-Za-z_.\-]+$")
_RE_URLISH = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.\-]*://|www\.|/[\w.\-]+/|\./|\.\./|~/|urn:[a-z0-9][a-z0-9\-]{0,31}:)")
_RE_DIGITS = re.compile(r"^[0-9.,:\-+]+$")
_RE_WORDY = re.compile(r"^[A-Za-z0-9_\-]+$")
_BAD_CHARS = re.compile(r"[\s\"'<>`]")
_RE_PLACEHOLDER_WORD = re.compile("|".join(re.escape(w) for w in PLACEHOLDER_WORDS))
# A label: two to six of a credential's words, spaced (`My API Key`, `Access token`, `Your password
# here`); lower-cased before matching.
_LABEL_WORDS = ("my|your|the|an?|enter|insert|paste|new|current|old|confirm|personal|access|api|app|auth"
                "|bearer|client|secret|token|key|password|passphrase|pass|pwd|credentials?|here|id|of"
                # the same labels in an i18n file: `"password": "Passwort"`, `"Mot de passe oublié ?"`
                "|passwort|kennwort|neues|altes|bestätigen|vergessen|mot|de|passe|oublié|nouveau|votre|confirmer"
                "|contraseña|contrasena|nueva|olvidó|olvidaste|tu|su|senha|nova|sua|esqueceu|wachtwoord|nieuw"
                "|hasło|пароль|новый|ключ|clé|clave|chave|schlüssel|\\?|\\:")
_RE_LABEL = re.compile(r"^(?:" + _LABEL_WORDS + r")(?: (?:" + _LABEL_WORDS + r")){0,5}$")
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


#: A word of an identifier: a capitalised or lower-case run of 3+ letters, or an acronym.
_IDENTIFIER_WORD = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{2,}(?=[A-Z][a-z]|\d|$)")
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_VALUE = {c: i for i, c in enumerate(BASE58)}


def random_base64(value: str, max_bits: float = 4.5) -> bool:
    """`value` (32-128 characters of base64, `=` padding allowed) reads as random: it mixes upper
    case, lower case and digits; its entropy is at least what nearly every random string of its
    length has (`max_bits` from 56 characters on, down to 4.2 bits at 32: a random 32-character
    string has ~4.5 bits, and 5% of them below 4.3); and it is no identifier made of words
    (camelCase words cover < 75% of it; they cover ~35% of a random string)."""
    body = value.rstrip("=")
    if not (_RE_UPPER.search(body) and _RE_LOWER.search(body) and _RE_DIGIT.search(body)):
        return False
    if shannon(value) < min(max_bits, 4.2 + 0.0125 * max(0, len(body) - 32)):
        return False
    return sum(len(w) for w in _IDENTIFIER_WORD.findall(body)) < 0.75 * len(body)


def public_address(value: str) -> bool:
    """A base58 string that is a public identifier, not a secret: 32 bytes (a Solana address or
    mint), an IPFS CIDv0 (`Qm...`: a sha2-256 multihash) or a Bitcoin address (base58check: 25
    bytes whose checksum holds). A random base58 string of other lengths is none of them."""
    n = 0
    for c in value:
        d = _BASE58_VALUE.get(c)
        if d is None:
            return False
        n = n * 58 + d
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(value) - len(value.lstrip("1"))) + raw
    if len(raw) == 32 or (len(raw) == 34 and raw[:2] == b"\x12\x20"):
        return True
    if len(raw) == 25:
        import hashlib

        return hashlib.sha256(hashlib.sha256(raw[:21]).digest()).digest()[:4] == raw[21:]
    return False


_RE_B64_BODY = re.compile(r"[A-Za-z0-9+/]+|[A-Za-z0-9_\-]+")
#: What readable text holds when it is a credential or carries one: a credential word, or the `:`
#: and `=` of `user:password`, `KEY=value`, `Authorization: ...`.
_RE_ENCODED_CREDENTIAL = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred|bearer|private|[:=]")
_RE_TEXT_WORDS = re.compile(r"[A-Za-z]{3}[ \t\r\n]+\S")   # (linear: no run of letters is read twice)
#: What content holds and a passphrase does not: a line break or punctuation.
_RE_TEXT_MARKS = re.compile(r"[\n.,;!?#()]")


def encoded_text(value: str) -> bool:
    """`value` is base64 (standard or URL alphabet, padding optional) of readable text: 12 bytes or
    more of printable UTF-8 with a word, whitespace and more after it, a line break or punctuation
    (`_RE_TEXT_MARKS`: a passphrase or a seed phrase, words and spaces only, is no content), and no
    sign of a credential (`_RE_ENCODED_CREDENTIAL`). Such a value is encoded content (a file, a
    message, a CSV), not a random secret: random bytes decode to that with negligible probability.
    An encoded credential (`user:password`, `DB_PASSWORD=...`, a PEM block) is never encoded text.
    The first 4,096 decoded characters are read."""
    body = value.rstrip("=")
    if len(body) < 16 or len(body) > 65536 or not _RE_B64_BODY.fullmatch(body):
        return False
    pad = "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            raw = base64.urlsafe_b64decode(body + pad)
        else:
            raw = base64.b64decode(body + pad, validate=True)
        text = raw.decode("utf-8")
    except (ValueError, binascii.Error):
        return False
    text = text[:4096]
    if len(raw) < 12 or not all(ch.isprintable() or ch in "\t\r\n" for ch in text):
        return False
    return bool(_RE_TEXT_WORDS.search(text) and _RE_TEXT_MARKS.search(text)) and not _RE_ENCODED_CREDENTIAL.search(text)


def is_typed_sequence(value: str) -> bool:
    """Holds 10+ letters or digits in alphabet order (`abcdefghij`, `KLMNOPQRST`, `0123456789`).

    In a provider token (`AIzaSyabcdefghijklmnopqrstuvwxyz1234567`) that marks a documentation
    example: a random token holds such a run with probability ~1e-16."""
    if value.isascii():
        return _RE_SEQUENCE_LOWER.search(value.lower()) is not None
    return _RE_SEQUENCE.search(value) is not None  # Unicode case folding (`ſ`, `K`) as before


def is_label(value: str) -> bool:
    """A form's or an SDK's label made of a credential's words (`My API Key`, `Access token`), or
    a translated one: words with a letter beyond ASCII, spaces, no digit or symbol (`كلمة المرور`,
    `Mật khẩu mới`, `Пароль ещё раз`)."""
    v = value.strip().strip("\"'`")
    if _RE_LABEL.match(v.lower()):
        return True
    return (" " in v and any(ch.isalpha() and ord(ch) > 127 for ch in v)
            and all(ch.isalpha() or ch in " .,?!()'-:" or (ord(ch) > 127 and unicodedata.category(ch)[0] in "PZ")
                    for ch in v))


#: Three mask characters in a row (`***`, `•••`, `●●●`): a value a tool masked.
_RE_MASK_RUN = re.compile(r"[*\u2022\u25cf]{3}")


def is_masked(value: str) -> bool:
    """A value a tool printed masked: a run of mask characters and at most 12 letters or digits
    beside it (`*** (before)`, `sk-****abcd`, `••••••••`); a token rule's unmistakable slot
    (`placeholder_ok`) does not redact it."""
    return bool(_RE_MASK_RUN.search(value)) and sum(c.isalnum() for c in value) <= 12


#: "Your ..." at a value's start, in other languages (a separator after it).
_RE_YOUR_FOREIGN = re.compile(r"^<?(?:ihr|ihre|dein|deine|votre|ton|ta|tu|su|seu|sua|teu|tua|tuo|il[-_]tuo|la[-_]tua|jouw|uw"
                              r"|twoje|twój|twoja|ваш|ваша|ваше|твой|твоя|senin|sizin)[-_ ]")
#: ... and the CJK and Korean ones anywhere ("your", "enter here").
_RE_YOUR_CJK = re.compile(r"あなたの|ここに|您的|你的|请输入|請輸入|여기에|입력하세요|귀하의")


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
    if _RE_PLACEHOLDER_WORD.search(low) or _RE_CIPHERTEXT.match(v) or _RE_LABEL.match(low):
        return True
    if _RE_YOUR_FOREIGN.match(low) or _RE_YOUR_CJK.search(v):
        return True  # `ihr-passwort`, `tu-contraseña`, `ваш_пароль`, `あなたのパスワード`: "your ..." in other languages
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


#: A relative path to a file (`avatars/3f2b....png`: an object key), by its extension.
_RE_FILE_PATH = re.compile(r"^[\w.\-]+(?:/[\w.\-]+)+\.(?:png|jpe?g|gif|svg|webp|ico|pdf|txt|md|csv|json|xml|ya?ml"
                           r"|html?|js|ts|css|zip|gz|tgz|tar|mp4|mp3|wav|parquet|log)$")


def token_shaped(value: str, min_len: int = 16, min_entropy: float = 3.0) -> bool:
    """A random-looking single token: long enough, letters and digits, high entropy, no filler,
    not a name made of words (`jetbrains.mps.v8_elimination`). Hex digits reach 4 bits a character
    at most, and a random 32 of them often fall below 3.5: hex needs 3.0 at most."""
    if len(value) < min_len or len(value) > 1024 or _BAD_CHARS.search(value):
        return False
    if is_placeholder(value) or is_url_or_path(value) or is_wordy(value) or _RE_FILE_PATH.match(value):
        return False
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if not (has_digit and has_alpha):
        return False
    if min_entropy > 3.0 and _RE_HEX.fullmatch(value):
        min_entropy = 3.0
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
    if is_placeholder(value) or (not allow_typed_sequence and is_typed_sequence(value)) or publishable(value):
        return False
    if is_code_token(value) or is_code_reference(value) or is_secret_name(value):
        return False
    if char_classes(value) >= 3 and not _RE_PIECES.search(value[-1:]):
        pass  # `hunter2-Xq9-Mv77`: three character classes are a credential's shape, words or not
    elif is_code_like(value) or _RE_IDENT.match(value):
        # Letters-only provider tokens (hf_..., random mixed case) still qualify when long and random.
        if not (_RE_WORDY.match(value) and len(value) >= 20 and char_classes(value) >= 2
                and shannon(value) >= 3.5):
            return False
    if len(set(value)) < 5 or char_classes(value) < 2:
        return False
    return shannon(value) >= 2.5


# --- credential contexts (the rule is in the module docstring) --------------------------------

#: Words that, as a whole value after a secret key, state a status or a kind, not a value.
STATUS_WORDS = frozenset(
    """invalid expired revoked missing unset notset not_set provided supplied hidden masked
    required optional disabled enabled omitted removed deleted rotated generated random
    unchanged unknown present absent encrypted hashed plaintext string number boolean object
    secret123 undefined nullable""".split()
)
_RE_YAML_TAG = re.compile(r"^![A-Za-z][\w:!]*$")
_IDENT_PART = r"[A-Za-z_$][A-Za-z_$]*[0-9]*"
#: A word and a number in brackets, quoted: `"Spring(2024)"`, `"hunter[42]"` (a password's shape).
_RE_WORD_AND_NUMBER = re.compile(r"^[A-Za-z]+[(\[]\d+[)\]][^\w]*$")
# A call or an index of a name or an attribute path (also `env!(`, Go's `[]byte(`).
_RE_CALL_OR_INDEX = re.compile(
    r"^(?:\[\])?[A-Za-z_$][\w$]*(?:(?:\.|\?\.|::|->)[A-Za-z_$][\w$]*)*!?[ \t]*[(\[]")
# Lua's method call, unquoted: lower-case names (`auth:match(`), not a password's shape
# (`Kx9mPq:Lr7Tz(42)`, `admin:secret(2024)`: a number in the brackets).
_RE_LUA_METHOD = re.compile(r"^[a-z_][a-z0-9_]*:[a-z_][A-Za-z0-9_]*\((?!\d+\)$)")
# A composite literal's type, its `{` ending the value (Go's `creds := aws.Credentials{`).
_RE_COMPOSITE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\{$")
# A PowerShell cmdlet (an approved verb, a dash, a noun): `Get-Credential`, `Get-Secret -Name X`.
_RE_CMDLET = re.compile(r"^(?:Get|Read|ConvertTo|ConvertFrom|Import|Export|Invoke|New|Select|Resolve|Unprotect"
                        r"|Find|Test|Join|Split|Format|Out)-[A-Z][A-Za-z]+$")
_RE_ATTR_PATH = re.compile(r"^" + _IDENT_PART + r"(?:(?:\.|\?\.|::|->)" + _IDENT_PART + r")+$")
_RE_SNAKE = re.compile(r"^_*[A-Za-z]+(?:_+[A-Za-z]+)+_*[0-9]*$")
# camelCase and PascalCase with a hump (`signerCToken`, `SignerAuthLinkToken`, `Pubkey` is one word)
# (each hump is ONE capital then lower case: no nested quantifier can split a run two ways, so the
# match is linear in the value)
_RE_CAMEL = re.compile(r"^_*[a-z]+(?:[A-Z][a-z]*)+[0-9]*$|^[A-Z][a-z]+(?:[A-Z][a-z]*)+[0-9]*$")
_RE_GENERIC = re.compile(r"^[A-Za-z_][\w.]*<[\w.,<>\[\] |;)]*$")
# A GraphQL argument's type (`password: String!)`, `tokens: [ID!]!,`): a built-in scalar, required.
_RE_GRAPHQL_TYPE = re.compile(r"^\[?(?:String|ID|Int|Float|Boolean)!?\]?![),]*:?$")
_RE_HUMP = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_RE_GREP_LINE = re.compile(r"^\d{1,6}:")
_RE_MESSAGE_END = re.compile(r"(?:[。？！…]|\.\.\.)$")
_RE_FORMAT_FIELD = re.compile(r"\{[A-Za-z_][\w.]{2,}\}|%[sd]|%\([\w]+\)[sdr]")


# A secret manager's reference: 1Password's `op://vault/item/field` (also inside a command: `cmd:op
# read op://...`), TeamCity's `credentialsJSON:<id>`, an AWS ARN.
_RE_SECRET_REF = re.compile(r"\bop://[^\s/]+/|^credentialsJSON:|^arn:aws[\w-]*:")


#: A secret's mount spec (BuildKit's `--secret id=npm_token,env=NPM_TOKEN`, `--mount=type=secret,id=x`,
#: compose's long syntax): a name and where the secret comes from, not the secret.
_RE_SECRET_SPEC = re.compile(r"^(?=(?:[^,]*,)*id=)(?:id|src|source|env|target|dst|type|required|mode|uid|gid)=[^,\s]+"
                             r"(?:,(?:id|src|source|env|target|dst|type|required|mode|uid|gid)=[^,\s]+)*$")
_RE_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")


#: Keys their provider makes public by design, told by their documented form: Stripe publishable
#: keys, PostHog project keys, Supabase publishable keys, Langfuse public keys, Datadog client
#: tokens (browser RUM and logs), LaunchDarkly mobile keys, Clerk publishable keys.
_RE_PUBLISHABLE = re.compile(r"^(?:pk_(?:live|test)_[A-Za-z0-9]{16,}|phc_[A-Za-z0-9]{30,}|sb_publishable_[A-Za-z0-9_\-]{16,}"
                             r"|pk-lf-[0-9a-f\-]{36}|pub[0-9a-f]{32}|mob-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def publishable(value: str) -> bool:
    """A key public by design, by its documented form (`_RE_PUBLISHABLE`): never redacted, never remembered."""
    return bool(_RE_PUBLISHABLE.match(value))


def is_date(value: str) -> bool:
    """An ISO 8601 date alone (`2025-12-31`)."""
    return bool(_RE_DATE.match(value.strip()))


def is_reference(value: str) -> bool:
    """A variable or a reference standing for the secret (see "Credential contexts")."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    if _RE_SECRET_SPEC.match(v):
        return True
    if _RE_TEMPLATE.match(v) or _RE_CIPHERTEXT.match(v) or _RE_YAML_TAG.match(v.split()[0]) or _RE_SECRET_REF.search(v):
        return True
    if v.startswith("[") and v[1:].isalpha() and v[1:].islower():
        return True  # Tcl's and Expect's command substitution (`set password [lindex $argv 0]`)
    return v.startswith(("${", "$(", "{{", "%(", "#{")) or (v.startswith("$") and len(v) > 1 and (v[1].isalpha() or v[1] == "_"))


def is_code_reference(value: str, quoted: bool = False) -> bool:
    """A function call, an index or an attribute path; unquoted, also a variable name
    (snake_case or camelCase, digits only at the end). See "Credential contexts"."""
    v = value.strip()
    if _RE_CALL_OR_INDEX.match(v) and (not quoted or (v.rstrip(";,").endswith((")", "]"))
                                                      and not _RE_WORD_AND_NUMBER.match(v))):
        # quoted, a call is whole (`"os.getenv('X')"`); `"Xk29dLmQ(7pZ..."` and `"Spring(2024)"` are passwords
        return True
    if _RE_ATTR_PATH.match(v) or v.startswith(("(", "!!", "=>")):
        return True  # also `(user) => ...`, `!!process.env.X`
    if not quoted and _RE_LUA_METHOD.match(v):
        return True
    if not quoted and (_RE_CMDLET.match(v) or _RE_GRAPHQL_TYPE.match(v) or _RE_COMPOSITE.match(v)):
        return True
    if _RE_GENERIC.match(v) or (")" in v and "(" not in v and v.rstrip("):;,").isidentifier()):
        return True  # a generic type `Set<string>`, the end of a signature `AuthToken):`
    if quoted:
        return False
    if _RE_SNAKE.match(v):
        return True
    if _RE_CAMEL.match(v):
        # words, not a random mix of cases (`QzMltKIpOoeMdeR9`): few short humps
        words = _RE_HUMP.findall(v)
        return (sum(map(len, words)) >= 4 * len(words)
                and sum(len(w) <= 2 for w in words) <= max(1, len(words) // 2))
    return False


# A password's hash, not the password: crypt(3) (`$6$salt$...`, `$y$`, `$apr1$`), bcrypt, argon2,
# LDAP's `{SHA}` / `{SSHA}`, Django's.
_RE_PASSWORD_HASH = re.compile(r"^(?:\$(?:1|2[abxy]?|5|6|y|7|gy|apr1|argon2(?:id|i|d)|scrypt|pbkdf2[\w\-]*)\$[^\s]{8,}"
                               r"|\{(?:S?SHA(?:256|512)?|CRYPT|PBKDF2[\w\-]*|ARGON2)\}[A-Za-z0-9+/.$=]{8,}"
                               # PostgreSQL's stored forms (pg_authid, PgBouncer's auth file)
                               r"|md5[0-9a-f]{32}|SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+"
                               # MySQL's native hash (`IDENTIFIED BY PASSWORD '*...'`)
                               r"|\*[0-9A-Fa-f]{40}"
                               # Django's stored forms (`algorithm$...`: `pbkdf2_sha256$870000$salt$hash`, `argon2$argon2id$...`)
                               r"|(?:pbkdf2_sha256|pbkdf2_sha1|argon2|bcrypt_sha256|bcrypt|scrypt|md5|sha1)\$[^\s]{16,}"
                               # Tomcat's digest credential handler (`salt$iterations$hash`, hex)
                               r"|[0-9a-f]{16,}\$\d{1,7}\$[0-9a-f]{32,})$")
# A size (`kubectl describe secret`: `password:  24 bytes`), a credential's id and file
# (systemd's `LoadCredential=db-password:/run/secrets/db`), a SigV4 credential scope, an ISO 8601 timestamp with its time (a
# log line's; a date alone may be a password).
_RE_NOT_A_VALUE = re.compile(r"^\d+ bytes?$|^[\w.\-]+:/[\w./\-]+$"
                             # a colour (a syntax theme's `Token: "#d4d4d4"`, `"bold #A6E22E"`)
                             r"|^(?:(?:bold|italic|underline|bg:|noinherit|nobold|noitalic) *)*#(?:[0-9A-Fa-f]{3}){1,2}$"
                             # an AWS SigV4 credential scope: the key id (public), date, region, service
                             r"|^[A-Z0-9]{16,128}(?:/|%2F)\d{8}(?:/|%2F)[a-z0-9\-]+(?:/|%2F)[a-z0-9\-]+(?:/|%2F)aws4_request$"
                             r"|^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?$"   # a timestamp
                             # a key's fingerprint (`ssh-keygen -l`), an HMAC of a value (Vault's audit log)
                             r"|^SHA256:[A-Za-z0-9+/]{43}=?$|^MD5:(?:[0-9a-f]{2}:){15}[0-9a-f]{2}$"
                             r"|^hmac-sha(?:1|224|256|384|512):[0-9a-f]{16,}$")
# A regular expression (`\s*bearer\s+|api[_-]?key=`: a redaction filter's pattern): two of its
# classes and groups are code (one may be in a password: `Tq8[^vR2`).
_RE_REGEX_VALUE = re.compile(r"\\[sdwSDWb][*+?{]|\[\^|\(\?[:i!=<]")
# ... or one class of ranges with its count, alone (`ghp_[A-Za-z0-9]{36}`: a scanner's pattern)
_RE_REGEX_COUNTED_CLASS = re.compile(r"\[[^\]\s]{0,20}[A-Za-z0-9]-[A-Za-z0-9][^\]\s]{0,20}\](?:\{\d{1,4}(?:,\d{0,4})?\}|[*+])")


def not_a_value(value: str) -> bool:
    """A password's hash, a size, a credential's id and file, a regular expression
    (`_RE_PASSWORD_HASH`, `_RE_NOT_A_VALUE`, `_RE_REGEX_VALUE`): what a credential context holds
    when it holds no secret."""
    return bool(_RE_PASSWORD_HASH.match(value) or _RE_NOT_A_VALUE.match(value)
                or len(_RE_REGEX_VALUE.findall(value)) >= 2 or bool(_RE_REGEX_COUNTED_CLASS.search(value)))


def context_secret(value: str, *, quoted: bool = False) -> bool:
    """Whether `value`, found in a credential context, is redacted (the rule in the module
    docstring): yes unless it is clearly not a secret."""
    v = value.strip()
    if len(v) < 6 or len(v) > 4096:
        return False
    if not_a_value(v) or publishable(v):
        return False
    if is_reference(v) or is_code_reference(v, quoted) or is_placeholder(v):
        return False
    if len(set(v)) < 3 or v.lower() in STATUS_WORDS or is_url_or_path(v) or is_secret_name(v):
        return False
    if v.lower() in _SECRET_NAME_WORDS:
        return False  # `error.password.mismatch=Passwords do not match`: the word, not a value
    if is_label(v):
        return False  # a form's label, a translation (`"password": "كلمة المرور"`)
    if not any(c.isascii() and c.isalnum() for c in v) and any(c.isalpha() for c in v):
        return False  # words of a script beyond ASCII, no ASCII letter or digit: CJK prose has no space
        # (`密码管理：支持环境变量和系统密钥环`); people's passwords hold ASCII (`桜4720富士QqgPRY`)
    if _RE_MESSAGE_END.search(v) or _RE_FORMAT_FIELD.search(v) or _RE_GREP_LINE.match(v):
        return False
    if len(v) >= 12 and shannon(v) < 1.5:
        return False
    if _RE_DUNDER.match(v):
        return False  # `ROOT_KEY = '__root__'`: a sentinel name
    return True


_RE_DUNDER = re.compile(r"^__[A-Za-z][A-Za-z0-9_]*__$")


_SECRET_NAME_WORDS = frozenset(
    "password passwords passwd pwd pass passphrase secret secrets token tokens key keys apikey credential "
    "credentials creds auth".split())
_RE_NAME_PARTS = re.compile(r"^[a-z]+(?:[\-_.][a-z]+)+$|^[A-Z]+(?:[\-_.][A-Z]+)+$")
_RE_CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?::(?:latest|\d+))?$")
_RE_VERSIONED = re.compile(r"^[A-Za-z][\w.\-]*?[\-@]v?\d+(?:\.\d+)+(?:[\-+][\w.]+)?$")


#: An identifier in camelCase or PascalCase that ends in `Token`, `Credentials` or a key pair's
#: `PrivateKey` / `PublicKey`, after a module's path too (`nextPageToken`, `OAuth2Token`,
#: `x25519.X25519PrivateKey`): the name of a class, a field or a pagination parameter. Not
#: `...Password` or `...Secret`: `SuperSecretPassword` is a password people choose.
_RE_CREDENTIAL_CLASS = re.compile(r"^(?:[A-Za-z_]\w*\.)*_?[A-Za-z][A-Za-z0-9]*(?:Token|Credentials?|PrivateKey|PublicKey)$")


def is_credential_class(value: str) -> bool:
    """A name in code whose last word is a credential's (`NextToken`, `X25519PrivateKey`); after a
    password's key it may be the password (`keys.value_ok` asks it for the other keys only)."""
    return bool(_RE_CREDENTIAL_CLASS.match(value))


def is_secret_name(value: str) -> bool:
    """The name of a secret (`api-key`, `DB_PASSWORD`, `my-secrets-manager-secret`) or a
    versioned package name (`jjwt-jackson-0.11.2`): words, not a value. See "Credential contexts"."""
    if (len(value) <= 120 and _RE_VERSIONED.match(value)) or _RE_CONSTANT.match(value):
        return True  # also an env var or constant's name: `DB_PASSWORD`, `API_KEY_SECRET:latest`
    if not _RE_NAME_PARTS.match(value):
        return False
    return any(p in _SECRET_NAME_WORDS for p in re.split(r"[\-_.]", value.lower()))


def is_code_token(value: str) -> bool:
    """A piece of code, never a credential (`$_POST[`, `getToken(`, `this.token`, `${x}`):
    such a value is never remembered, whatever rule found it."""
    v = value.strip()
    if not v:
        return True
    if v[0] in "$%@&" or any(ch in v for ch in "()[]{}"):
        return True
    if v[-1] in ".:=" and v[:-1].replace("_", "").isalpha():
        return True
    return bool(_RE_ATTR_PATH.match(v)) or is_reference(v)
