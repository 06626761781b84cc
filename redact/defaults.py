"""Declared defaults: the value a setting's declaration gives it when nothing else does.

A declared default is the setting's value, so a secret-named setting's default is a credential
context (`keys.value_ok`, as for `KEY = value`):
  * `h_declared_default` (rule `declared-default`): a `default:` / `Default:` / `defaultValue` /
    `default =` field, whose setting is the block that holds it (`owner_name`): Terraform's
    `variable "db_password" { default = "v" }`, CloudFormation's `Parameters: DBPassword: Default:
    v`, a GitHub Actions input, an Ansible `vars_prompt` item (`- name: db_password`), an ARM
    template's `"adminPassword": {"defaultValue": "v"}`, a JSON schema's property;
  * `h_option_default` (rules `option-default`, `go-flag-default`): the default of a command-line
    option named by a secret (`parser.add_argument("--password", default="v")`,
    `@click.option("--api-key", default="v")`, Go's pflag `StringVarP(&v, "password", "p", "v",
    "usage")`).

Invariants: the setting is found from the field's own line and the lines above it only (at most
`OWNER_LINES` lines, `OWNER_BYTES` bytes; on the field's own line at most `_INLINE_BYTES`, so a
minified line costs each field a bounded look-back): the nearest line indented less than the
field, or the brace the field's line opened; sibling blocks in between (`validation { ... }`) are
skipped. A field whose owner is not found is no finding, nor a default of three words or more (a
message: `auth: {default: "Please sign in to continue"}`).
"""

from __future__ import annotations

import re

from .arguments import _first, _text
from .keys import classify_key, value_ok

#: How far above a default its owner is looked for; how far back on its own line (a minified
#: JSON's `{"p1": {"default": ...}, "p2": ...}`: the bytes after the nearest `{` only).
OWNER_LINES = 40
OWNER_BYTES = 4096
_INLINE_BYTES = 300

#: A key that opens a block on the default's own line (`"password": {"type": "string", "default"`).
_INLINE_OWNER = re.compile(rb"""["']?([A-Za-z0-9_.\-]{1,100})["']?[ \t]*[:=]?[ \t]*\{$""")
#: A line that opens a block: HCL's `variable "NAME" {`, YAML's `NAME:`, JSON's `"NAME": {`, a YAML
#: list item named first (`- name: NAME`).
_HEADER = re.compile(rb"""[ \t]*(?:variable[ \t]+"?([A-Za-z0-9_\-]{1,100})"?[ \t]*\{"""
                     rb"""|(?:-[ \t]+)?["']?([A-Za-z0-9_.\-]{1,100})["']?[ \t]*:[ \t]*\{?"""
                     rb"""|-[ \t]+name[ \t]*:[ \t]*["']?([A-Za-z0-9_.\-]{1,100})["']?)[ \t]*\r?$""")
#: A sibling field that names its block (`name: db_password` under `- type: string`).
_NAME_FIELD = re.compile(rb"""[ \t]*(?:-[ \t]+)?["']?name["']?[ \t]*:[ \t]*["']?([A-Za-z0-9_.\-]{1,100})["']?,?[ \t]*\r?$""")
#: A list item that starts with another field than its name (`- type: string`).
_LIST_ITEM = re.compile(rb"[ \t]*-[ \t]+\S")
#: A line that closes a block (`}`, `},`, `]`).
_CLOSER = re.compile(rb"[ \t]*[}\]]")


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def owner_name(data: bytes, pos: int) -> str | None:
    """The name of the setting whose block holds the field at byte `pos`, or None (see the module
    docstring). A list item's name (`- name: X`, or a `name: X` sibling) names it."""
    start = data.rfind(b"\n", max(0, pos - OWNER_BYTES), pos) + 1
    before = data[max(start, pos - _INLINE_BYTES):pos]
    brace = before.rfind(b"{")
    if brace >= 0:
        if b"}" in before[brace:]:
            return None   # the nearest brace closed before the field: no block of its line holds it
        m = _INLINE_OWNER.search(before, max(0, brace - 130), brace + 1)
        return m.group(1).decode("latin-1") if m else None
    if start <= pos - OWNER_BYTES:
        return None   # a line longer than the look-back: no owner read
    indent = _indent(before)
    floor = max(0, start - OWNER_BYTES)
    sibling = None
    end = start - 1
    for _ in range(OWNER_LINES):
        if end <= floor:
            return None
        ls = data.rfind(b"\n", floor, end) + 1
        line = data[ls:end]
        end = ls - 1
        stripped = line.strip()
        if not stripped or stripped.startswith((b"#", b"//")):
            continue
        width = _indent(line)
        if width > indent:
            continue
        if width == indent:
            if _CLOSER.match(line):
                continue   # a sibling block closed (`validation { ... }`, `"metadata": {...},`): skip it
            m = _NAME_FIELD.match(line)
            if m and sibling is None:
                sibling = m.group(1)
            continue
        if _LIST_ITEM.match(line) and sibling is None:
            m = _NAME_FIELD.match(line)
            if m:
                return m.group(1).decode("latin-1")
        if sibling is not None:
            return sibling.decode("latin-1")
        m = _HEADER.match(line)
        if m:
            return next(g for g in m.groups() if g).decode("latin-1")
        return None
    return None


def h_declared_default(rule, sp, data: bytes):
    """A default field's value (groups 2-4: double-quoted, single-quoted, bare) when the setting
    that holds it names a secret."""
    found = _first(sp, (2, 3, 4))
    if found is None:
        return
    g, s, e = found
    name = owner_name(data, sp[1][1])
    cls = classify_key(name) if name else None
    if cls is None:
        return
    value = _text(data, s, e)
    if len(value.split()) >= 3:
        return   # a message, not a credential
    if value_ok(cls[0], value, quoted=g != 4):
        yield s, e, cls[1]


#: A command-line option's name in a call's arguments (`"-p", "--password"`), and where the
#: keyword arguments start (`help=...`: an option named in a help text is none of the call's).
_OPTION_NAME = re.compile(rb"""["'](--?[A-Za-z][A-Za-z0-9_\-]{0,60})["']""")
_KEYWORD_ARG = re.compile(rb"[,(][ \t\r\n]*[A-Za-z_]\w*[ \t]*=")


def h_option_default(rule, sp, data: bytes):
    """The default (groups 2-3) of an option whose name names a secret: group 1 when the rule says
    so (`name_group`: Go's `StringVarP(&v, "password", "p", "v", ...)`), else the first of the
    option names the call gives before its keyword arguments that is a key (`"-p", "--password"`);
    a bare `auth` option is a mode."""
    found = _first(sp, (2, 3))
    if found is None:
        return
    _, s, e = found
    if rule.options.get("name_group"):
        names = [data[sp[1][0]:sp[1][1]]]
    else:
        kw = _KEYWORD_ARG.search(data, sp[0][0], s)   # names come before the keyword arguments
        names = [m.group(1) for m in _OPTION_NAME.finditer(data, sp[0][0], kw.start() if kw else s)]
    for name in names:
        if name.strip(b"-").lower() == b"auth":
            return   # `--auth digest-md5`, `"auth", "ServiceAccount"`: a mode, not a credential
        cls = classify_key(name.decode("latin-1"))
        if cls is not None:
            if value_ok(cls[0], _text(data, s, e), quoted=True):
                yield s, e, cls[1]
            return
