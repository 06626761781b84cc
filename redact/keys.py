"""Keys and values: which keys name a secret (`classify_key`), what value they need (`value_ok`),
and how a bare value is cut out of the text around it (`_clean_bare`, linear in the value).

Standard library only. `classify_key` is linear in the key and cached; `value_ok` delegates the
value rule to `redact.shapes` (`context_secret` for a credential context: the one place that rule
is written down).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata

from . import shapes
from .patterns import PROVIDERS as _KEY_PROVIDERS
from .patterns import FOREIGN_KEY_WORDS, FOREIGN_PASSWORD_WORDS, PROVIDERS_CLASSIFY_ONLY

PROVIDERS = _KEY_PROVIDERS + PROVIDERS_CLASSIFY_ONLY


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SEGSPLIT = re.compile(r"[_.\-\s:/\[\]$@\"']+")
#: Words that say a value is a checksum or a hash of something (`GITHUB_SHA`, `content_digest`).
_CHECKSUM_WORDS = frozenset("sha sha1 sha256 sha512 md5 hash digest checksum etag fingerprint".split())
# A key whose last segment is one of these names metadata about a secret, not the secret.
_EXCLUDED_LAST = frozenset(
    """id ids name names url urls uri uris endpoint endpoints file files path paths dir directory
    time date timestamp
    length len size type types count counts limit limits ttl timeout expiry expires expiration
    expire expired header headers env var vars variable field fields prefix suffix format version
    mode policy provider providers method methods required enabled enable disabled hint label
    placeholder example examples description desc help doc docs regex pattern template location
    source class schema column table index usage budget estimate tokens keys secrets passwords
    manager helper service store storage kind ref refs arn query params parameter param option
    options flag flags status state length_bytes bytes bits algorithm algo alg cipher scheme
    strategy rotation rotated at created updated issued reset lifetime duration window
    organization organisation org orgs project projects model models region team workspace ms
    rate threshold ratio percent max min used remaining left total cost price spent delivery
    mgr placement beta features markup children attrs nesting
    failed fail error errors message messages msg prompt title text success succeeded stored saved
    found missing invalid changed cleared removed commit revision rev stdin stdout cmd command
    ts tsx js jsx mjs cjs py go rs rb java kt swift md json yaml yml toml txt sh lock log html
    css scss vue svelte""".split()
) | _CHECKSUM_WORDS
#: The words before a provider's `id` that make it one half of a credential (`client_id`, `access_id`).
_CLIENT_ID_WORDS = frozenset("client access app application api key login consumer".split())
# Segments that never name a secret even though they contain a keyword.
_EXCLUDED_SEGMENTS = frozenset(
    """keyboard keyboards monkey turkey hockey donkey whiskey jockey hotkey hotkeys keyword keywords
    keystroke keystrokes keypress keydown keyup keyframe keyframes keychain keymap keymaps keycode
    keypad keyring keyset tokenizer tokenizers tokenize tokenized tokenization tokenizing passport
    passage passages passenger passengers bypass compass passthrough passive passed passes passing
    authored author authors authorize authorized authorization_url oauth2 authenticate
    authenticated authentication authenticator authz authn cookies csrf xsrf public primary
    foreign sort partition cache hash range row dict map object idempotency composite unique
    natural surrogate lookup group react list item column join cursor pagination page next prev
    dedup dedupe sequence bucket schema shortcut shortcuts sharding shard api_version resume continuation
    sync""".split()
)
# A word before the secret word that says the value is not a real one.
_NOT_REAL = frozenset("fake dummy mock example sample non not no placeholder invalid wrong bad bogus".split())
_PW_SEGMENTS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "pw", "passw", "pswd", "passcode", "pword",
                          "psk"})
_SECRET_QUALIFIERS = frozenset(
    """api access secret private auth client master encryption encrypt decrypt signing sign
    license account app application service shared sas storage subscription consumer webhook
    admin root session hmac jwt bot deploy ssh gpg pgp cos iam cloud x ingest insert write read
    server secure crypto aes rsa otp totp mfa""".split()
)
#: Words before `tokens` that make it tokens rather than a count of them (`max_tokens`).
_TOKENS_QUALIFIERS = frozenset("auth access api bearer refresh session personal".split())
# Last words of a key that name the secret itself ("session_token", "access_key").
_SECRET_LAST = frozenset({"token", "key", "secret", "credential", "credentials"})
_KEY_COMPOUNDS = ("apikey", "accesskey", "secretkey", "privatekey", "authkey", "clientkey", "masterkey",
                  "accountkey", "appkey", "licensekey", "serverkey", "sharedaccesskey", "signingkey",
                  "encryptionkey", "sessionkey", "hmackey", "restkey", "devkey", "userkey", "ingestkey")
_KEY_COMPOUND_SET = frozenset(_KEY_COMPOUNDS)
_PROVIDER_NAMES = frozenset(p.replace("_", "") for p in PROVIDERS)
_PROVIDER_SET = tuple(sorted({p.replace("_", "") for p in PROVIDERS if len(p) >= 4}, key=len, reverse=True))
_PROVIDER_START = re.compile("(?:" + "|".join(re.escape(p) for p in _PROVIDER_SET) + ")")


def _has_compound(segs: list[str]) -> bool:
    """A key compound (`apikey`, `masterkey`...) spelled in one or more whole segments
    (`api_key`, `masterKey`), not glued to more letters (`master-keying`)."""
    for i in range(len(segs)):
        word = ""
        for seg in segs[i:i + 3]:
            word += seg
            if word in _KEY_COMPOUND_SET:
                return True
            if not any(c.startswith(word) for c in _KEY_COMPOUNDS):
                break
    return any(c in seg and seg.endswith(c) for seg in segs for c in _KEY_COMPOUNDS)


_PERCENT_BRACKET = re.compile(r"%5[BbDd]")


def key_segments(key: str) -> tuple[str, ...]:
    """The lower-case words of a key (`dbPassword` -> db, password; `AWS_SECRET-key` -> aws, secret,
    key), none for an empty key or one over 120 characters (no key is that long). A form's encoded
    brackets are read decoded (`user%5Bpassword%5D` -> user, password)."""
    k = key.strip().strip("\"'`$@-")
    if "%" in k:
        k = _PERCENT_BRACKET.sub(" ", k)
    if not k or len(k) > 120:
        return ()
    return tuple(s for s in _SEGSPLIT.split(_CAMEL.sub(r"\1_\2", k).lower()) if s)


def _names_password_or_secret(segs: tuple[str, ...]) -> bool:
    """A key word that says password or secret outright (`db_pwd`, `clientSecret`)."""
    return any(s in _PW_SEGMENTS or "secret" in s or "password" in s for s in segs)


#: Words after `pass` that make it the verb or a filter's pass of code, no password (`pass_zero`,
#: `pass_through`, click's `pass_context`, `pass_env`).
_PASS_IN_CODE = frozenset("zero through thru band filter fail all first args kwargs arg env context ctx obj".split())


#: Words that end in "pass" and name no password (a filter's band, a way around).
_PASS_WORDS = frozenset("bypass compass lowpass highpass bandpass allpass overpass underpass trespass surpass "
                        "encompass multipass onepass twopass singlepass firstpass".split())


def _foreign(words: tuple[str, ...]) -> re.Pattern:
    """The words, `_` or a space in them as any separator or none, and as JSON escapes them
    (`contrase\\u00f1a`)."""
    forms = {f for w in words for f in (w, json.dumps(w)[1:-1].lower())}

    def one(w: str) -> str:
        body = re.escape(w).replace("_", "[_ .-]?").replace(r"\ ", "[_ .-]?")
        # an ASCII word stands alone between letters (`haslo`, not `haslocal`); CJK has no spaces
        return r"(?<![a-z])" + body + r"(?![a-z])" if w.isascii() and "\\u" not in w else body
    return re.compile("|".join(one(w) for w in sorted(forms, key=len, reverse=True)))


#: A key's password or key word in another language (`patterns.FOREIGN_PASSWORD_WORDS`): in the
#: lower-cased key, anywhere (`DB_WACHTWOORD`, `源数据库密码`, `mật_khẩu`).
_FOREIGN_PASSWORD = _foreign(FOREIGN_PASSWORD_WORDS)
_FOREIGN_KEY = _foreign(FOREIGN_KEY_WORDS)


def names_foreign_credential(text: str) -> bool:
    """`text` holds a password's or a key's word of another language (`Şifremi unuttum`)."""
    low = text.lower()
    return bool(_FOREIGN_PASSWORD.search(low) or _FOREIGN_KEY.search(low))


def _names_password(segs: tuple[str, ...]) -> bool:
    """A key word of a password (`db_pwd`, `SMTP_PASS`, `pass_phrase`); `pass` before a word of
    `_PASS_IN_CODE` is none, nor a word of `_PASS_WORDS` (`bandpass`)."""
    return any((s in _PW_SEGMENTS or s.startswith("passw") or s.endswith(("password", "pass")))
               and s not in _PASS_WORDS
               and not (s == "pass" and i + 1 < len(segs) and segs[i + 1] in _PASS_IN_CODE)
               for i, s in enumerate(segs))


def _names_site_key(segs: tuple[str, ...]) -> bool:
    """`data-sitekey`, `RECAPTCHA_SITE_KEY`: a captcha's site key, public by design."""
    return bool(segs) and (segs[-1] == "sitekey" or segs[-2:] == ("site", "key"))


