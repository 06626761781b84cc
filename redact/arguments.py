"""Secrets that code and commands pass by position, with no key beside them:
  * the default of a secret-named environment variable (`os.getenv("DB_PASSWORD", "v")`,
    `${DB_PASSWORD:-v}`: rule `env-default`);
  * an argument that a credential call takes by its API (`smtp.login(user, "v")`,
    `jwt.sign(payload, "v")`, `new PDO(dsn, user, "v")`: rule `credential-call`);
  * a name and its value given as two fields (`- name: DB_PASSWORD` / `value: v` of a Kubernetes
    container's env: rule `name-value`);
  * credentials someone types in a chat after a creds/login word (`admin / v`: rule
    `chat-credentials`, password shaped, with letters and digits);
  * what a command prints when asked for one secret (`kubectl ... jsonpath='{.data.X}'`, `vault kv
    get -field=...`: rule `printed-secret`), and a literal piped into a command that stores a
    secret (`echo "v" | wrangler secret put K`: rule `piped-secret`);
  * a password a command, SQL or a config line takes as an argument (`zip -P v`, `IDENTIFIED BY
    'v'`, `ipsec.secrets`: `h_command`; `htpasswd -b`: `h_htpasswd`), one a tool printed as
    generated (`h_generated`), Redis' `AUTH` (`h_redis_auth`), PgBouncer's auth file
    (`h_userlist`);
  * a setter's or a builder's literal (`setPassword("v")`: `h_setter`), what an end-to-end test
    types into a password field (`h_form_fill`), a table's password column (`h_table`);
  * what offensive-security tools print: a cracked hash's plaintext (`h_cracked`), a login a
    scanner found (`h_found_login`).
Credentials told in prose are `redact.told`'s.

All are credential contexts (issue 14, `shapes.context_secret`): the value is redacted unless it is
clearly not a secret (a reference, a placeholder, empty). In code only string literals count: a
variable, a call or an attribute in that place is code, and stays. The handlers take the RE2 match
spans of those rules (`redact.rules`) over the UTF-8 bytes of the text and yield byte spans.
"""

from __future__ import annotations

import bisect
import re

from . import shapes
from .keys import classify_key, key_segments, value_ok
from .patterns import APP_PASSWORD, CREDENTIAL_WORD
from .spans import first as _first, text as _text
from .told import _CAMEL_NAME, _TOLD_ID, _TOLD_SYMBOL, after_a_digest

#: The credential calls (`patterns.CREDENTIAL_CALL`'s group 1, lower-cased, `_` and the namespace
#: dropped): which argument (1-based) is the secret, and its label. `USER_THEN` means the argument
#: right after the user: the second, or the third when the first is no string literal and the
#: second is (`login(page, "admin", "pw")`, a test helper's form).
USER_THEN = 0
#: sbt's `Credentials(realm, host, user, password)`: the fourth of four; AWS SDKs' `new
#: Credentials(accessKeyId, secretAccessKey[, sessionToken])`: the second.
SBT_OR_AWS = -2
_AWS_CREDENTIALS = re.compile(rb"(?:new[ \t]+|AWS\.)$")
_ALGOLIA_KEY = re.compile(rb"[0-9a-f]{32}")
SECRET_ARGUMENT = {
    "login": (USER_THEN, "password"), "authenticate": (USER_THEN, "password"),
    "basicauth": (USER_THEN, "password"), "withbasicauth": (USER_THEN, "password"),
    "setbasicauth": (USER_THEN, "password"), "httpbasicauth": (USER_THEN, "password"),
    "httpdigestauth": (USER_THEN, "password"), "credentialsbasic": (2, "password"), "bearerauth": (1, "bearer"),
    "jwtsign": (2, "secret"), "jwtencode": (2, "secret"), "jwtdecode": (2, "secret"), "jwtverify": (2, "secret"),
    "pdo": (3, "password"), "mysqliconnect": (3, "password"), "mysqlconnect": (3, "password"),
    "twilioclient": (2, "token"), "dbiconnect": (3, "password"),
    "usernamepasswordcredentialsimpl": (5, "password"),
    "getconnection": (3, "password"), "newinstance": (3, "password"), "networkcredential": (2, "password"),
    "ftp": (3, "password"), "ftptls": (3, "password"), "pymysqlconnect": (3, "password"),
    "mysqldbconnect": (3, "password"), "auth": (USER_THEN, "password"), "plainauth": (3, "password"),
    "crammd5auth": (2, "password"), "createcredential": (3, "password"), "createscramsha1credential": (3, "password"),
    "createscramsha256credential": (3, "password"), "totp": (1, "secret"), "hotp": (1, "secret"),
    "cookie": (2, "token"), "credentials": (SBT_OR_AWS, "password"),
    "searchclientcreate": (2, "api_key"), "algoliasearch": (2, "api_key"),   # Algolia: (app id, api key)
    "gmail": (2, "password"),   # Dart's mailer: `gmail(username, app password)`
    # hashers given the cleartext: Django's, Laravel's, PHP's, Werkzeug's, bcrypt's in Python, Node and Ruby
    "makepassword": (1, "password"), "hashmake": (1, "password"), "bcrypt": (1, "password"),
    "passwordhash": (1, "password"), "generatepasswordhash": (1, "password"), "hashpw": (1, "password"),
    "bcrypthash": (1, "password"), "bcrypthashsync": (1, "password"), "bcrypthashpw": (1, "password"),
    "bcryptpasswordcreate": (1, "password"),
    "azurekeycredential": (1, "api_key"), "azurenamedkeycredential": (2, "api_key"), "apikeycredential": (1, "api_key"),
    "twilio": (2, "token"),
}


