"""The handlers of the web's credentials (`redact.handlers` maps their kinds): cookies, a Cookie
header's values, a URL's userinfo and query parameters, Authorization and named API-key headers,
curl's `-u user:password`. Same contract as every handler: `(rule, sp, data)` in, `(start, end,
label)` byte spans out, linear in the text, no logging."""

from __future__ import annotations

import re

from . import shapes
from .spans import end as _end, text as _text
from .keys import _WELLFORMED_INTERP, _clean_bare
from .patterns import NAME_BEFORE, UUID
from .rules import Rule


def h_cookie(rule: Rule, sp, data: bytes):
    """The value of a session cookie (group 2), secret shaped; with the rule's `near`, only when a
    cookie's own field is within 400 bytes (`"domain"`, `"httpOnly"`: an export of cookies, not any
    JSON with a `name` and a `value`)."""
    near = rule.options.get("near")
    if near and not near.search(data, max(0, sp[0][0] - 400), sp[0][1] + 400):
        return ()
    return _secret_shaped_value(sp, data, 2, 8, rule.label)


_UUID = re.compile("^" + UUID + "$")
#: One cookie of a header: a separator (or the header's `:` / `=`), its name, then a value of at
#: least 24 characters (up to `;`, a quote, whitespace, a comma, `\\` or cmd's `^` escape).
_COOKIE_PAIR = re.compile(rb"""[;,\s"':=][A-Za-z0-9_.!#$%&*+|~\-]{1,100}=([^;\s,"'\\^]{24,1024})""")
#: Where a header's cookies end: a quote (the header was one argument or one JSON string), a
#: JSON-escaped line break (the header was a line of text stored as JSON).
_COOKIES_END = re.compile(rb"""["']|\\[nr]""")
#: A HAR file's header: `"name": "Cookie", "value": "..."`, whose cookies start after `"value": "`.
_HAR_VALUE = re.compile(rb'value\\?"[ \t]*:[ \t]*\\?"')


def h_cookie_header(rule: Rule, sp, data: bytes):
    """Every long cookie value of one Cookie / Set-Cookie header (group 1 to `_COOKIES_END`),
    whatever its name: secret shaped, three kinds of characters, not a UUID (a device id). `-b`
    opens a header only in a curl command (`sort -b`, `git checkout -b` are other flags)."""
    s, e = sp[1]
    head = data[sp[0][0]:s].lstrip()
    if head.startswith(b"-b"):
        line_start = data.rfind(b"\n", 0, sp[0][0]) + 1
        if b"curl" not in data[line_start:sp[0][0]]:
            return
    har = _HAR_VALUE.match(data, s)
    if har:
        s = har.end()
    end = _COOKIES_END.search(data, s, e)
    if end:
        e = end.start()
    for m in _COOKIE_PAIR.finditer(data, max(0, s - 1), e):   # the byte before may start the first pair
        value = _text(data, m.start(1), m.end(1))
        if (shapes.secret_shaped(value, min_len=24) and shapes.char_classes(value) >= 3
                and not _UUID.match(value)):
            yield m.start(1), m.end(1), rule.label


def h_userinfo(rule: Rule, sp, data: bytes):
    s, e = sp[2][0], sp[2][1]
    pw = _text(data, s, e)
    if shapes.is_placeholder(pw) or shapes.is_reference(pw):
        return  # `postgres://USER:PASSWORD@`, `user:${DB_PASS}@`: the credential-context exceptions
    if _WELLFORMED_INTERP.search(pw) or pw.startswith("$") or pw.startswith("%"):
        return
    if pw.isdigit() and len(pw) <= 5:  # host:port@... mis-split
        return
    yield s, e, "password"


def h_query(rule: Rule, sp, data: bytes):
    s, e = sp[2][0], sp[2][1]
    value = _text(data, s, e)
    if shapes.is_placeholder(value) or _WELLFORMED_INTERP.search(value):
        return
    if not shapes.secret_shaped(value, min_len=6) and not shapes.password_shaped(value):
        return
    key = _text(data, sp[1][0], sp[1][1]).lower()
    label = "password" if ("pass" in key or "pwd" in key) else ("api_key" if "key" in key else "token")
    yield s, e, label


#: A scheme's parameter whose value is a variable (`token=$apiKey`, `key=${KEY}`).
_PARAM_REFERENCE = re.compile(r"[A-Za-z_]+=\$[{(]?[A-Za-z_]")