@functools.lru_cache(maxsize=8192)
def classify_key(key: str) -> tuple[str, str] | None:
    """(tier, label) for a key that names a secret, else None.

    Tiers: 'pw' (password-like; value must be password shaped), 'secret' (token / secret / api key;
    secret shaped), 'key' (a bare or unqualified *key; token shaped), 'provider' (only a provider
    name, e.g. `cloudflare:`; token shaped).
    """
    segs = key_segments(key)
    if not segs:
        return None
    # a provider name as a segment prefix (`stripe_key`) or spelled over segments (`MessageBird`)
    provider = any(_PROVIDER_START.match(s) for s in segs) or any(
        segs[i] + segs[i + 1] in _PROVIDER_NAMES for i in range(len(segs) - 1))
    if segs[-1] == "tokens" and len(segs) >= 2 and segs[-2] in _TOKENS_QUALIFIERS:
        return "secret", "token"   # `DENO_AUTH_TOKENS`, `access_tokens`: tokens, not a count of them
    if segs[-1] in _EXCLUDED_LAST:
        # "sumologic_access_id", "MessageBirdClientID": provider ids are credentials too
        if provider and segs[-1] in ("id", "ids", "login") and (len(segs) <= 2 or segs[-2] in _CLIENT_ID_WORDS):
            return "provider", "token"   # (not `anthropic-organization-id`: an organization's id)
        # "access_key_id", "accessKeyId", "access_id": the public half of an access key pair, as
        # AWS and IBM COS HMAC keys have; a random value there is a credential too
        if segs[-1] == "id" and "access" in segs[:-1]:
            return "key", "api_key"
        return None
    kconfig = segs[0] == "config" and len(segs) >= 4 and key.strip().upper() == key.strip()
    if any(s in _NOT_REAL for s in (segs[2:-1] if kconfig else segs[:-1])):
        # `fake_token`, `dummy_password`, `nonMatchingToken`: the key says it is no secret; not a
        # Kconfig symbol's namespace (`CONFIG_EXAMPLE_WIFI_PASSWORD` of ESP-IDF's example menus:
        # upper case, `CONFIG_`, the namespace, then at least two words)
        return None
    if _names_site_key(segs):
        return None
    if (len(segs) == 2 and segs[0] == "hashed") or segs[-1] in ("hash", "hashes", "digest", "checksum"):
        return None  # `hashed_secret`, `password_hash`, `token_digest`: a hash of the secret, not the secret
    if "search" in segs and "only" in segs:
        return None  # `ALGOLIA_SEARCH_ONLY_KEY`: a search-only key, which its provider ships to browsers
    if segs[-1] == "secret" and "existing" in segs[:-1]:
        return None  # `existingSecret: grafana-admin` (a Helm chart's convention): the name of a secret
    if segs[-1] in ("salt", "pepper") and len(segs) >= 2 and segs[-2] == "hash":
        return "key", "secret"   # Drupal's `hash_salt`: what a hash is salted with, not a hash
    if any(s in _EXCLUDED_SEGMENTS for s in segs):
        # "public_key", "cache_key", "max_tokens", "next_page_token": metadata or code, never the
        # secret itself, unless the key also says password/secret explicitly, or ends in a secret
        # word named by a qualifier of its own ("__Secure-next-auth.session-token": a session
        # token, whatever the words before it)
        if not (_names_password_or_secret(segs)
                or (len(segs) >= 2 and segs[-1] in _SECRET_LAST and segs[-2] in _SECRET_QUALIFIERS
                    and segs[-2] not in _EXCLUDED_SEGMENTS)):
            return None
    if _names_password(segs) or _FOREIGN_PASSWORD.search(key.lower()):
        return "pw", "password"
    if any("secret" in s for s in segs):
        return "secret", "secret"
    if any(s == "token" or (s.endswith("token") and s != "tokens") for s in segs):
        return "secret", "token"
    if any(s in ("credential", "credentials", "creds", "cred") for s in segs):
        return "secret", "credential"
    if _FOREIGN_KEY.search(key.lower()):
        return "secret", "api_key"   # `api_ключ`, `密钥`, `Schlüssel`
    if segs[-2:] == ("erlang", "cookie"):
        return "secret", "secret"   # RabbitMQ's `erlangCookie`: the shared secret of an Erlang cluster
    if segs[-1] in ("totp", "hotp"):
        return "key", "secret"   # a password manager's `"totp": "..."`: the one-time codes' seed (random, 16+)
    if any(s in ("salt", "pepper") for s in segs):
        return "key", "secret"  # no credential word: a salt needs a random token's shape
    if _has_compound(segs):
        return "secret", "api_key"
    last = segs[-1]
    if last == "key" or (last.endswith("key") and len(last) <= 24 and last not in _EXCLUDED_SEGMENTS):
        if any(s in _SECRET_QUALIFIERS for s in segs):
            return "secret", "api_key"
        return "key", "api_key"
    if segs[-1] in ("auth", "oauth", "authtoken", "authtok", "authorization", "apitoken", "accesstoken"):
        return "secret", "token"  # a key named auth is a credential context, a provider's too (`square_oauth`)
    if provider and not any(s in ("id", "ids") for s in segs):
        return "provider", "token"   # not `STRIPE_PRICE_ID_PRO`: an id of a provider's object
    return None