#: How far after a call's opening parenthesis its arguments are read (bytes).
ARGUMENTS_SPAN = 400


def _literal(data: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The inside of the string literal that [s, e) holds, whitespace aside, JSON-escaped too
    (`\\"v\\"` in a tool call's JSON), Python's bytes too (`b"v"`); None if it holds anything else
    (a name, a call, a concatenation)."""
    while s < e and data[s:s + 1] in (b" ", b"\t", b"\n", b"\r"):
        s += 1
    while e > s and data[e - 1:e] in (b" ", b"\t", b"\n", b"\r"):
        e -= 1
    if data[s:s + 1] in (b"b", b"B") and data[s + 1:s + 2] in (b'"', b"'"):
        s += 1   # Python's bytes literal (`bcrypt.hashpw(b"v", salt)`)
    q = data[s:s + 1]
    if q == b"\\" and data[s + 1:s + 2] in (b'"', b"'"):
        q = data[s:s + 2]  # a JSON-escaped literal: it ends with the same escaped quote
    if q not in (b'"', b"'", b"`", b'\\"', b"\\'") or e - s < 2 * len(q) or data[e - len(q):e] != q:
        return None
    inner = data[s + len(q):e - len(q)]
    if q[-1:] in inner.replace(b"\\" + q[-1:], b""):
        return None  # `"a" + "b"`: two literals
    return s + len(q), e - len(q)


def arguments(data: bytes, start: int) -> list[tuple[int, int]]:
    """Byte spans of the top-level arguments of the call whose opening parenthesis is just before
    `start`, read up to `ARGUMENTS_SPAN` bytes: every argument that ends within them (a call that
    runs on gives the arguments before its last)."""
    out: list[tuple[int, int]] = []
    depth, quote, i, arg = 0, None, start, start
    end = min(len(data), start + ARGUMENTS_SPAN)
    while i < end:
        c = data[i:i + 1]
        if c == b"\\" and quote in (None, b'\\"', b"\\'") and data[i + 1:i + 2] in (b'"', b"'"):
            q = data[i:i + 2]  # a JSON-escaped quote opens or closes a JSON-escaped literal
            quote = None if quote == q else (q if quote is None else quote)
            i += 2
            continue
        if quote is not None and len(quote) == 1:
            if c == b"\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif quote is None and c in (b'"', b"'", b"`"):
            quote = c
        elif c in (b"(", b"[", b"{"):
            depth += 1
        elif c in (b")", b"]", b"}"):
            if depth == 0:
                out.append((arg, i))
                return out
            depth -= 1
        elif c == b"," and depth == 0:
            out.append((arg, i))
            arg = i + 1
        i += 1
    return out


def _call_name(raw: str) -> str:
    name = raw.lower().replace("_", "").replace("::", ".").removeprefix("->").lstrip(".")
    name = name.removesuffix("->construct")   # `PDO->__construct(...)`: a PHP stack trace's frame
    if name.startswith("new"):
        name = name[3:].strip()
    parts = [p for p in name.replace(" ", "").split(".") if p and p != "new"]
    if parts and parts[-1] == "client" and any("twilio" in p for p in parts):
        return "twilioclient"
    if len(parts) >= 2 and parts[-2] in ("jwt", "credentials", "searchclient", "bcrypt"):
        return parts[-2] + parts[-1]
    if parts[-2:] == ["hash", "make"] or parts[-3:] == ["bcrypt", "password", "create"]:
        return "".join(parts[-3:] if parts[-1] == "create" else parts[-2:])
    if name.replace(" ", "") == "dbi->connect":
        return "dbiconnect"
    if len(parts) >= 2 and parts[-1] == "connect":
        return parts[-2] + "connect"   # `pymysql.connect`, `MySQLdb.connect`
    return parts[-1] if parts else ""


_NAME = re.compile(r"[a-z][a-z0-9]*(?:[_.\-][a-z0-9]+)*$")


def _password_like(value: str) -> bool:
    """A call's literal reads as a password, not as a label or a route (`"Sign in"`,
    `'failureRedirect'`, `"submit-form"`): digits, or three kinds of characters."""
    kinds = (any(c.islower() for c in value), any(c.isupper() for c in value),
             any(not c.isalnum() and not c.isspace() for c in value))
    return any(c.isdigit() for c in value) or sum(kinds) == 3


def h_call(rule, sp, data: bytes):
    """The literal a credential call takes as its secret (`SECRET_ARGUMENT`; the rule reads at most
    `max_matches` calls per text, `scanner.Scanner.scan`)."""
    name = _call_name(_text(data, sp[1][0], sp[1][1]))
    which = SECRET_ARGUMENT.get(name)
    if which is None:
        return
    position, label = which
    args = arguments(data, sp[0][1])
    if position == USER_THEN:
        position = 3 if len(args) >= 3 and _literal(data, *args[0]) is None and _literal(data, *args[1]) else 2
    elif position == SBT_OR_AWS:
        position = 4 if len(args) == 4 else 2
    if len(args) < position:
        return
    lit = _literal(data, *args[position - 1])
    if lit is None:
        return
    if name == "credentials" and position == 2 and not _AWS_CREDENTIALS.search(data, max(0, sp[1][0] - 8), sp[1][0]):
        return   # two arguments: only AWS SDKs' `new AWS.Credentials(id, secret)`, not any `Credentials(a, b)`
    if name in ("searchclientcreate", "algoliasearch") and not _ALGOLIA_KEY.fullmatch(data, *lit):
        return   # Algolia's API keys: 32 hex characters (`algoliasearch('latency', 'docsearch-...')`)
    if data[lit[1] - 3:lit[1]] == b"...":
        lit = (lit[0], lit[1] - 3)   # a PHP stack trace cuts arguments to 15 characters and `...`
    value = _text(data, *lit)
    if name == "auth" and (data[sp[1][0] - 1:sp[1][0]] not in (b".", b">", b":") or _NAME.match(value)):
        return  # only a method (`$smtp->auth(u, v)`, `.auth(u, v)`, Lua's `red:auth(u, v)`), and a name is
        # none (`roles_v2`)
    if shapes.context_secret(value, quoted=True) and (_password_like(value)
                                                       or (name == "gmail" and APP_PASSWORD.fullmatch(value))):
        yield lit[0], lit[1], label   # (a Gmail app password: four groups of four lower-case letters)


#: The (key group, value group) pairs of `patterns.ENV_DEFAULT`'s alternatives.
_ENV_GROUPS = ((1, 2), (3, 5), (4, 5), (6, 7), (8, 9))


def h_env_default(rule, sp, data: bytes):
    """The default of an environment variable whose name says it holds a secret."""
    for k, v in _ENV_GROUPS:
        if sp[k][0] >= 0 and sp[v][0] >= 0:
            break
    else:
        return
    cls = classify_key(_text(data, *sp[k]))
    if cls is None:
        return
    s, e = sp[v]
    lit = _literal(data, s, e) if data[s:s + 1] in (b'"', b"'") else None
    if lit is not None:
        s, e = lit  # `${DB_PASSWORD:-"v"}`
    value = _text(data, s, e)
    # (`${A:-$B}`: another variable, a reference the context rule knows; `$9xKq!...` is a password)
    if value_ok(cls[0], value, quoted=True):
        yield s, e, cls[1]


#: The commands of rule printed-secret that print any field or variable asked for, and how the
#: name asked for is found in the command line: it must name a secret.
_ASKED_NAME = (
    (re.compile(r"\bheroku[ \t]+config:get\b"), re.compile(r"config:get[ \t]+(?:-\S+[ \t]+)*([A-Za-z0-9_.\-]+)")),
    (re.compile(r"\bvault[ \t]"), re.compile(r"-field[= ]([A-Za-z0-9_.\-]+)")),
    (re.compile(r"\bop[ \t]+read\b"), re.compile(r"op://\S*/([A-Za-z0-9_.\-]+)")),
    (re.compile(r"\bdoppler[ \t]+secrets[ \t]+get\b"), re.compile(r"get[ \t]+(?:-\S+[ \t]+)*([A-Za-z0-9_.\-]+)")),
    (re.compile(r"\bnetlify[ \t]+env:get\b"), re.compile(r"env:get[ \t]+(?:-\S+[ \t]+)*([A-Za-z0-9_.\-]+)")),
    (re.compile(r"\bterraform[ \t]+output\b"), re.compile(r"-raw[ \t]+(?:-\S+[ \t]+)*([A-Za-z0-9_.\-]+)")),
)
_QUERY = re.compile(r"--query[ \t=]+[\"']?([A-Za-z.]+)")


def _asks_for_a_secret(command: str) -> bool:
    """Whether the printing command asks for a secret: a name that names one (`heroku
    config:get DB_PASSWORD`, `vault kv get -field=password`), the value of a Key Vault secret or
    the SecretString of AWS Secrets Manager; the other commands print only secrets."""
    for cmd, name in _ASKED_NAME:
        if cmd.search(command):
            m = name.search(command)
            return m is not None and classify_key(m.group(1)) is not None
    if "secretsmanager" in command:
        m = _QUERY.search(command)
        return m is None or "SecretString" in m.group(1)
    if "keyvault" in command:
        m = _QUERY.search(command)
        return m is not None and m.group(1) == "value"
    return True


def h_printed(rule, sp, data: bytes):
    """The one line a command printed when asked for one secret."""
    if not _asks_for_a_secret(_text(data, *sp[1])):
        return
    s, e = sp[2]
    if shapes.context_secret(_text(data, s, e), quoted=False):
        yield s, e, rule.label


#: The names in an expression: `settings.SECRET_KEY`, `os.environ["API_KEY"]`, `cfg.get("pw")`.
_EXPR_NAMES = re.compile(r"[A-Za-z_][\w\-]*")


def h_repl(rule, sp, data: bytes):
    """The string an interpreter printed for an expression whose last name is a secret's
    (`patterns.REPL_ECHO`: `(Pdb) p settings.EMAIL_HOST_PASSWORD` then `'v'`): a credential
    context (`keys.value_ok`), but for what such an expression prints that is none: a message about
    it (`'This password is too common'`), a lexer's token kind (`'IDENTIFIER'`), a class path."""
    expression = _text(data, *sp[1])
    names = _EXPR_NAMES.findall(expression)
    cls = classify_key(names[-1]) if names else None
    found = _first(sp, (2, 3, 4))
    if cls is None or found is None:
        return
    if _PROMPT_GT.match(data, sp[0][0], sp[1][0]) and (
            not any(c in expression for c in ".[") or any(c.isspace() for c in expression)):
        return   # a bare `>` is Node's prompt before code (`process.env.X`), a quote's before prose
    _, s, e = found
    value = _text(data, s, e)
    if _MODULE_PATH.match(value) or (value.isalpha() and len(value) < 12) \
            or any(CREDENTIAL_WORD.match(w) for w in value.split()) or _SENTENCE.search(value):
        return   # a setting's class path, a lexer's token kind (`'IDENTIFIER'`), a message, a sentence
    if value_ok(cls[0], value, quoted=True):
        yield s, e, cls[1]


#: A prompt of a bare `>`, after blanks, quotes and JSON-escaped line breaks (`"\\n> `).
_PROMPT_GT = re.compile(rb'(?:[ \t"]|\\n)*>')
#: Words, then punctuation and a space: a sentence (`'Hello there, friend'`), no passphrase.
_SENTENCE = re.compile(r"[A-Za-z]{2}[,.;:!?] [A-Za-z]")


#: A dotted path of names (a module, a class, a setting's value): `django.contrib.auth.Hasher`.
_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}$")


