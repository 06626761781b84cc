"""Where a remembered secret may start and end inside a run (redact.memory `_bounds`), and what the
lookup costs: punctuation of every script, escapes, ANSI codes, `-`/`_` glue, one-letter flags, the
candidate caches, and linear work on hostile runs."""

from __future__ import annotations

import random
import sqlite3
import string

import pytest

from reverie.redact.memory import _MAX_SEPARATORS, _PIECES, SecretMemory, _bounds
from reverie.redact.rescan import rescan

RNG = random.Random(4242)
ESC = "\x1b"
R = "[REDACTED:remembered]"


def value(n: int = 18) -> str:
    """A credential-like value: letters and digits, no `-`/`_` (so the expected cuts are exact)."""
    while True:
        v = "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(n))
        if any(c.isdigit() for c in v) and any(c.isupper() for c in v) and any(c.islower() for c in v):
            return v


@pytest.fixture()
def mem(tmp_path):
    m = SecretMemory(tmp_path / "secrets")
    yield m
    m.close()


class _Counting:
    """Wraps the inner HMAC pad: counts one per candidate hashed."""

    def __init__(self, state, box: list[int]) -> None:
        self.state, self.box = state, box

    def copy(self):
        self.box[0] += 1
        return self.state.copy()


def count_hashes(m: SecretMemory) -> list[int]:
    box = [0]
    inner, outer = m._key_pads()
    m._pads = (_Counting(inner, box), outer)
    return box


# --------------------------------------------------------------------------------------- the cuts


@pytest.mark.parametrize("run,expected", [
    ("plainvalue123", ([0], [13])),
    ("user:pw@host", ([0, 5, 8], [4, 7, 12])),
    ("**abcdefgh**", ([0, 1, 2, 11], [1, 10, 11, 12])),
    ("__abcd1234__", ([0, 1, 2], [10, 11, 12])),     # empty pieces between weak cuts count
    ("svc-abcd1234", ([0, 4], [12])),                      # letters before `-`: a start after it
    ("abcd1234-prod", ([0], [8, 13])),                     # letters after `-`: an end before it
    ("v2-abcd1234", ([0], [11])),                          # `v2` is no word: no cut
    ("550e8400-e29b-41d4-a716-446655440000", ([0], [36])),  # a UUID adds no candidate
    ("-pabcd1234", ([0, 1, 2], [10])),                     # one-letter flag opening the run
    ("x-pabcd1234", ([0, 2], [11])),                       # not opening the run: `-` is glue only
    ("%3Dabcd1234%26", ([0, 1, 3, 12], [11, 14])),         # percent-encoded delimiters
    ("\\nabcd1234\\n", ([0, 1, 2, 11], [10, 12])),         # JSON escape before and after
    ("\\u0022abcd1234", ([0, 1, 6], [14])),
    (ESC + "[33mabcd1234" + ESC + "[0m", ([0, 1, 5, 14], [13, 17])),
    ("密码是abcd1234。", ([0, 3], [11, 12])),               # CJK letters, then CJK punctuation
    ("“abcd1234”…", ([0, 1, 10], [9, 10, 11])),
    ("пароль", ([0], [6])),                               # one non-ASCII word: the whole run
], ids=["plain", "userinfo", "md-bold", "md-underscore", "svc-prefix", "prod-suffix", "digit-glue", "uuid", "flag",
        "inner-dash", "percent", "json-escape", "unicode-escape", "ansi", "cjk", "typographic", "cyrillic"])
def test_bounds_of_runs(run, expected):
    assert _bounds(run) == expected


def test_every_strong_separator_character_is_still_a_cut():
    """The cuts are a superset of the earlier ones: every character of the old separator set."""
    for ch in ":@=/,;&?#|()[]{}!.+\\":
        run = f"abcd{ch}efgh"
        starts, ends = _bounds(run)
        assert (5 in starts or ch == "\\", 4 in ends) == (True, True), ch