#: Words of a key that say its value is public or a checksum, not a secret; and the anti-forgery
#: words of a web page (`nonce="..."`, `csrf_token`: bound to a session or a page, and public to
#: whoever has the page). A `<meta ... content="...">` attribute is told by `handlers._h_entropy`:
#: `content` alone is any JSON message's key, and says nothing of its value.
_PUBLIC_WORDS = frozenset("public publishable pub integrity cache nonce csrf xsrf timestamp".split()) | _CHECKSUM_WORDS


#: Last words of a key that names an identifier (`rawId`, `request_id`, `kid`), and the words
#: that make an identifier a credential after all (`session_id`, `access_key_id`).
_ID_LAST = frozenset("id ids uuid guid kid jti".split())
_ID_CREDENTIAL_WORDS = frozenset("session sess sid secret token auth access key api".split())


def says_not_secret(key: str) -> bool:
    """The key itself says its value is no secret: one of its words says the value is not a real
    one (`_NOT_REAL`: `fake_token`, `wrongStart`) or is public or a checksum (`_PUBLIC_WORDS`:
    `public_key`, `hash`), or the key names an identifier (`_ID_LAST`: `"rawId": "..."`, not a
    `session_id`), and none is a password or secret word. For the rules that find a value with no
    key of their own (`quoted-high-entropy`), the key it is assigned to, when there is one."""
    segs = key_segments(key)
    while len(segs) > 1 and segs[-1].isdigit():
        segs = segs[:-1]   # `x-amz-id-2`: a numbered identifier is an identifier
    if segs and segs[-1] in _CHECKSUM_WORDS:
        return True   # `password_hash`, `secret_digest`: what a secret hashes to, not the secret
    if _names_password_or_secret(segs):
        return False
    if segs and segs[-1] in _ID_LAST and not any(s in _ID_CREDENTIAL_WORDS for s in segs):
        return True
    if _names_site_key(segs):
        return True
    if segs and (segs[-1] in _EXCLUDED_LAST or any(s in _EXCLUDED_SEGMENTS for s in segs)) \
            and not any(s in _ID_CREDENTIAL_WORDS for s in segs) and classify_key(key) is None:
        return True   # `"name": ...`, `"NextToken": ...`, `"Content": ...`: what the key names is no secret
    return any(s in _NOT_REAL or s in _PUBLIC_WORDS for s in segs)