def h_header(rule: Rule, sp, data: bytes):
    scheme = _text(data, sp[1][0], sp[1][1]).strip().lower() if sp[1][0] >= 0 else ""
    s = sp[2][0]
    value = _clean_bare(_text(data, s, sp[2][1]))
    if shapes.is_placeholder(value) or _WELLFORMED_INTERP.search(value) or value.startswith("$"):
        return
    if _PARAM_REFERENCE.match(value):
        return   # PagerDuty's `Token token=$apiKey`: the scheme's parameter holds a variable
    if len(value) < 8 or shapes.is_code_like(value) and len(value) < 20:
        return
    if len(set(value)) < 5 or (not scheme and shapes.is_wordy(value)):
        return  # also `Authorization 'required-for-admin-endpoints'`: words
    label = {"bearer": "bearer", "basic": "basic_auth", "digest": "authorization"}.get(scheme, "authorization")
    yield s, _end(s, value), label


def _secret_shaped_value(sp, data: bytes, group: int, min_len: int, label: str):
    """The bare value of `group`, cleaned, when it is secret shaped (at least `min_len` long)."""
    s = sp[group][0]
    value = _clean_bare(_text(data, s, sp[group][1]))
    if shapes.secret_shaped(value, min_len=min_len):
        yield s, _end(s, value), label


def h_bearer(rule: Rule, sp, data: bytes):
    return _secret_shaped_value(sp, data, 1, 16, "bearer")


def h_header_kv(rule: Rule, sp, data: bytes):
    if NAME_BEFORE.search(data, max(0, sp[0][0] - 120), sp[1][0]):
        return ()   # `"AWS::ApiGateway::ApiKey": ...`: a resource type's name
    return _secret_shaped_value(sp, data, 2, 8, "api_key")


_FORMAT_DIRECTIVE = re.compile(r"%[A-Za-z]")
_CURL_PLACEHOLDER = re.compile(r"^(?:change(?:it|me)|pass(?:word)?|pwd|test|token|secret|\*+|x+|y+|\.+)$", re.I)


def h_curl_user(rule: Rule, sp, data: bytes):
    s, e = sp[1][0], sp[1][1]
    word = _text(data, s, e)
    # Position of the user/password colon outside ${...}, $(...), {{...}}.
    depth = 0
    colon = -1
    for i, ch in enumerate(word):
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0:
            colon = i
            break
    if colon < 0 or word.lstrip("\"'").startswith(("<", "{{", "$")):
        return
    user, pw = word[:colon], word[colon + 1:]

    def strip_q(x: str) -> str:
        return x.strip("\"'{}")

    pw_clean, user_clean = strip_q(pw), strip_q(user)
    if pw_clean:
        target, t_start = pw, colon + 1
        value = pw_clean
    elif user_clean and not any(c in user for c in "`()"):
        # "secret:" (empty password): the whole token is the secret (not `-u elastic`):` in prose)
        target, t_start = user, 0
        value = user_clean
    else:
        return
    if _FORMAT_DIRECTIVE.search(word):
        return  # `date -u +"%Y-%m-%dT%H:%M:%S"`: a format string, not user:password
    if len(value) < 3 or _CURL_PLACEHOLDER.match(value) or shapes.is_placeholder(value):
        return
    if value.startswith("$") or _WELLFORMED_INTERP.search(target) or value.startswith("<") or value.startswith("["):
        return
    if len(set(value)) < 4:
        return
    # span: the value without surrounding quotes/braces
    lead = len(target) - len(target.lstrip("\"'{"))
    trail = len(target) - len(target.rstrip("\"'}"))
    a = t_start + lead
    b = t_start + len(target) - trail
    pre = len(word[:a].encode("utf-8", "surrogatepass"))
    post = len(word[:b].encode("utf-8", "surrogatepass"))
    yield s + pre, s + post, "password"
    if pw_clean and shapes.token_shaped(user_clean, min_len=16, min_entropy=3.0):
        # the user part is itself a key (client id / api key used as the user): redact it too
        lead = len(user) - len(user.lstrip("\"'{"))
        trail = len(user) - len(user.rstrip("\"'}"))
        ua = len(word[:lead].encode("utf-8", "surrogatepass"))
        ub = len(word[:len(user) - trail].encode("utf-8", "surrogatepass"))
        yield s + ua, s + ub, "credential"