# ------------------------------------------------------------------------------ found in a text


@pytest.mark.parametrize("form,expected", [
    ("**{v}**", "**{R}**"),
    ("__{v}__", "__{R}__"),
    ("~~{v}~~", "~~{R}~~"),
    ("^{v}^", "^{R}^"),
    ("${v}", "${R}"),
    ("%{v}%", "%{R}%"),
    ("pw%3D{v}%26next", "pw%3D{R}%26next"),
    ("{{\\\"pw\\\":\\\"x\\\"}}\\n{v}\\n", "{{\\\"pw\\\":\\\"x\\\"}}\\n{R}\\n"),
    ("\\u0022{v}\\u0022", "\\u0022{R}\\u0022"),
    (ESC + "[01;31m" + ESC + "[K{v}" + ESC + "[m" + ESC + "[K",
     ESC + "[01;31m" + ESC + "[K{R}" + ESC + "[m" + ESC + "[K"),
    ("密码是{v}，请勿外传。", "密码是{R}，请勿外传。"),
    ("「{v}」", "「{R}」"),
    ("—{v}—", "—{R}—"),
    ("«{v}»", "«{R}»"),
    ("→{v}←", "→{R}←"),
    ("🔑{v}✅", "🔑{R}✅"),
    ("ＰＷ：{v}", "ＰＷ：{R}"),
    ("svc-{v}", "svc-{R}"),
    ("svc_{v}", "svc_{R}"),
    ("{v}-prod", "{R}-prod"),
    ("{v}_backup", "{R}_backup"),
    ("my-api-svc-{v}-prod-eu", "my-api-svc-{R}-prod-eu"),
    ("-p{v}", "-p{R}"),
    ("-P{v}", "-P{R}"),
])
def test_remembered_value_found_in_glued_and_punctuated_forms(mem, form, expected):
    v = value()
    assert mem.remember([v]) == 1
    text = "later: " + form.format(v=v) + " end"
    assert mem.scrub(text) == ("later: " + expected.format(R=R) + " end", 1)


@pytest.mark.parametrize("form", ["x{v}", "{v}y", "v2-{v}", "{v}-v2", "-pp{v}", "9{v}"])
def test_value_glued_to_word_characters_or_ids_is_not_a_token(mem, form):
    """The bound of the lookup: glued to letters or digits, or by `-`/`_` to a piece that is not a
    plain word, the value is part of a larger token."""
    v = value()
    mem.remember([v])
    text = "later: " + form.format(v=v) + " end"
    assert mem.scrub(text) == (text, 0)


def test_value_with_its_own_dashes_found_whole_and_glued(mem):
    v = "Qz" + value(10) + "-x9_" + value(8)
    assert mem.remember([v]) == 1
    text = f"{v} svc-{v} {v}_backup tok={v}."
    assert mem.scrub(text) == (f"{R} svc-{R} {R}_backup tok={R}.", 4)


def test_overlapping_remembered_values_are_removed_as_one_span(mem):
    """Two remembered values that overlap in a text: no character of either survives."""
    a, b = value(12), value(12)
    x, y = a + "/Kq" + b[:6], "Kq" + b[:6] + "." + a[:5]
    assert mem.remember([x, y]) == 2
    text = f"tok={a}/Kq{b[:6]}.{a[:5]} end"
    out, n = mem.scrub(text)
    assert (out, n) == (f"tok={R} end", 1)


def test_find_many_equals_find_for_the_new_forms(mem):
    v = value()
    mem.remember([v])
    texts = [f"**{v}**", "plain text", f"svc-{v}", f"密码是{v}。", f"{ESC}[33m{v}{ESC}[0m", f"-p{v}", f"x{v}"]
    assert mem.find_many(texts) == [mem.find(t) for t in texts]
    assert [len(s) for s in mem.find_many(texts)] == [1, 0, 1, 1, 1, 1, 0]


# -------------------------------------------------------------------------- caches stay correct