def value_ok(tier: str, value: str, quoted: bool = False, context: bool = True) -> bool:
    """Whether `value` after a key of `tier` is redacted.

    'pw' and 'secret' keys are credential contexts (`context=True`, every KEY=value, XML, CLI flag
    and password rule): `shapes.context_secret`, redacted unless clearly not a secret. Weaker
    evidence (prose "the password is X", a literal compared with a password variable, a keyword
    and a quoted string with no operator: `context=False`) keeps the shape checks
    (`shapes.password_shaped` / `secret_shaped`). 'key' (a bare or unqualified *key) and
    'provider' keys need a random-looking token (`shapes.token_shaped`) that is no encoded
    readable text (`shapes.encoded_text`)."""
    if tier != "pw" and shapes.is_date(value):
        return False  # `token_expires_on: 2025-12-31`: a date (after a password key, it may be the password)
    if shapes.publishable(value):
        return False  # `STRIPE_PUBLISHABLE_KEY=pk_live_...`: a key its provider ships to browsers
    label = _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value) if "\\u" in value else value
    if not any(c.isdigit() for c in label) and names_foreign_credential(label):
        return False  # `"api_ключ": "Ключ API"`, `"contrase\u00f1a": "Contrase\u00f1a"`: a label that names it
    if tier != "pw" and shapes.is_credential_class(value):
        return False  # `"input_token": "NextToken"`, `private_key: x25519.X25519PrivateKey`: a name in code
    if tier in ("pw", "secret") and context:
        return shapes.context_secret(value, quoted=quoted)
    if shapes.not_a_value(value) or shapes.is_reference(value):
        return False  # a password's hash, a size, a credential's file, a reference: whatever the evidence
    if tier in ("pw", "secret") and shapes.is_code_reference(value, quoted):
        return False  # code, whatever the evidence (`(token: AuthToken): ...`); `context_secret` says so too
    if tier == "pw":
        if quoted and len(value) >= 8 and value.isalpha() and not shapes.is_placeholder(value) \
                and value.lower() == value and len(set(value)) >= 5:
            return True  # password = "rootpasswd": a quoted literal after a password key
        return shapes.password_shaped(value)
    if tier == "secret":
        return shapes.secret_shaped(value)
    # 'key' and 'provider' keys are weaker evidence than a secret word: a typed sequence there
    # (`meraki: abdefghjk0123456789...`) is a documentation example, as it is in a provider's own
    # token format (`handlers._h_token`)
    if shapes.is_typed_sequence(value):
        return False
    if shapes.encoded_text(value):
        return False  # `README_B64 = "IyBBY21l..."`: encoded content, not a token
    if shapes.is_code_reference(value, quoted):
        return False  # `key = list(self.keys())[0]`: code
    if tier == "key":
        return shapes.token_shaped(value, min_len=16, min_entropy=3.0)
    return shapes.token_shaped(value, min_len=12, min_entropy=3.0)