def h_values_after(rule, sp, data: bytes, state: dict):
    """Every value the rule's `values` pattern (group 1) finds in the `window` bytes after the
    rule's anchor (its match), an anchor that makes them secrets: a command that prints keys (`az
    storage account keys list`: a table or JSON of them), a provider whose SMTP login is its API
    token (Postmark: a UUID as user and password), Consul's tokens block. The window ends early at
    the rule's `until` bytes (the end of the anchor's block), and the values are also read `before`
    bytes before the anchor when the rule says so. `state` (one per rule and scan) holds where the
    last window ended: a window starts no earlier than 256 bytes before it, so anchors in a row read
    each byte about once. A value needs three kinds of characters, padding aside, when the rule
    says `mixed` (random base64 has them; a hash in hex has two); a window yields its values when
    there are `at_least` of them (a list of codes, not one id)."""
    begin, end = sp[0]
    stop = min(len(data), end + rule.options["window"])
    cut = data.find(b"\n", stop, min(len(data), stop + 256))
    stop = cut if cut >= 0 else min(len(data), stop + 256)   # its last line whole (no value cut in two), within 256 bytes
    until = rule.options.get("until")
    if until:
        cut = data.find(until, end, stop)
        stop = stop if cut < 0 else cut
    start = max(0, begin - rule.options.get("before", 0), state.get("read", 0) - 256)
    if stop <= start:
        return
    state["read"] = max(stop, state.get("read", 0))
    mixed = rule.options.get("mixed")
    found = [m.span(1) for m in rule.options["values"].finditer(data, start, stop)
             if not mixed or shapes.char_classes(_text(data, *m.span(1)).rstrip("=")) >= 3]
    if len(found) >= rule.options.get("at_least", 1):
        for s, e in found:
            yield s, e, rule.label


