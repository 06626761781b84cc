"""The per-kind handlers of the scanner: how a rule's match becomes the byte spans to redact.

A handler takes `(rule, sp, data)`: the rule, its RE2 match's group spans (`sp[0]` the whole match,
`-1` for a group that took no part) and the UTF-8 bytes of the text, and yields `(start, end,
label)` byte spans. `HANDLERS` maps each rule kind (`redact.rules`) to its handler; the positional
kinds' handlers live in `redact.arguments`, the web's (cookies, headers, URLs) in `redact.web`, those
of credentials told in prose in `redact.told`. Handlers read the value's shape through `redact.shapes`
and `redact.keys` (the credential-context rule is written there, once), never log, and are linear
in the text.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import math
import re

from . import arguments, defaults, shapes, told, web
from .keys import (
    _ESCAPE_CUT, _RE_BARE_IDENT, _SPACE, _WELLFORMED_INTERP, _clean_bare, classify_key, key_segments,
    names_foreign_credential, says_not_secret, value_ok)
from .patterns import ABOUT_A_PASSWORD, APP_PASSWORD, CREDENTIAL_WORD, FUNCTION_WORDS, NAME_BEFORE, SHELL_DEFAULT
from .rules import Rule
from .spans import end as _end

#: The rest of `${KEY:` as rule env-default reads it (`-v}`, `=v}`, Spring's `v}`), or an error
#: message or an alternative (`?set it in .env}`, `+x}`): no value either way.
_SHELL_DEFAULT = re.compile(rb"[-=]?(?:" + SHELL_DEFAULT.encode() + rb")\}|[?+][^}\n]{0,200}\}")



def _s(data: bytes, a: int, b: int) -> str:
    return data[a:b].decode("utf-8", "surrogatepass") if a >= 0 else ""


# A token followed by mask characters (`xoxp-1234-5678-####`, `ghp_ab12****`) was masked on purpose.
_MASK_AFTER = re.compile(rb"[-_.]?(?:[#*]{3}|(?:\xe2\x80\xa2){3})")


def _jwt_header_ok(value: str) -> bool:
    """The first segment of a JWT decodes (base64url) to a JSON object, as every real header does."""
    head = value.split(".", 1)[0]
    try:
        obj = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(obj, dict)


def _dominant_over_half(value: str) -> bool:
    """`shapes.dominant_char(value) > 0.5`, mostly answered from the (cached) entropy: when one
    character holds a share p > 1/2 of n, the entropy is below h(p) + (1 - p) log2(n - 1) <
    1 + log2(n - 1) / 2, so a value at or above that bound cannot have one (no count needed)."""
    n = len(value)
    if n > 2 and shapes.shannon(value) >= 1.0 + 0.5 * math.log2(n - 1) + 1e-9:
        return False
    return shapes.dominant_char(value) > 0.5


#: A value of filler only, in groups (`XXXXXXXXX/XXXXXXXXX/XXXXXXXX`): a template's blank, no value.
_ALL_FILLER = re.compile(r"[xX*]{4,}(?:[/_.\-][xX*]{4,})*")


def _h_token(rule: Rule, sp, data: bytes):
    try:
        g = 1 if sp[1][0] >= 0 else 0
    except IndexError:  # a rule without a value group: the whole match is the value
        g = 0
    s, e = sp[g][0], sp[g][1]
    value = _s(data, s, e)
    if shapes.is_reference(value):
        return  # `cmd:op read op://vault/item/field` after `api_key = `: a secret manager's reference
    suffix = rule.options.get("exclude_suffix")
    if suffix and value.endswith(suffix):
        return  # a provider's documented example (`AKIAIOSFODNN7EXAMPLE`), placeholder slot or not
    if " " in value and shapes.is_label(value):
        return  # a label or its translation (`"password": "كلمة المرور"`), not a passphrase
    if shapes.is_placeholder(value) or shapes.is_typed_sequence(value):
        if rule.options.get("placeholder_ok") and not shapes.is_label(value) and not shapes.is_masked(value) \
                and not _ALL_FILLER.fullmatch(value):
            # an unmistakable slot: redacted (never remembered); a label (`My API Key`) is none
            yield s, e, rule.label
        return  # `AIzaSyabcdefghijklmnop...`: a provider's documentation example
    if _MASK_AFTER.match(data, e):
        return
    if rule.min_entropy and shapes.shannon(value) < rule.min_entropy:
        return
    if not rule.options.get("allow_filler") and len(value) >= 16 and _dominant_over_half(value):
        return
    if rule.options.get("needs_digit") and not any(ch.isdigit() for ch in value):
        return
    if rule.options.get("not_words") and shapes.is_wordy(value):
        return  # `https://build-artifacts-reader-2024@ci.example.com`: a user name made of words
    if rule.options.get("needs_mixed_case") and (value.lower() == value or value.upper() == value):
        return  # `AKIA...` then a git SHA: hex is one case, a base64 key is both
    after = rule.options.get("needs_digit_after")
    if after and not any(ch.isdigit() for ch in value.partition(after)[2]):
        return  # "95552:AgencyIdentificationCodeContentType": a name, not a random secret
    if rule.options.get("jwt_header") and not _jwt_header_ok(value):
        return
    if rule.options.get("b64_private_key") and not _b64_private_key(value):
        return
    public = rule.options.get("public_prefix")
    if public and value.startswith(public):
        key = _KEY_BEFORE_BARE.search(data, max(0, s - 130), s)
        if key and says_not_secret(key.group(1).decode("latin-1")):
            return  # `NEXT_PUBLIC_MAPBOX_TOKEN=pk.eyJ...`: a token public by design, named public
    yield s, e, rule.label


#: The key right before a value, quoted or bare (`NEXT_PUBLIC_X=`, `"publicToken": "`).
_KEY_BEFORE_BARE = re.compile(rb"""([A-Za-z0-9_.$\-]+)\\?["']?\]?[ \t]*(?:=>|:=|=|:)[ \t]*\\?["'`]?$""")
#: Two path segments in a row (`src/app/`): a path, not base64 (whose `/` comes one in 64).
_PATH_SEGMENTS = re.compile(r"[a-z0-9._\-]{3,}/[a-z0-9._\-]{3,}/")
#: The `content` attribute of an HTML `<meta>` tag, right before the value's opening quote: a page's
#: metadata (`<meta name="csrf-token" content="...">`), public to whoever has the page.
_META_CONTENT = re.compile(rb"""(?i)<meta\b[^<>]*\scontent=\\?["']$""")
#: The public members of a JSON Web Key (RFC 7517/7518: coordinates, modulus and exponent, the
#: certificate's thumbprints), and the `kty` member every JWK has (its private ones, `d`, `p`, `q`,
#: `dp`, `dq`, `qi`, `k`, stay secret).
_JWK_PUBLIC = frozenset({b"x", b"y", b"n", b"e", b"x5t", b"S256"})   # (and `x5t#S256`, a thumbprint)
_JWK_KTY = re.compile(rb"""["']?kty\\?["']?[ \t]*[:=]""")
#: The key a quoted value is assigned to, right before the value's opening quote (and its string
#: prefix, as the rule's pattern allows one: `key = b'...'`).
_KEY_BEFORE = re.compile(rb"""([A-Za-z0-9_.$\-]+)\\?["']?\]?[ \t]*(?:=>|:=|=|:)[ \t]*(?:[bBfFrRuU]{1,2})?\\?["']$""")


#: A name's words: four letters, a separator, more (`ELBSecurityPolicy-TLS13`).
_WORDY_NAME = re.compile(r"[A-Za-z]{4,}[-_][A-Za-z0-9]")
#: After a quoted string, what makes it a mapping's key (`"...": {`, `"...": (`).
_DICT_KEY_AFTER = re.compile(rb"""\\?["'][ \t]*:[ \t]*[{(\[]""")


def _h_entropy(rule: Rule, sp, data: bytes):
    """A quoted string with no key (`quoted-high-entropy`): redacted when it reads as random base64
    (`shapes.random_base64`, at most `rule.min_entropy` bits asked), unless it is a path, a
    placeholder or a typed sequence, a public base58 identifier (`shapes.public_address`: a
    wallet or mint address, an IPFS id), encoded readable text (`shapes.encoded_text`), a JSON
    Web Key's public member, the `content` of an HTML `<meta>` tag, or the value of a key that
    says it is no secret
    (`keys.says_not_secret`: `public_key = "..."`, `fake_token: "..."`)."""
    s, e = sp[1]
    value = _s(data, s, e)
    if not shapes.random_base64(value, rule.min_entropy) or _PATH_SEGMENTS.search(value):
        return
    if shapes.is_placeholder(value) or shapes.is_typed_sequence(value) or shapes.public_address(value):
        return
    if shapes.encoded_text(value):
        return
    if _DICT_KEY_AFTER.match(data, e) and _WORDY_NAME.search(value):
        return   # `"ELBSecurityPolicy-TLS13-1-2-2021-06": {`: a mapping's key that is a name
    key = _KEY_BEFORE.search(data, max(0, s - 130), s)
    if key and says_not_secret(key.group(1).decode("latin-1")):
        return
    if key and key.group(1) in _JWK_PUBLIC and _JWK_KTY.search(data, max(0, s - 1500), e + 1500):
        return   # a JSON Web Key's public members (RFC 7518: `x`, `y` of EC, `n`, `e` of RSA)
    if _META_CONTENT.search(data, max(0, s - 300), s):
        return
    yield s, e, rule.label


def _b64_private_key(value: str) -> bool:
    """The base64 blob starts with a PEM private key header ("-----BEGIN ... PRIVATE KEY")."""
    head = value[:96]
    try:
        text = base64.b64decode(head[: len(head) - len(head) % 4])
    except (ValueError, binascii.Error):
        return False
    return b"PRIVATE KEY" in text


_PEM_HEADERS = re.compile(rb"-----(?:BEGIN|END)[ A-Z0-9_-]{0,100}-----|PuTTY-User-Key-File-\d:|Private-MAC:")


def _h_pem(rule: Rule, sp, data: bytes):
    body = _PEM_HEADERS.sub(b"", data[sp[0][0]:sp[0][1]])
    if len(re.sub(rb"[^A-Za-z0-9+/=]", b"", body)) < 20:
        return  # "-----BEGIN PRIVATE KEY-----\nanything": a header, not a key
    yield sp[0][0], sp[0][1], rule.label


_K8S_KIND = re.compile(rb"(?i)\bkind:[ \t]*[\"']?secret\b")
_K8S_DATA = re.compile(rb"(?im)^[ \t]*(?:data|stringData):[ \t]*$")


def _h_k8s(rule: Rule, sp, data: bytes, state: dict):
    """Values under `data:` of a Kubernetes Secret manifest (both markers must be in the text;
    looked for once per scan, `state`)."""
    secret = state.get("secret")
    if secret is None:
        secret = state["secret"] = bool(_K8S_KIND.search(data) and _K8S_DATA.search(data))
    if not secret:
        return
    s, e = sp[1][0], sp[1][1]
    value = _s(data, s, e)
    if shapes.is_placeholder(value) or shapes.shannon(value) < 3.0 or shapes.is_code_like(value):
        return  # base64 data, not `kind: ReplicationController` of the next document
    yield s, e, "secret"


def value_group(sp, first: int):
    """(start, end, quoted) of the first participating value group among 4 alternatives."""
    for j in range(first, first + 4):
        if sp[j][0] >= 0:
            return sp[j][0], sp[j][1], j != first + 3
    return -1, -1, False


def _keyed_value(data: bytes, key: tuple[int, int], s: int, e: int, quoted: bool,
                 tiers: tuple[str, ...] | None = None, context: bool = True):
    """(start, end, label) of the value at [s, e) when the key at `key` names a secret (of one of
    `tiers`, if given) and the value, cleaned (possibly shortened), passes that key's check."""
    key_text = _s(data, key[0], key[1])
    cls = classify_key(key_text)
    if cls is None or s < 0 or (tiers is not None and cls[0] not in tiers):
        return
    value = _s(data, s, e)
    if quoted:
        # a JSON-escaped quote ends the value too: "TOKEN=\"abc\"" inside a JSON string
        cut = _ESCAPE_CUT.search(value)
        if cut:
            value = value[: cut.start()]
    else:
        bare = value
        value = _clean_bare(value)
        if (len(value) <= 16 and value.endswith(("-", "_")) and bare.startswith(value)
                and bare[len(value):].startswith(("...", "\u2026"))):
            return  # `ANTHROPIC_API_KEY=sk-ant-...`: a token's prefix and an ellipsis, the value left out
    if not value or _SPACE.search(value) or _WELLFORMED_INTERP.search(value):
        return
    if _same_name(key_text, value):
        return  # `self._authkey = authkey`, `SERVER_AUTH: "serverAuth"`: a name given to itself
    if _OPENPGP_KEY_ID.fullmatch(value) and _names_openpgp_key(key_segments(key_text)):
        return  # git's `signingkey = 5C2BB0BAB198BAE9`: an OpenPGP key's id or fingerprint names a public key
    if cls[1] == "token" and _FIELD_NAME.fullmatch(value) and key_segments(key_text)[-1:] == ("token",):
        return  # `"input_token": "NextMarker"` (an SDK's paginators): the name of a request's field
    if not quoted and shapes.is_date(value) and _TIME_AFTER.match(data, s + len(value)):
        return  # `last_password_change: 2025-02-01 09:12:44`: a timestamp, its date and time apart
    if value_ok(cls[0], value, quoted, context):
        yield s, _end(s, value), cls[1]


#: An OpenPGP key's id (8 or 16 hex digits) or fingerprint (40), in capitals as gpg prints them.
_OPENPGP_KEY_ID = re.compile(r"(?:0x)?(?:[0-9A-F]{8}|[0-9A-F]{16}|[0-9A-F]{40})")


def _names_openpgp_key(segs: tuple[str, ...]) -> bool:
    """A key that names an OpenPGP key by its id: git's `signingkey`, `gpg_key`, `pgp_key_id`; not a
    secret, a password or a passphrase of one (`GPG_PASSPHRASE`, `WEBHOOK_SIGNING_KEY`)."""
    if any(s in ("secret", "password", "passphrase", "pass", "private") for s in segs):
        return False
    return segs[-1:] == ("signingkey",) or (bool({"gpg", "pgp"} & set(segs)) and segs[-1] in ("key", "keyid", "id"))

#: The words of a lexer's or a parser's token (`token`, `tok.value`, `self.current_token.type`).
_LEXER_TOKEN_WORDS = frozenset("token tok value type kind self this next current cur t".split())


def _is_message(data: bytes, k: int, s: int, e: int) -> bool:
    """A message bundle's line: the key at the line's start (`k`), the value at [s, e) a word of
    letters only, and the rest of the line words that name a credential or a sentence (three words
    or more, its end a `.`, `?` or `!`). Not `The deploy failed. DB_PASSWORD=hunter2-Xq9 and ...`:
    a key in a sentence, a value with digits."""
    line_start = data.rfind(b"\n", 0, k) + 1
    if data[line_start:k].strip() or not data[s:e].isalpha():
        return False
    end = data.find(b"\n", s)
    line = data[s:end if end >= 0 else len(data)].decode("utf-8", "replace").strip()
    words = line.split()
    return (any(CREDENTIAL_WORD.match(w) for w in words) or names_foreign_credential(line)
            or (len(words) >= 3 and line.endswith((".", "?", "!"))))


def _same_name(key: str, value: str) -> bool:
    """The value spells the key's last name, its case and separators aside, as code does: the key
    an attribute (`self._authkey = authkey`) or the value in camelCase (`CHALLENGE_PASSWORD:
    "challengePassword"`); not `ROOT_PASSWORD=rootpassword`, a password."""
    key = key.replace("->", ".")
    last = _SEPARATORS.sub("", key.rsplit(".", 1)[-1]).lower()
    if not last or _SEPARATORS.sub("", value).lower() != last:
        return False
    return "." in key or bool(_HUMP.search(value))


#: A camelCase hump; what a name's spelling may hold between its words.
_HUMP = re.compile(r"[a-z][A-Z]")
_SEPARATORS = re.compile(r"[_\-$@\"'\s]")
#: A field's name in PascalCase, letters only (`Marker`, `NextToken`): no token is one.
_FIELD_NAME = re.compile(r"(?:[A-Z][a-z]+){1,4}")


#: A time after a date (a timestamp written with a space).
_TIME_AFTER = re.compile(rb"[ T]\d\d:\d\d")
#: Calls that turn the literal they are given into the key they return, and so hold a secret as
#: their argument: `[]byte("v")`, `hex.DecodeString("v")`, `bytes.fromhex("v")`, `b64decode("v")`,
#: `Buffer.from("v", "hex")`, `Encoding.UTF8.GetBytes("v")`, `Keys.hmacShaKeyFor(`, `SecretStr("v")`,
#: `String::from("v")`, nested (`new SymmetricSecurityKey(Encoding.UTF8.GetBytes("v"))`: the
#: assignment rule reads past `new`). A bare value that is a chain of them, right before a quote,
#: is read as the literal after it.
_LITERAL_WRAPPER = (
    r"\[\](?:byte|rune)|hex\.DecodeString|base64\.(?:Raw)?(?:Std|URL)Encoding\.DecodeString|bytes\.fromhex"
    r"|bytes|bytearray|(?:base64\.)?(?:b64decode|urlsafe_b64decode|standard_b64decode|b32decode|b16decode)"
    r"|(?:binascii\.)?(?:unhexlify|a2b_hex|a2b_base64)|Secret(?:Str|Bytes)|Buffer\.from"
    r"|Base64\.get(?:Url|Mime)?Decoder\(\)\.decode|Base64\.(?:decode64|strict_decode64|urlsafe_decode64)"
    r"|Decoders\.BASE64(?:URL)?\.decode|Hex\.decodeHex|DatatypeConverter\.parse(?:HexBinary|Base64Binary)"
    r"|Encoding\.(?:UTF8|ASCII|Unicode|Default)\.GetBytes|Convert\.From(?:Base64|Hex)String|String::from"
    r"|hex::decode|Secret(?:String|Box|Vec)?::new|base64_decode|hex2bin|Keys?\.hmacShaKeyFor"
    r"|SymmetricSecurityKey|SecretKeySpec|TextEncoder\(\)\.encode"
)
_WRAPPER_CHAIN = re.compile(rb"(?:(?:" + _LITERAL_WRAPPER.encode() + rb")\([ \t]*)+")
#: The literal after a wrapper chain: a string prefix (`b"..."`), then one quote kind (JSON-escaped
#: too: `\"v\"`), on one line, at most 1,024 characters.
_WRAPPED_LITERAL = re.compile(
    rb"""[bBrRuU]{0,2}(?:\\"([^"\\\n]{1,1024})\\"|"([^"\n]{1,1024})"|'([^'\n]{1,1024})'|`([^`\n]{1,1024})`)""")


def _wrapped_literal(data: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The span of the literal a bare value [s, e) wraps (`_LITERAL_WRAPPER`), or None. The bare
    value ends at the literal's quote, or before its string prefix or JSON escape (`b"`, `\\"`)."""
    m = _WRAPPER_CHAIN.match(data, s)
    if m is None or not e - 3 <= m.end() <= e:
        return None
    lit = _WRAPPED_LITERAL.match(data, m.end())
    if lit is None:
        return None
    return lit.start(lit.lastindex), lit.end(lit.lastindex)


#: How far back a `{{ ... }}` expression is looked for (bytes): a minified line must not make each
#: match read back to the line's start.
TEMPLATE_LOOKBACK = 200


def _inside_template(data: bytes, at: int) -> bool:
    """Whether `at` is inside a `{{ ... }}` expression opened earlier on its line, within
    `TEMPLATE_LOOKBACK` bytes."""
    start = max(0, at - TEMPLATE_LOOKBACK)
    line = data.rfind(b"\n", start, at) + 1 or start
    return data.rfind(b"{{", line, at) > data.rfind(b"}}", line, at)


#: The opening of a Python f-string right before a value (`f"`, `rf'`, `f\"""`).
_F_STRING = re.compile(rb"""(?:^|[^A-Za-z0-9_])[rRbB]?[fF][rR]?\\?["']{1,3}$""")


def _h_assign(rule: Rule, sp, data: bytes):
    sep = _s(data, sp[2][0], sp[2][1])
    if sep == ":" and data[sp[1][0] - 2:sp[1][0]] == b"${" and _SHELL_DEFAULT.match(data, sp[2][1]):
        return  # `${DB_PASSWORD:-v}`: a shell expansion, whose default rule env-default reads
    s, e, quoted = value_group(sp, 3)
    if not quoted and sep in (",", "==", "===", "!=", "!=="):
        return
    if sep == ":" and quoted and data[sp[1][0]:sp[1][1]] == b"PASSWORD" and data[sp[2][0] - 1:sp[2][0]] in (b" ", b"\t") \
            and data[sp[2][1]:s].strip(b"\"'") == b"" and _s(data, s, e).isidentifier():
        return  # psql's variable in SQL: `PASSWORD :'new_pw'` (a space before the colon, the quote right after)
    if quoted and b"{" in data[s:e] and _F_STRING.search(data, max(0, s - 6), s):
        return  # `f"Bearer {token}"`: an f-string's fields are references
    if sep == "<-" and not quoted:
        return  # Haskell's and Go's `token <- getToken`: a binding or a channel; R's `pw <- "v"` is quoted
    if sep == ":" and data[s:s + 2] == b"//":
        return  # `credential.https://github.com.helper=...`: the key ends in a URL's scheme
    if NAME_BEFORE.search(data, max(0, sp[1][0] - 120), sp[1][0]):
        return  # `arn:aws:secretsmanager:eu-west-1:123:secret:prod/db`: an ARN names a secret, a URN a
        # name (`urn:ietf:params:oauth:jwk-thumbprint`), `AWS::KMS::Key` a resource type
    if _inside_template(data, sp[1][0]):
        return  # `{{resolve:secretsmanager:prod/db:SecretString:password}}`: a template's reference
    # `MYSQL_PWD= mysqldump ...` is an empty shell variable, then a command: `KEY= value` (a space
    # after `=` and none before) is weaker evidence, and the value needs a secret's shape
    context = not (not quoted and sep == "=" and data[sp[2][1]:sp[2][1] + 1] in (b" ", b"\t")
                   and data[sp[2][0] - 1:sp[2][0]] not in (b" ", b"\t"))
    if sep in ("==", "===", "!=", "!==") and set(key_segments(_s(data, *sp[1]))) <= _LEXER_TOKEN_WORDS:
        # `if token == "import"`, `tok.value != "#begin"`: a lexer's token compared with its kinds is
        # weaker evidence; `api_key == "..."`, `password == "..."` are the values a check hardcodes
        context = False
    if sep == ",":
        # `("DB_PASSWORD", "v")`, `os.environ.setdefault("API_KEY", "v")`: a pair only when the key
        # itself is quoted and no list closes in between (`["bash", "-lc", "pwd"], "workdir"`)
        if data[sp[1][0] - 1:sp[1][0]] not in (b'"', b"'") or b"]" in data[sp[1][1]:sp[2][0]]:
            return
        if data[max(0, sp[1][0] - 40):sp[1][0] - 1].rstrip().endswith(b":"):
            return  # `{"type": "random_password", "instances": ...}`: the "key" is a JSON value
        context = False
    wrapped = _wrapped_literal(data, s, e) if not quoted and s >= 0 else None
    if wrapped:
        (s, e), quoted = wrapped, True
    if not quoted and s >= 0:
        after = data[e:e + 2]
        if sep == ":" and len(after) == 2 and after[:1] == b" " and after[1:].isalpha():
            context = False  # `password: Override the config ...`, `// First pass: collect ...`: prose
        elif sep == "=" and len(after) == 2 and after[:1] == b" " and after[1:].isalpha() \
                and _is_message(data, sp[1][0], s, e):
            context = False  # `fehler.passwort.falsch=Benutzername oder Passwort ist falsch.`: a bundle's message
        else:
            m = _RE_BARE_IDENT.match(data, s)
            if m and not data[m.end(1):e].strip(b" \t)]},;") and (m.group(2) in (b",", b")", b"}", b"+") or sep == ":"):
                # `{ tokenSymbol: ticker }`, `f(password=pw)`, `token_a: Pubkey;`, a type annotation
                # (`password: _PasswordType | None = None`, `tokens: list[Token]`), an expression
                # (`PseudoToken = Whitespace + group(...)`): code
                return
    if not quoted and s >= 0 and data.endswith(b"//", 0, sp[1][0]):
        # `https://x-access-token:VALUE@github.com/o/r`: the key is a URL's user, the value its
        # password, which ends at `@host` (a raw `@` cannot be in it); no `@`: `host:port/path`
        at = data.find(b"@", s, e)
        if at < 0:
            return
        e = at
    if _HELM_KEY_NAME.fullmatch(data, sp[1][0], sp[1][1]) and _EXISTING_SECRET.search(data, max(0, s - 400), s) \
            and _NAME_OF_A_KEY.fullmatch(data, s, e):
        return  # a Helm chart's `existingSecret: db` then `userKey: admin-user`: the name of a key in it
    if e - s > 300 and data[s:s + 2] == b"Ag" and _SEALED.search(data, max(0, s - 4096), s):
        return  # a SealedSecret's `encryptedData`: ciphertext only its cluster's controller can open
    found = list(_keyed_value(data, sp[1], s, e, quoted, context=context))
    yield from found
    if found and not quoted:
        yield from _continued(data, found[0][1], found[0][2])
    elif found and data[found[0][1]:found[0][1] + 1] in (b'"', b"'", b"`", b"\\"):
        yield from _concatenated(data, found[0][1], found[0][2])


#: A `.properties` value continued on the next line: a `\` glued to the value's end, then an
#: indented line holding one token (no `=` or `:`: Dockerfile's `ENV A=1 \` continues with pairs).
_CONTINUED = re.compile(rb"\\\r?\n[ \t]+([^\s=:\\]{6,1024})\\?[ \t]*(?:\r?\n|$)")


#: A quoted value's closing quote, a concatenation operator (`+`, Lua's `..`, PHP's `.`, VB's `&`,
#: Haskell's `<>`) with a line break before it (the next line indented: a diff's `+` at a line's
#: start is none) or after it (JSON-escaped too), Python's `\` line continuation, or spaces alone
#: (literals side by side on one line), then the next literal of four characters or more, no
#: space, and no key (no `:` or `=` after it): the secret goes on there (`PAYPAL_SECRET = "v1" +` then `"v2";`: split to pass a
#: scanner, or by a formatter).
_CONCAT_OP = rb"(?:\+|\.\.|\.|&|<>)"
_CONCAT = re.compile(rb"""\\?["'`](?:[ \t]*(?:(?:\r?\n|\\n)[ \t]+)?""" + _CONCAT_OP + rb"""[ \t]*(?:(?:\r?\n|\\n)[ \t]*)?"""
                     rb"""|[ \t]*\\\r?\n[ \t]*|[ \t]+)\\?["'`]([^"'`\\\s]{4,400})(?=\\?["'`](?![ \t]*[:=]))""")


def _concatenated(data: bytes, e: int, label: str):
    """The literals concatenated to a quoted value that ends at `e` (`_CONCAT`), up to eight."""
    for _ in range(8):
        m = _CONCAT.match(data, e)
        if not m:
            return
        yield m.start(1), m.end(1), label
        e = m.end(1)


#: A Helm chart's reference to a Secret that exists (`existingSecret:`), and a key's name in it.
_EXISTING_SECRET = re.compile(rb"""existingSecret\w*["']?[ \t]*:[ \t]*["']?[a-z0-9]""")   # named, not ""
_HELM_KEY_NAME = re.compile(rb"(?:user(?:name)?|password|secret|admin(?:Password)?|root(?:Password)?"
                            rb"|replication(?:Password)?|token|key|existingSecret\w*)Key")
_NAME_OF_A_KEY = re.compile(rb"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*")
#: What marks a Bitnami SealedSecret manifest (its values are ciphertext, `Ag...`).
_SEALED = re.compile(rb"\bkind:[ \t]*SealedSecret\b|\bencryptedData:")


def _continued(data: bytes, e: int, label: str):
    """The rest of a bare value ending at `e` that its line's last `\\` continues (`_CONTINUED`)."""
    m = _CONTINUED.match(data, e) if data[e:e + 1] == b"\\" else None
    if m and data[e - 1:e] not in (b" ", b"\t") and not m.group(1).startswith(b"-"):
        if shapes.secret_shaped(_s(data, m.start(1), m.end(1)), min_len=6):   # not a path, a word, a flag
            yield m.start(1), m.end(1), label


def _h_xml(rule: Rule, sp, data: bytes):
    """<KEY attrs>VALUE</...>, a namespace before KEY too (WS-Security's `<wsse:Password Type="...">`,
    whose `#PasswordDigest` type says the value is a digest, no password)."""
    if b"PasswordDigest" in data[sp[1][1]:sp[2][0]]:
        return
    yield from _keyed_value(data, sp[1], sp[2][0], sp[2][1], rule.name == "add-key-value")


def _h_key_literal(rule: Rule, sp, data: bytes):
    """A literal (the first of groups 2.. that took part) when the key in group 1 names a secret: a
    Gradle field's name and value, a key and the quoted value a formatter moved to the next line."""
    for g in range(2, len(sp)):
        if sp[g][0] >= 0:
            yield from _keyed_value(data, sp[1], sp[g][0], sp[g][1], True)
            return


#: One more literal after a literal of a value `_h_concat` reads: after an operator (`+`, Lua's
#: `..`, PHP's `.`, VB's `&`, Haskell's `<>`), or on the next line with none (Python's and C's
#: implicit concatenation); a comment before the break, Python's bytes; one character or more (the
#: last part may be short: `"a1"`).
_NEXT_PART = re.compile(rb"""\\?["'`][ \t]*(?:""" + _CONCAT_OP + rb"""[ \t]*(?:#[^\n]*)?(?:\r?\n[ \t]*)?"""
                        rb"""|(?:#[^\n]*)?\r?\n[ \t]*(?:""" + _CONCAT_OP + rb"""[ \t]*)?)"""
                        rb"""[bB]?\\?["'`]([^"'`\\\s]{1,400})(?=\\?["'`](?![ \t]*[:=]))""")


def _h_concat(rule: Rule, sp, data: bytes):
    """KEY = a value split over string literals, one a line (groups 2 and 3, then up to 14 more,
    `_NEXT_PART`): the key's check on their join; each literal is redacted."""
    cls = classify_key(_s(data, sp[1][0], sp[1][1]))
    if cls is None:
        return
    parts = [sp[2], sp[3]]
    while len(parts) < 16:
        m = _NEXT_PART.match(data, parts[-1][1])
        if not m:
            break
        parts.append(m.span(1))
    if any(shapes.is_typed_sequence(_s(data, a, b)) for a, b in parts):
        return  # `PASSWORD_CHARS = ("abcdefghijklmnopqrstuvwxyz" "ABCDEF..." "0123456789")`: an alphabet
    if value_ok(cls[0], "".join(_s(data, a, b) for a, b in parts), quoted=True):
        for a, b in parts:
            yield a, b, cls[1]


def _h_xml_phrase(rule: Rule, sp, data: bytes):
    """A password element (group 1) holding a passphrase (group 2): words with spaces and a digit."""
    cls = classify_key(_s(data, sp[1][0], sp[1][1]))
    value = _s(data, sp[2][0], sp[2][1])
    if cls is not None and cls[0] == "pw" and " " in value.strip() and told.told_passphrase(value.strip()):
        s = sp[2][0] + len(value.encode("utf-8", "surrogatepass")) - len(value.lstrip().encode("utf-8", "surrogatepass"))
        yield s, _end(s, value.strip()), cls[1]


def _h_reverse(rule: Rule, sp, data: bytes):
    """"VALUE" == password: a literal compared with a secret-named variable."""
    j = 1 if sp[1][0] >= 0 else 2
    yield from _keyed_value(data, sp[3], sp[j][0], sp[j][1], True, context=False)


def _h_kwquoted(rule: Rule, sp, data: bytes):
    """password "VALUE": a quoted literal right after a password/secret word (no separator). In
    SQL (`CREATE ROLE r LOGIN PASSWORD '...'`, `ALTER USER u WITH PASSWORD '...'`) the literal is
    the password whatever it holds, spaces too (a passphrase), unless it is clearly none."""
    j = next(g for g in (2, 3, 4) if sp[g][0] >= 0)
    s, e = sp[j]
    sql = ((_SQL_BEFORE_PASSWORD.search(data, max(0, sp[1][0] - 40), sp[1][0])
            or _SQL_ROLE_STATEMENT.search(data, max(0, sp[1][0] - 300), sp[1][0]))
           and _s(data, *sp[1]).lower() == "password")
    if sql and b" " in data[s:e]:
        value = _s(data, s, e)
        words = value.lower().split()
        marked = any(not c.isalpha() and not c.isspace() for c in value)   # a digit or a symbol
        if ((len(words) >= 3 or (len(words) == 2 and marked))
                and not any(c in value for c in "\"+")
                and not any(CREDENTIAL_WORD.match(w) or w in ("fake", "dummy", "example", "sample") for w in words)
                and shapes.context_secret(value, quoted=True) and not ABOUT_A_PASSWORD.search(value)
                and (words[0] not in _INSTRUCTION_WORDS or marked)
                and sum(w in FUNCTION_WORDS for w in words) <= (1 if len(words) >= 5 else 0)):
            # (not `'" + newPassword + "'` in code, not `'REPLACE ME'`, not `'see the vault entry'`;
            # a long passphrase may hold one small word: `autumn leaves fall quietly on Tuesday`)
            yield s, e, "password"
        return
    # a role's or a user's `PASSWORD 'v'` is a credential context; elsewhere a keyword and a literal
    # with no operator are weaker evidence
    yield from _keyed_value(data, sp[1], s, e, True, ("pw", "secret"), context=bool(sql))


#: A role or user statement, its `PASSWORD` later on (`CREATE ROLE r SUPERUSER CREATEDB PASSWORD`).
_SQL_ROLE_STATEMENT = re.compile(rb"(?i)\b(?:CREATE|ALTER)[ \t]+(?:USER|ROLE)[ \t]+[^;\n]*$")
#: The SQL words right before `PASSWORD '...'` in a role or user statement.
_SQL_BEFORE_PASSWORD = re.compile(rb"(?i)\b(?:WITH|LOGIN|ROLE[ \t]+\w+|USER[ \t]+\w+)[ \t]+(?:(?:UN)?ENCRYPTED[ \t]+)?$")


def _h_cli(rule: Rule, sp, data: bytes):
    s, e = sp[2][0], sp[2][1]
    quoted = data[s:s + 1] in (b'"', b"'")
    if quoted:
        s, e = s + 1, e - 1
    if shapes.is_reference(_s(data, s, e)):
        return   # the whole argument (`--secret type=env,id=GH_TOKEN,env=GH_TOKEN`), before a comma cuts it
    if quoted and b" " in data[s:e]:
        # `gpg --passphrase "velvet otter climbs nine ladders"`: a passphrase given to a password flag
        cls = classify_key(_s(data, *sp[1]))
        if cls is not None and cls[0] == "pw" and told.told_passphrase(_s(data, s, e), digit=False):
            yield s, e, cls[1]
        return
    yield from _keyed_value(data, sp[1], s, e, quoted)


def _h_pwvalue(rule: Rule, sp, data: bytes):
    """A password in group 1 (`.netrc` `password VALUE`, `mysql -pVALUE`), quotes stripped."""
    s, e = sp[1][0], sp[1][1]
    if data[s:s + 1] in (b'"', b"'") and e - s >= 2 and data[e - 1:e] == data[s:s + 1]:
        s, e = s + 1, e - 1
    value = _clean_bare(_s(data, s, e))
    if not value or value.startswith("$") or _WELLFORMED_INTERP.search(value):
        return
    if value_ok("pw", value):
        yield s, _end(s, value), rule.label


def _h_spaced(rule: Rule, sp, data: bytes):
    """`remote_password v` on a line of its own (a space-separated config: mosquitto, redis):
    the key names a password or a secret, and the value is shaped like one (`keys.value_ok` out of a
    credential context: such a line may be prose, `Password protected`)."""
    cls = classify_key(_s(data, sp[1][0], sp[1][1]))
    if cls is None or cls[0] not in ("pw", "secret"):
        return
    s, e = sp[2]
    value = _clean_bare(_s(data, s, e))
    if value and not value.startswith("$") and value_ok(cls[0], value, context=False):
        yield s, _end(s, value), cls[1]


def _h_jprop(rule: Rule, sp, data: bytes):
    """-DNAME=VALUE: NAME classified as a key (`sonar.login` names a token too), VALUE in context.
    The name is group 1 and the value group 2, or the other way round (`name_group`: 2)."""
    ng = rule.options.get("name_group", 1)
    name = _s(data, sp[ng][0], sp[ng][1])
    s, e = sp[3 - ng][0], sp[3 - ng][1]
    if data[s:s + 1] in (b'"', b"'"):
        s, e = s + 1, e - 1
    value = _clean_bare(_s(data, s, e))
    if not value or _WELLFORMED_INTERP.search(value):
        return
    cls = classify_key(name) or (("secret", "token") if name.lower().endswith(".login") else None)
    if cls is not None and value_ok(cls[0], value, False):
        yield s, _end(s, value), cls[1]


def _h_kwvalue(rule: Rule, sp, data: bytes):
    """KEYWORD VALUE with no operator (`pdfshift-KEY 4f1c...`): the value must look random."""
    cls = classify_key(_s(data, sp[1][0], sp[1][1]).replace(" ", "_"))
    if cls is None:
        return
    s, e = sp[2][0], sp[2][1]
    value = _clean_bare(_s(data, s, e))
    if shapes.token_shaped(value, min_len=24, min_entropy=3.5) and not _dominant_over_half(value):
        yield s, _end(s, value), cls[1]


def _h_phrase(rule: Rule, sp, data: bytes):
    """password: words with spaces, to the end of the line (YAML, INI): a passphrase of 2 to 8
    words, or to the rule's `max_words` (a quoted one: its quotes say where it ends)."""
    cls = classify_key(_s(data, sp[1][0], sp[1][1]))
    if cls is None or cls[0] != "pw":
        return
    s, e = sp[2][0], sp[2][1]
    value = _s(data, s, e).rstrip()
    words = value.split()
    if len(words) > 8 and not any(c.isdigit() for c in value):
        return  # nine words or more with no digit: a sentence (`"Wir senden Ihnen einen Link ... per E-Mail"`)
    if not 2 <= len(words) <= rule.options.get("max_words", 8) or any(len(w) > 24 for w in words) or value.endswith((".", ":", "?", "!")):
        return  # a sentence about a password, not a passphrase
    if any(shapes.is_reference(w) or shapes.is_placeholder(w) for w in words) or shapes.not_a_value(value) \
            or shapes.is_placeholder(value):
        return  # also `password:  24 bytes` (`kubectl describe secret`), `(sensitive value)` (`terraform show`)
    if _TYPE_PHRASE.match(value):
        return  # a parameter's type and default (`password: bytes | None = None,`, `PASSWORD: Final = 10074`)
    if any(CREDENTIAL_WORD.match(w) for w in words) or names_foreign_credential(value):
        return  # a message about one (`error.password=Password is too short`, an i18n bundle's line,
        # `"sifre_tekrar": "Şifre (tekrar)"`)
    if data[sp[1][1]:s] == b"=" and not APP_PASSWORD.fullmatch(value):
        # `KEY=v w` with no space: an environment variable's `DB_PASSWORD=v docker compose up` is a
        # value, then a command (the assignment rule's), unless a Google app password (four groups
        # of four letters); a `.properties` line's value runs to the line's end
        # (`db.password=Blue Canary Sings 42`), but a command's words or a message about it
        # (`validation.password=Must be at least 8 characters`) are none
        key = _s(data, sp[1][0], sp[1][1])
        if key.upper() == key or any(w.startswith("-") or "/" in w or "=" in w for w in words[1:]) \
                or ABOUT_A_PASSWORD.search(value) or words[0].lower() in _INSTRUCTION_WORDS:
            return
    yield s, _end(s, value), "password"


#: A type in code, a union, then a default: `bytes | None = None,`, `Optional[str] = None`, `Final = 10074`.
_TYPE_PHRASE = re.compile(r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?(?:[ \t]*\|[ \t]*[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?)*"
                          r"(?:[ \t]*=[ \t]*(?:None|\.\.\.|-?\d+|True|False|[\"'][^\"'\n]*[\"']))?[ \t]*[,)]?$")
#: How a message telling what to do with a password starts (`help.password=Choose 3 random words`).
_INSTRUCTION_WORDS = frozenset("choose enter type use pick provide must should please leave ask see contains "
                               "reset".split())


def _h_is(rule: Rule, sp, data: bytes):
    s, e, quoted = value_group(sp, 2)
    if not quoted and any(c in data[s:e] for c in b"()/"):
        return  # `getByText(/password is required/i))`: code around the words
    if not quoted and data[e - 1:e] == b":" and data[s:e - 1].isalpha():
        return  # `the master key is missing: ...`, `the api key is invalid: 401`: a word, then what follows
    if not quoted and data[e - 1:e] == b":":
        e -= 1   # `the api key is v: use it`: the colon is the sentence's
    if quoted and b" " in data[s:e]:
        # `the wifi password is "purple monkey dishwasher 7"`
        cls = classify_key(_s(data, sp[1][0], sp[1][1]))
        if cls is not None and cls[0] == "pw" and told.told_passphrase(_s(data, s, e)):
            yield s, e, cls[1]
        return
    yield from _keyed_value(data, sp[1], s, e, quoted, context=False)  # prose: "the token is invalid"


HANDLERS = {
    "token": _h_token,
    "entropy": _h_entropy,
    "pem": _h_pem,
    "k8s": _h_k8s,
    "reverse": _h_reverse,
    "kwquoted": _h_kwquoted,
    "assign": _h_assign,
    "xml": _h_xml,
    "cli": _h_cli,
    "is": _h_is,
    "userinfo": web.h_userinfo,
    "query": web.h_query,
    "header": web.h_header,
    "bearer": web.h_bearer,
    "header_kv": web.h_header_kv,
    "curl_user": web.h_curl_user,
    "pwvalue": _h_pwvalue,
    "cookie": web.h_cookie,
    "cookie_header": web.h_cookie_header,
    "jprop": _h_jprop,
    "kwvalue": _h_kwvalue,
    "phrase": _h_phrase,
    "envdefault": arguments.h_env_default,
    "call": arguments.h_call,
    "setter": arguments.h_setter,
    "form_fill": arguments.h_form_fill,
    "cracked": arguments.h_cracked,
    "found_login": arguments.h_found_login,
    "shaped_password": arguments.h_shaped_password,
    "printed": arguments.h_printed,
    "namevalue": arguments.h_name_value,
    "declared_default": defaults.h_declared_default,
    "option_default": defaults.h_option_default,
    "chat": arguments.h_chat,
    "told": told.h_told,
    "told_phrase": told.h_told_phrase,
    "told_bare_phrase": told.h_told_bare_phrase,
    "table": arguments.h_table,
    "redis_auth": arguments.h_redis_auth,
    "generated": arguments.h_generated,
    "userlist": arguments.h_userlist,
    "gradle": _h_key_literal,
    "nextline": _h_key_literal,
    "concat": _h_concat,
    "xml_phrase": _h_xml_phrase,
    "command": arguments.h_command,
    "htpasswd": arguments.h_htpasswd,
    "prose": told.h_prose,
    "piped": arguments.h_piped,
    "repl": arguments.h_repl,
    "spaced": _h_spaced,
    "login_pair": arguments.h_login_pair,
    "values_after": arguments.h_values_after,
}

#: The kinds whose handler takes a `state` dict (one per rule and scan: what it found out about the
#: whole text once, or how far it has read), told by the handler's own parameters.
STATEFUL_KINDS = frozenset(k for k, h in HANDLERS.items() if "state" in inspect.signature(h).parameters)