#: A JSON `\\uXXXX` escape (a label's `Contrase\\u00f1a`).
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
# `${VAR}`, `${VAR:-default}`, `{{ var }}`, `$(command)`. Written so that Python's backtracking
# stays linear on any value: the name stops at the first `:-`, spaces are one class with the
# template's words, and what runs to a closing character is bounded (`${a:-${a:-...` without `}`).
_WELLFORMED_INTERP = re.compile(
    r"\$\{[A-Za-z_](?:[\w.\-]|:(?!-))*(?::-[^}]{0,256})?\}|\{\{[\w.|'\"() \t\-]+\}\}|\$\([^)]{0,512}\)")
_ESCAPE_CUT = re.compile(r"\\[nrt\"'\\]|\\$")
_SPACE = re.compile(r"\s")


#: A name in code, dotted or not (letters, digits at a part's end), then what follows a name in an
#: argument list, a mapping, an expression or a type annotation (`f(password=pw)`, `{token: ticker}`,
#: `key: Token, sub: str`, `password: _PasswordType | None = None`, `Whitespace + group(...)`); not a
#: Markdown cell's `|`, nor a value with digits inside (`{name: db, password: Kx9mP2vQw7z}`).
_RE_BARE_IDENT = re.compile(rb"([A-Za-z_][A-Za-z_]*[0-9]*(?:\.[A-Za-z_][A-Za-z_]*[0-9]*)*)[ \t]*"
                            rb"([,)};+]|\|(?=[ \t]*None\b)|=(?=[ \t]*(?:None|\.\.\.)))")