def h_piped(rule, sp, data: bytes):
    """The literal piped into a command that stores it as a secret (or as an environment
    variable whose name says secret: group 4, `vercel env add K`)."""
    target = _text(data, *sp[4]) if sp[4][0] >= 0 else ""
    if target.startswith(("vercel", "netlify")) and classify_key(target.split()[-1]) is None:
        return
    found = _first(sp, (1, 2, 3))
    if found:
        g, s, e = found
        if target == "chpasswd":   # `echo 'user:password' | chpasswd`
            colon = data.find(b":", s, e)
            if colon < 0:
                return
            s = colon + 1
        if shapes.context_secret(_text(data, s, e), quoted=g != 3):
            yield s, e, rule.label


def h_command(rule, sp, data: bytes):
    """A command's password argument, in a credential context (`shapes.context_secret`): the first
    group that took part, its groups read as triples (double-quoted, single-quoted, bare:
    `patterns.COMMAND_VALUE`), or each one bare (the rule's `bare_groups`)."""
    found = _first(sp, tuple(range(1, len(sp))))
    if found is None:
        return
    g, s, e = found
    bare = rule.options.get("bare_groups") or (g - 1) % 3 == 2
    if bare and data[s:s + 1] in (b":", b"@", b"?", b"-"):
        return  # a bind parameter (`IDENTIFIED BY :new_pw`), a flag
    if shapes.context_secret(_text(data, s, e), quoted=not bare):
        yield s, e, rule.label


def h_htpasswd(rule, sp, data: bytes):
    """`htpasswd -b [file] user password`: the password, by the flags (`-n`: no file argument)."""
    flags = _text(data, *sp[1])
    if "b" not in flags:
        return
    g = 3 if "n" in flags else 4
    if sp[g][0] < 0:
        return
    s, e = _literal(data, *sp[g]) or sp[g]
    if shapes.context_secret(_text(data, s, e), quoted=True):
        yield s, e, rule.label


#: The start of a match of rule name-value when its name field is a `key` field.
_KEY_FIELD = re.compile(rb"(?i)key\b")