def test_candidate_seen_clean_is_found_once_the_value_is_learned(mem, tmp_path):
    """A candidate hashed without a hit is cached; learning it (here or in another instance)
    empties that cache, so the same candidate in a new run is then found."""
    v, w = value(), value(20)
    mem.remember([value(30)])  # something remembered, so lookups run and cache
    assert mem.scrub(f"one svc-{v} two") == (f"one svc-{v} two", 0)
    assert mem.scrub(f"one svc_{w} two") == (f"one svc_{w} two", 0)
    mem.remember([v])
    assert mem.scrub(f"three api-{v} four") == (f"three api-{R} four", 1)
    other = SecretMemory(tmp_path / "secrets")
    other.remember([w])
    other.close()
    mem._checked_at = 0.0  # skip the once-per-second refresh throttle
    assert mem.scrub(f"five {w}_old six") == (f"five {R}_old six", 1)


def test_candidate_cache_is_bounded(mem, monkeypatch):
    from reverie.redact import memory as memory_mod

    monkeypatch.setattr(memory_mod, "_MISSES_MAX", 50)
    mem.remember([value(12)])
    for i in range(40):
        mem.find(" ".join(f"k{i}x{j}=" + value(12) for j in range(10)))
        assert len(mem._misses) <= 50 + 10 * 12  # cleared before a run once over the bound


# ------------------------------------------------------------------------------------- the cost


@pytest.mark.parametrize("run", [
    "a-" * 50_000,
    "ab_" * 40_000,
    "a/" * 50_000,
    "%41" * 40_000,
    "\\n" * 50_000,
    (ESC + "[1") * 30_000,
    "是a" * 50_000,
    "svc-" + "-".join(value(6) for _ in range(15_000)),
    "-" * 100_000,
], ids=["dash", "underscore", "slash", "percent", "escape", "ansi-open", "cjk-ascii", "words", "dashes"])
def test_hostile_runs_cost_a_bounded_number_of_hashes_per_character(mem, run):
    """Every candidate length remembered (the worst case for the lookup): a run of 100k characters
    made of cuts is hashed at most `_PIECES` times per character, once, then answered from the
    caches."""
    mem.remember([value(n) for n in range(8, 64)])
    hashed = count_hashes(mem)
    assert mem.find(f"x {run} y") == []
    first = hashed[0]
    assert first <= _PIECES * len(run), first
    assert mem.find(f"z {run} w") == []
    assert hashed[0] == first  # the run is known clean now


def test_run_with_many_cuts_still_finds_a_value_delimited_by_strong_separators(mem):
    v = value(24)
    mem.remember([v])
    run = "-".join(f"w{i}" for i in range(3 * _MAX_SEPARATORS)) + f"/{v}," + "_".join("ab" for _ in range(60))
    assert mem.scrub(f"a {run} b") == (f"a {run.replace(v, R)} b", 1)


# ------------------------------------------------------------------------------------- rescan


def test_rescan_with_memory_scrubs_glued_and_punctuated_forms(mem, tmp_path):
    v = value()
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, title TEXT)")
    conn.executemany("INSERT INTO notes (id, body, title) VALUES (?, ?, ?)", [
        (1, f"login **{v}** now", "t"),
        (2, f"user svc-{v} made", f"「{v}」"),
        (3, "nothing here", None),
        (4, f"{ESC}[32m{v}{ESC}[0m and -p{v}", "x"),
    ])
    conn.commit()
    mem.remember([v])
    assert rescan(conn, [("notes", "id", ["body", "title"])], mem) == 3
    rows = conn.execute("SELECT id, body, title FROM notes ORDER BY id").fetchall()
    conn.close()
    assert rows == [
        (1, f"login **{R}** now", "t"),
        (2, f"user svc-{R} made", f"「{R}」"),
        (3, "nothing here", None),
        (4, f"{ESC}[32m{R}{ESC}[0m and -p{R}", "x"),
    ]