_QUERY_NEXT = re.compile(r"&[A-Za-z_][\w.\-\[\]]*=")
#: A next `name=` pair glued to a bare value by a comma (`password=abc,user=bob`).
PAIR_NEXT = re.compile(r",[A-Za-z_][\w.\-]*=")


def _unicode_cut(value: str) -> str:
    """`value` up to its first non-ASCII space or punctuation (Unicode categories Z* and P*, and
    other spaces such as U+0085): the rules' byte classes see only ASCII spaces and punctuation, so
    a bare value would run on into `\u00a0next` or `，完成。`. Letters of any script stay."""
    if value.isascii():
        return value
    for i, ch in enumerate(value):
        if ch > "\x7f" and (ch.isspace() or unicodedata.category(ch)[0] in "PZ"):
            return value[:i]
    return value


_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


def _clean_bare(value: str) -> str:
    """Cut an unquoted value at an escaped newline/quote, the next URL parameter or `,name=` pair, a non-ASCII
    space or punctuation mark; strip trailing punctuation. Linear in the value."""
    value = _unicode_cut(value)
    m = _ESCAPE_CUT.search(value)
    if m:
        value = value[: m.start()]
    m = _QUERY_NEXT.search(value)
    if m:
        value = value[: m.start()]
    m = PAIR_NEXT.search(value)
    if m:
        value = value[: m.start()]  # `password=abc,user=bob`: the next pair is not the value
    end = len(value)
    counts: dict[str, int] = {}
    while end and value[end - 1] in ".,;)]}>\\":
        # keep a closing bracket that has its opening bracket inside the value
        ch = value[end - 1]
        pair = _CLOSERS.get(ch)
        if pair:
            if pair not in counts:  # counted once over the whole value, then kept up to date
                counts[pair] = value.count(pair, 0, end)
            if ch not in counts:
                counts[ch] = value.count(ch, 0, end)
            if counts[pair] >= counts[ch]:
                break
            counts[ch] -= 1
        end -= 1
    return value[:end]