def h_name_value(rule, sp, data: bytes):
    """The value field of a name field that names a secret (group 1 the name, then the value:
    double-quoted, single-quoted, bare; or one group, delimited). A `key` field (Postman's `{"key": K,
    "value": V}`, also an i18n file's) and a `type` field (rule type-value, `shaped`: Keycloak's
    `{"type": "password", "value": V}`, AWS SSM's `"Type": "SecureString", "Value": V`) need a
    secret's shape: `{"key": "login.password", "value": "Mot de passe"}` is a label."""
    name = _text(data, *sp[1])
    cls = ("secret", "secret") if name.lower() == "securestring" else classify_key(name)   # AWS SSM's type
    found = _first(sp, tuple(range(2, len(sp))))
    if cls is None or found is None:
        return
    g, s, e = found
    value = _text(data, s, e)
    if ((rule.options.get("shaped") or _KEY_FIELD.match(data, sp[0][0]))
            and not (shapes.secret_shaped(value) and _password_like(value))):
        return
    if value_ok(cls[0], value, quoted=g != 4):   # a reference (`$(TOKEN)`) is none, `$9xKq!...` is
        yield s, e, cls[1]


#: A password a person makes: a word or three, a separator, a number (`Fikarast-77`, `Kanelbulle#2024`,
#: `Harbor-Tulip-5969`), which
#: `shapes.password_shaped` reads as a name in code (`build-77`) and a slot for a password does not.
#: Capitalised unless an explicit `user / ...` slot says so (not `ubuntu-2204`, `chrome-124`).
_PERSON_PASSWORD = re.compile(r"(?:[A-Za-z][a-z]{2,}[-_.#@!]){0,2}[A-Za-z][a-z]{3,}[-_.#@!]\d{2,4}")


def _looks_like_a_password(data: bytes, s: int, e: int, strip: str = ".,;)!?"):
    """The span of the value at [s, e), trailing `strip` aside, when a word alone could stand
    there (prose, a protocol's command): password shaped, letters and digits, no reference and no
    password hash."""
    value = _text(data, s, e).rstrip(strip)
    person = value[:1].isupper() and _PERSON_PASSWORD.fullmatch(value)
    if ((shapes.password_shaped(value, min_len=8) or person) and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value) and not shapes.is_reference(value)
            and not shapes.not_a_value(value)):
        return s, s + len(value.encode("utf-8", "surrogatepass"))
    return None


#: What a pair's second member is when it is no password: hex (a hash, an id), `0x...`, a phone,
#: an id with a prefix (`u_8f3a2c91`) or in capitals (Slack's `U04ABCD1234`), words and at most two
#: digits (a role, a name: `Editor01`, `SuperAdmin`; `Welcome2024!` is a password).
_NOT_A_PAIRED_PASSWORD = re.compile(r"(?:0x)?[0-9a-fA-F]+|\+?[\d\-\s().x]+|[a-z]{1,4}_[0-9a-f]+"
                                    r"|(?:[A-Z][a-z]+)+\d{0,2}|[a-z]+\d{0,2}|[A-Z][0-9A-Z]{7,15}")


def h_login_pair(rule, sp, data: bytes):
    """The password of an (e-mail, password) pair: password shaped (`_looks_like_a_password`),
    and no hex, id, phone number or word and number (`commits = [("a@x.io", "3f9a1c2b")]`,
    `ROLES = [("a@x.io", "Editor01")]`)."""
    span = _looks_like_a_password(data, *sp[1], strip="")   # a quoted literal: its `!` is its own
    if span and not _NOT_A_PAIRED_PASSWORD.fullmatch(_text(data, *span)):
        yield *span, rule.label


#: Two names in backquotes joined by a word, the second's opening quote last (`\`okta\` and \``).
_TICKED_PAIR = re.compile(rb"`[ \t]+(?:with|and|pw|pass(?:word)?:?)[ \t]+`$")


def h_chat(rule, sp, data: bytes):
    """The password of `user / password` typed after a creds or login word (`_looks_like_a_password`);
    after an explicit `/` or `:`, a person's password in lower case too (`jenkins / jenkins-2024`)."""
    s, e = sp[1]
    if after_a_digest(data, s):
        return  # a Go module's hash in go.sum (`.../credentials v1.17.47/go.mod h1:...=`), a digest
    ticked = data[s - 1:s] == b"`" and data[e:e + 1] == b"`"   # in backquotes: all of it, `!` too
    slot = data[max(0, s - 4):s].rstrip(b" \t`")[-1:] in (b"/", b":")   # an explicit `user / v`, `user: v`
    if ticked and not slot and _TICKED_PAIR.search(data, max(0, s - 24), s):
        return   # `via \`okta\` and \`Okta-Verify-2024\``: names in backquotes joined by a word
    span = _looks_like_a_password(data, s, e, strip="" if ticked else ".,;)!?")
    if span is None and slot:
        value = _text(data, s, e) if ticked else _text(data, s, e).rstrip(".,;)!?")
        if _PERSON_PASSWORD.fullmatch(value.rstrip("!?#$%&*")):
            span = s, s + len(value.encode("utf-8", "surrogatepass"))
    if span:
        yield *span, rule.label



#: What a password column holds when it holds none: a sign-in method, a pointer to a vault, a mask.
_NO_TABLE_PASSWORD = frozenset("sso saml oauth oidc n/a na none null - -- — tbd todo ? see vault 1password keepass "
                               "bitwarden lastpass ldap ad kerberos".split())
#: A header cell: a column's name, a few words at most (no sentence, no value: `Required: email`,
#: `2024-05-01T10:00`).
_HEADER_CELL = re.compile(r"#|(?=[^\d]*[A-Za-z\u00c0-\u024f\u0400-\u04ff])[A-Za-z\u00c0-\u024f\u0400-\u04ff0-9#]"
                          r"[A-Za-z\u00c0-\u024f\u0400-\u04ff0-9 _.()\-]{0,39}")
#: The last word of a password column's name (`Password`, `admin_pw`, `Kennwort`, `Contraseña`): not
#: a column about passwords (`Password policy`, `password_hash`).
_PASSWORD_COLUMN = frozenset("password passwords passwd pwd pw pass passphrase passcode passwort kennwort contraseña "
                             "contrasena senha wachtwoord lösenord hasło пароль".split())


def _cells(line: str, delim: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of `line` split on `delim`, a double-quoted cell as one (CSV);
    a markdown row's outer pipes are no cells."""
    out, i, n = [], 0, len(line)
    if delim == "|":
        i = line.find("|") + 1 if line.lstrip().startswith("|") else 0
        n = line.rstrip().rfind("|") if line.rstrip().endswith("|") else n
    while i <= n:
        j = i
        while j < n and line[j] in " \t":
            j += 1
        if j < n and line[j] == '"':
            k = j + 1
            while k < n and not (line[k] == '"' and line[k + 1:k + 2] != '"'):
                k += 2 if line[k] == '"' else 1
            end = line.find(delim, k + 1)
        else:
            end = line.find(delim, i)
        end = n if end < 0 or end > n else end
        out.append((i, end))
        i = end + 1
    return out


def h_table(rule, sp, data: bytes, state: dict):
    """The cells of a table's password columns: the header line names them (every cell a name, one
    whose last word is a password's, `_PASSWORD_COLUMN`: a table of tokens or secrets is, in a
    session, mostly their documentation), the rows follow it, each with the header's number of
    cells, up to a blank line (markdown's `|---|` rule aside) or the end of the text. A cell goes
    when it holds a password (`_table_password`).
    `state` (one per rule and scan) holds where the last table read ended: a header inside it is
    one of its rows, so each byte is read once however many rows name a password."""
    s0, e0 = sp[0]
    if s0 < state.get("read", 0):
        return
    header = _QUOTE_LEAD.sub("", _text(data, s0, e0).rstrip("\r"))
    if header.lstrip().startswith("||"):
        header = header.replace("||", "|")   # Confluence's wiki markup: `|| Name || Password ||` heads a table
    delim = "|" if header.count("|") >= 2 else "\t" if "\t" in header else "," if "," in header else ";"
    spans = _cells(header, delim)
    names = [header[a:b].strip().strip('"').strip() for a, b in spans]
    if len([n for n in names if n]) < 2 or not all(_HEADER_CELL.fullmatch(n) for n in names if n):
        return   # two named columns at least, every cell a name (not `"DB_PASSWORD",`, not a data row)
    if delim == "," and len([n for n in names if n]) < 3 and any(" " in n for n in names):
        return   # a sentence with commas (`Enter your username, password`), not a CSV header
    cols = [i for i, n in enumerate(names) if (key_segments(n) or ("",))[-1] in _PASSWORD_COLUMN]
    if not cols:
        return
    pos, end = e0 + 1, len(data)
    while pos < end:
        nl = data.find(b"\n", pos, end)
        stop = end if nl < 0 else nl
        raw = data[pos:stop]
        line = raw.decode("utf-8", "surrogatepass").rstrip("\r")
        quoted = _QUOTE_LEAD.match(line)
        lead_bytes = len(quoted.group(0).encode("utf-8", "surrogatepass")) if quoted else 0
        line = line[len(quoted.group(0)):] if quoted else line
        if not line.strip():
            break
        if not (delim == "|" and _TABLE_RULE.match(line)):
            row = _cells(line, delim)
            if len(row) != len(spans) or sum(1 for a, b in row if line[a:b].strip()) < (1 if delim == "|" else 2):
                break
            for i in cols:
                a, b = row[i]
                cell = line[a:b]
                value = cell.strip().strip('"')
                if _table_password(value):
                    lead = lead_bytes + len(line[:a + cell.index(value)].encode("utf-8", "surrogatepass"))
                    yield pos + lead, pos + lead + len(value.encode("utf-8", "surrogatepass")), rule.label
        pos = stop + 1
    state["read"] = pos


def _table_password(value: str) -> bool:
    """A table cell under a password column that holds one: one word (a cell of prose, code in
    backticks or a name describes the column), a digit or a symbol in it, a credential context."""
    if not value or value.lower() in _NO_TABLE_PASSWORD or any(c.isspace() or c == "`" for c in value):
        return False
    if _TOLD_ID.match(value) or value.upper() == "REDACTED":
        return False
    if not (any(c.isdigit() for c in value) or _TOLD_SYMBOL.search(value)) or len(value) < 6:
        return False
    if (shapes.is_code_like(value) or _CAMEL_NAME.match(value)) and not _TOLD_SYMBOL.search(value):
        return False
    return shapes.context_secret(value)


#: A markdown quote's marks before a table's line (`> | User | Password |`).
_QUOTE_LEAD = re.compile(r"^(?:[ \t]*>)+[ \t]?")
#: A table's rule line: markdown's (`|---|:---:|`), a SQL client's (`+----+----+`, `-----+-----`).
_TABLE_RULE = re.compile(r"^[ \t|:\-+]+$")


#: A setter's or a builder's verb before the secret's name (`setPassword`, `withApiKey`, `useToken`).
_SETTER_VERB = re.compile(r"(?:[sS]et|[wW]ith|[uU]se)(?=[A-Z_])")
#: The words of a builder's method that may name a secret with no verb (`.apiKey(`, `.clientSecret(`,
#: `.accessToken(`); not `.read_secret(`, `.getpass(`, `.hash_password(`: they take a name or a prompt.
_BUILDER_WORDS = frozenset("password passwd pwd passphrase secret token key apikey credential credentials auth "
                           "api access client private bearer refresh session master admin root db database user app "
                           "account service basic".split())
#: A setter's name that says no more than key, token or auth (`setKey`, `useToken`, `setAuth`): a
#: key's is a cache's, a message's, an object's; a token's or an auth's needs a random token's
#: shape; with no verb none is a setter of a secret.
_GENERIC_WORDS = frozenset("key token auth".split())


def h_setter(rule, sp, data: bytes):
    """The literal (groups 3 to 5) given to a method whose name ends in a secret's word (group 2): a
    setter's (`setPassword`, `withApiKey`, `useToken`), or, after a `.` or `->` (group 1), a
    builder's (`.password("v")`, `.apiKey("v")`): a credential context (`_GENERIC_WORDS`: when the
    name says only key, token or auth). Any other call (`getToken("name")`,
    `findKey("id")`, `token("(")` in a parser) takes a name, not the secret."""
    name = _text(data, *sp[2])
    verb = _SETTER_VERB.match(name)
    if verb:
        name = name[verb.end():].lstrip("_")
    segments = set(key_segments(name))
    generic = segments <= _GENERIC_WORDS   # `setKey`, `.key(`, `useToken`: a cache's, an object's, a design token
    if segments == {"key"} or (not verb and (sp[1][0] < 0 or generic or not segments <= _BUILDER_WORDS)):
        return   # no verb, no `.`: a function of the secret's name (`token("IDENT")`), or a verb of its own
    cls = classify_key(name)
    found = _first(sp, (3, 4, 5))
    if cls is None or found is None:
        return
    _, s, e = found
    value = _text(data, s, e)
    if (shapes.token_shaped(value, min_len=16, min_entropy=3.5) if generic
            else value_ok(cls[0], value, quoted=True)):
        yield s, e, cls[1]


def h_form_fill(rule, sp, data: bytes):
    """The literal an end-to-end test types into a field its locator names for a password (the first
    of groups 1-6 that took part): a credential context."""
    found = _first(sp, tuple(range(1, len(sp))))
    if found is None:
        return
    _, s, e = found
    if _NOT_THE_PASSWORD_FIELD.search(data, sp[0][0], s):
        return   # `#password-hint`, `#password-strength`: a field about the password
    keys = _TYPED_KEYS.search(data, s, e)
    if keys:
        e = keys.start()   # Cypress' `{enter}` after the password: a key it presses, not typed text
    if value_ok("pw", _text(data, s, e), quoted=True):
        yield s, e, rule.label


#: A field about a password, not for it (`#password-hint`, `password_strength`, `forgot-password`).
_NOT_THE_PASSWORD_FIELD = re.compile(rb"(?i)pass(?:word|wd|phrase)?[\-_ ]?(?:hint|strength|reset|policy|help|rules)"
                                     rb"|(?:forgot|reset|show|toggle)[\-_ ]?pass")
#: Cypress' special keys at the end of what `.type()` types (`{enter}`, `{tab}{enter}`).
_TYPED_KEYS = re.compile(rb"(?:\{[a-z]+\})+$")


#: Another hash where a cracked hash's plaintext would be (hex, 32 digits or more).
_HEX_HASH = re.compile(r"[0-9a-fA-F]{32,}")


def h_cracked(rule, sp, data: bytes, state: dict):
    """The plaintext after a cracked hash (group 1), when a cracking tool, its status line or its
    pot file is named within 4 KB (the rule's `near`, found once per scan: `state`): a password with
    a letter or a digit, not another hash, a number or a field list (`/etc/shadow`'s `19000:0:99999`)."""
    near = state.get("near")
    if near is None:
        near = state["near"] = [m.start() for m in rule.options["near"].finditer(data)]
    k = bisect.bisect_left(near, sp[0][0] - 4096)
    if k == len(near) or near[k] > sp[0][1] + 4096:
        return
    s, e = sp[1]
    raw = _text(data, s, e)
    value = raw.strip()
    if (len(value) >= 4 and any(c.isalnum() for c in value) and not value.isdigit()
            and not _HEX_HASH.fullmatch(value) and not shapes.is_url_or_path(value)):
        s += len(raw.encode("utf-8", "surrogatepass")) - len(raw.lstrip().encode("utf-8", "surrogatepass"))
        yield s, s + len(value.encode("utf-8", "surrogatepass")), rule.label


#: What a `-p` after a `-u` holds when it is no password: a port or a pid (lists of them too), a
#: port mapping (`8080:80`, `127.0.0.1:8080:80/tcp`).
_PORT_OR_PID = re.compile(r"[\d,]+|.*:\d+(?:/(?:tcp|udp))?")


#: One word of a command line: quoted, or up to a space.
_WORD = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|\S+")


def _flags_only_after_user(head: str) -> bool:
    """Whether, in `head` (a command from its user flag to its password flag), every word between
    the user's value and the password flag is a flag or a flag's value: both flags are one
    program's (`cqlsh host -u u -p v`, `mosquitto_pub -u u -t x -m "hi there" -P v`), not `sudo -u
    deploy mkdir -p dir`."""
    words = _WORD.findall(head)
    i = next((k for k, w in enumerate(words) if w in ("-u", "-U", "--user", "--username")
              or w.startswith(("--user=", "--username="))), None)
    if i is None:
        return True
    rest = words[i + (1 if "=" in words[i] else 2):-1]   # after the user's value, before `-p`
    prev_flag = False
    for w in rest:
        if w.startswith("-"):
            prev_flag = "=" not in w
        elif prev_flag:
            prev_flag = False
        else:
            return False
    return True


def h_shaped_password(rule, sp, data: bytes):
    """A password in group 1 where another word could stand (a command's `-p` after its `-u`, an
    Oracle connect string's `user/password`): quotes stripped, `_looks_like_a_password` (letters
    and digits), no flag, port, pid or port mapping (`_PORT_OR_PID`); none after a tool on the
    same line that the rule's `prompting` names (MySQL's `-p database` prompts for the password);
    with `same_program`, only flags between the user's value and the password's flag."""
    s, e = sp[1]
    if data[s:s + 1] in (b'"', b"'") and e - s >= 2 and data[e - 1:e] == data[s:s + 1]:
        s, e = s + 1, e - 1
    value = _text(data, s, e)
    if value.startswith("-") or _PORT_OR_PID.fullmatch(value):
        return
    prompting = rule.options.get("prompting")
    if prompting is not None and prompting.search(data, data.rfind(b"\n", 0, sp[0][0]) + 1, sp[0][0]):
        return
    if rule.options.get("same_program") and not _flags_only_after_user(_text(data, sp[0][0], sp[1][0])):
        return   # `sudo -u deploy mkdir -p releases2024`: the `-p` is another program's
    span = _looks_like_a_password(data, s, e, strip="")
    if span:
        yield *span, rule.label


def h_found_login(rule, sp, data: bytes):
    """The password of a login a tool found (groups 1-3): password shaped, letters and digits
    (`_looks_like_a_password`), no id or word and number (`_NOT_A_PAIRED_PASSWORD`: a Slack id
    after an e-mail address, `build:release42`)."""
    found = _first(sp, (1, 2, 3))
    if found is not None:
        span = _looks_like_a_password(data, found[1], found[2], strip="")
        if span and not _NOT_A_PAIRED_PASSWORD.fullmatch(_text(data, *span)):
            yield *span, rule.label


def h_generated(rule, sp, data: bytes):
    """A password a tool printed as the one it generated: a credential context (its words say what
    the value is, `shapes.context_secret`), with two kinds of characters (`New value: production`
    stays)."""
    s, e = sp[1]
    value = _text(data, s, e)
    if shapes.context_secret(value) and shapes.char_classes(value) >= 2:
        yield s, e, rule.label


#: `AUTH` arguments that are SMTP / SASL mechanisms, not a Redis user (what follows them is a
#: mechanism's message: rule smtp-auth reads PLAIN and LOGIN).
_SMTP_MECHANISMS = frozenset({"PLAIN", "LOGIN", "XOAUTH2", "XOAUTH", "CRAM-MD5", "DIGEST-MD5", "OAUTHBEARER",
                              "SCRAM-SHA-1", "SCRAM-SHA-256", "SCRAM-SHA-1-PLUS", "SCRAM-SHA-256-PLUS",
                              "GSSAPI", "NTLM", "EXTERNAL", "ANONYMOUS"})


#: How far before a PgBouncer auth file's line its name or PgBouncer's is looked for (bytes).
USERLIST_CONTEXT = 4096
_USERLIST_NAMES = re.compile(rb"(?i)userlist|pgbouncer|auth_file")


def h_userlist(rule, sp, data: bytes, state: dict):
    """A PgBouncer auth file's password (`"user" "password"`), when the text names the file or
    PgBouncer (`_USERLIST_NAMES`) within `USERLIST_CONTEXT` bytes before it, password shaped with
    letters and digits, no hash. Where the names stand is found once per scan (`state`)."""
    s, e = sp[1]
    names = state.get("names")
    if names is None:
        names = state["names"] = [m.start() for m in _USERLIST_NAMES.finditer(data)]
    k = bisect.bisect_left(names, s)
    if k == 0 or s - names[k - 1] > USERLIST_CONTEXT:
        return
    span = _looks_like_a_password(data, s, e)
    if span:
        yield *span, rule.label


def h_redis_auth(rule, sp, data: bytes):
    """The password of Redis' `AUTH [user] password`: `_looks_like_a_password`, or a long one
    (16+ characters, two kinds) with no digit; `AUTH` at a line's start is prose too."""
    if sp[1][0] >= 0 and _text(data, *sp[1]).upper() in _SMTP_MECHANISMS:
        return
    s, e = sp[2]
    span = _looks_like_a_password(data, s, e)
    value = _text(data, s, e)
    if span is None and len(value) >= 16 and shapes.char_classes(value) >= 2 and shapes.context_secret(value):
        span = s, e
    if span:
        yield *span, rule.label
