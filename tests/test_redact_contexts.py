"""Detection in the contexts the redact audit found missing: terminal colour codes, JSON-escaped
JSON, values ending in non-ASCII spaces or punctuation, URL users named like secrets, .netrc,
`mysql -p`, session cookies, and the same-text occurrences of detected values (many values, glued
forms, weak values). Values are generated at run time from a seeded RNG: no credential-shaped
literal sits in the repository."""

from __future__ import annotations

import random

import pytest
from secret_values import generators

from reverie.redact import engine
from reverie.redact.engine import Redactor, _find_each, _find_many, _occurrences, _strip_ansi
from reverie.redact.keys import _clean_bare, classify_key
from reverie.redact.scanner import Span

RNG = random.Random(424242)
ESC = "\x1b"
rand, pw = generators(RNG)


GH = "ghp_" + rand(36)


# --- same-text occurrences -------------------------------------------------------------------


def test_many_distinct_values_each_repeated_glued_or_apart(redactor):
    """More values than `_FIND_EACH_MAX` (the one-pass search): every glued copy of a
    credential-like value goes, a weak value goes where it stands apart, not inside a word."""
    n = engine._FIND_EACH_MAX + 6
    vals = [pw() for _ in range(n)]
    text = "".join(f"export DB_PASSWORD_{i}={v}\nrun -p{v} && echo svc-{v}_bak\n" for i, v in enumerate(vals))
    text += 'password = "rootpasswd"\nlogin rootpasswd; myrootpasswdx stays\n'
    out = redactor.redact(text)
    want = "".join(f"export DB_PASSWORD_{i}=[REDACTED:password]\nrun -p[REDACTED:remembered] && echo "
                   f"svc-[REDACTED:remembered]_bak\n" for i in range(n))
    want += 'password = "[REDACTED:password]"\nlogin [REDACTED:remembered]; myrootpasswdx stays\n'
    assert out.text == want
    assert [f.rule for f in out.findings].count("same-text") == 2 * n + 1


def test_weak_url_password_is_not_searched_again(redactor):
    """A URL password that is a plain word (no rule checked its shape) is redacted in its URL,
    but the same word elsewhere (the scheme, an image name) stays."""
    text = "DATABASE_URL=postgres://postgres:postgres@localhost:5432/app\nimage: postgres:16\n"
    assert redactor.redact_text(text) == (
        "DATABASE_URL=postgres://postgres:[REDACTED:password]@localhost:5432/app\nimage: postgres:16\n")


def test_one_pass_search_finds_what_find_each_finds():
    """`_find_many` (aligned 4-character blocks) and `_find_each` (`str.find` per value) agree on
    every occurrence, overlapping ones, ones at the text's edges and values sharing heads."""
    def s(n: int) -> str:
        return "".join(RNG.choice("ab1-_") for _ in range(n))

    checked = 0
    for _ in range(200):
        base = s(8)
        values = {base + s(RNG.randrange(0, 6)) for _ in range(RNG.randrange(1, 12))}
        values |= {s(RNG.randrange(8, 14)) for _ in range(3)}
        text = "".join(RNG.choice([*values, s(5), " "]) for _ in range(40))
        want = sorted(_find_each(text, values))
        assert sorted(_find_many(text, values)) == want
        checked += len(want)
    assert checked > 1000  # the texts do hold many occurrences


def test_occurrences_skip_detector_spans_by_bisection():
    v = "Zq8" + "x7Yw2" * 2
    text = f"a={v} b={v} c={v}"
    existing = [Span(2, 2 + len(v), "password", "assignment"), Span(text.rindex(v), len(text), "password", "x")]
    assert _occurrences(text, {v}, set(), existing) == [Span(text.index(v, 3), text.index(v, 3) + len(v),
                                                               "remembered", "same-text")]


def test_each_detectors_own_value_is_remembered(tmp_path):
    """Two detectors over one value with different extents: the memory learns the secret, not the
    union of the spans; `user:VALUE@host` after a secret-named user keeps the host."""
    p = pw()
    r = Redactor(tmp_path / "secrets")
    first = r.redact(f"remote: https://oauth2-token:{p}@gitlab.example.com/grp/repo.git\n")
    # (two rules label the value differently: the label is not the point here)
    kept = (first.text.startswith("remote: https://oauth2-token:[REDACTED:")
            and first.text.endswith("]@gitlab.example.com/grp/repo.git\n"))
    assert (kept, p in first.text, first.learned, r.redact_text(f"now {p}.")) == (
        True, False, 1, "now [REDACTED:remembered].")


def test_secret_named_url_user_without_password_is_a_host():
    """`scheme://token-server:8443/path`: a host and port, nothing to redact."""
    r = Redactor(None)
    text = "curl https://token-service:8443/v1/health and https://secret-store.internal:9200/_cat"
    assert (r.redact(text).text, r.redact(text).findings) == (text, [])


# --- terminal colour codes --------------------------------------------------------------------


def test_colour_codes_keep_their_place_and_spans_are_in_the_input(redactor):
    p = pw()
    text = f"{ESC}[1;32m$ {ESC}[0mcat .env\nAPI_{ESC}[31mTOKEN{ESC}[0m={GH}\n{ESC}]0;title{ESC}\\DB_PASSWORD={p}{ESC}[K\n"
    out = redactor.redact(text)
    assert out.text == (f"{ESC}[1;32m$ {ESC}[0mcat .env\nAPI_{ESC}[31mTOKEN{ESC}[0m=[REDACTED:github_token]\n"
                        f"{ESC}]0;title{ESC}\\DB_PASSWORD=[REDACTED:password]{ESC}[K\n")
    assert [(f.type, text[f.start:f.end]) for f in out.findings] == [("github_token", GH), ("password", p)]
    # the batch path gives the same
    assert [x.text for x in redactor.redact_many([text, "plain", text])] == [out.text, "plain", out.text]


def test_colour_code_inside_a_value_goes_with_it(redactor):
    head, tail = GH[:10], GH[10:]
    text = f"token {head}{ESC}[1m{tail}{ESC}[0m end"
    assert redactor.redact_text(text) == f"token [REDACTED:github_token]{ESC}[0m end"


def test_strip_ansi_maps_nothing_without_escape():
    assert (_strip_ansi("plain text"), _strip_ansi(f"lone {ESC} byte")) == (None, None)
    assert _strip_ansi(f"a{ESC}[31mb{ESC}(Bc") == ("abc", [1, 2], [5, 8])


# --- values that end where the text's script says ----------------------------------------------


def test_bare_value_ends_at_unicode_space_or_punctuation_but_keeps_letters(redactor):
    p = pw()
    accented = "Pä55" + rand(10) + "ö"
    text = (f"DB_PASSWORD={p}\u3001ok\nAPI_TOKEN={p[::-1]}\u201d said\nSECRET_KEY={accented}\u2009x\n"
            f"client_secret={p}\u00bb\n")
    assert redactor.redact_text(text) == (
        "DB_PASSWORD=[REDACTED:password]\u3001ok\nAPI_TOKEN=[REDACTED:token]\u201d said\n"
        "SECRET_KEY=[REDACTED:secret]\u2009x\nclient_secret=[REDACTED:secret]\u00bb\n")


def test_clean_bare_keeps_balanced_closers_and_drops_the_rest():
    v = rand(10)
    forms = [f"{v})", f"f({v})", f"f({v}))", f"{v}" + ")" * 5000 + ".", f"{v}>,"]
    assert [_clean_bare(x) for x in forms] == [v, f"f({v})", f"f({v})", v, v]


# --- JSON-escaped JSON ---------------------------------------------------------------------------


def test_every_key_of_an_escaped_json_object_is_checked(redactor):
    p, k, t = pw(), rand(32), rand(40)
    text = ('{"Body": "{\\"db_password\\":\\"' + p + '\\",\\"name\\":\\"app\\",\\"api_key\\": \\"' + k
            + '\\",\\"auth_token\\":\\"' + t + '\\"}"}')
    assert redactor.redact_text(text) == (
        '{"Body": "{\\"db_password\\":\\"[REDACTED:password]\\",\\"name\\":\\"app\\",\\"api_key\\": '
        '\\"[REDACTED:api_key]\\",\\"auth_token\\":\\"[REDACTED:token]\\"}"}')


def test_escaped_json_without_secrets_is_kept(redactor):
    text = '{"content": "{\\"max_tokens\\":\\"4096\\",\\"token_type\\":\\"bearer\\",\\"api_key\\":\\"${API_KEY}\\"}"}'
    assert (redactor.redact(text).text, redactor.redact(text).findings) == (text, [])


# --- keys, .netrc, mysql, cookies -----------------------------------------------------------------


def test_classify_key_lifts_the_excluded_segment_veto_only_for_a_qualified_secret_word():
    keys = ["__Secure-next-auth.session-token", "next-auth.session-token", "nextPageToken", "next_page_token",
            "public_key", "cache_key", "publicApiKey", "csrf_token", "sort_key", "page_access_token"]
    assert [classify_key(k) for k in keys] == [
        ("secret", "token"), ("secret", "token"), None, None, None, None, ("secret", "api_key"), None, None,
        ("secret", "token")]


def test_classify_key_reads_kconfig_namespaces_and_qualified_tokens():
    """A Kconfig symbol's namespace (`CONFIG_EXAMPLE_`) is no word of the key; `tokens` after an
    auth word are tokens (`DENO_AUTH_TOKENS`), after anything else a count (`max_tokens`)."""
    keys = ["CONFIG_EXAMPLE_WIFI_PASSWORD", "CONFIG_EXAMPLE_FAKE_PASSWORD", "EXAMPLE_PASSWORD",
            "DENO_AUTH_TOKENS", "access_tokens", "max_tokens", "input_tokens"]
    assert [classify_key(k) for k in keys] == [
        ("pw", "password"), None, None, ("secret", "token"), ("secret", "token"), None, None]


@pytest.mark.parametrize("template", [
    'var PAYPAL_SECRET = "{a}" +\n                    "{b}";',
    'static let mapboxToken = "{a}" +\n    "{b}"',
    "local key = '{a}' .. '{b}'",
    'private static final String API_KEY = "{a}"\n        + "{b}";',            # the operator leads
    '{{"code":"API_KEY = \\"{a}\\" +\\n  \\"{b}\\""}}',                       # JSON-escaped
    'PAYPAL_SECRET = "{a}" \\\n  "{b}"',                                         # Python's `\`
    'API_KEY = "{a}" "{b}"',                                                     # side by side
])
def test_a_secret_split_by_concatenation_goes_whole(redactor, template):
    a, b = rand(40), rand(40)
    out = redactor.redact(template.format(a=a, b=b)).text
    assert a not in out and b not in out
    assert out.count("[REDACTED:") == 2


def test_concatenation_takes_literals_only_and_no_next_statement(redactor):
    a = rand(40)
    for text, kept in [(f'API_KEY = "{a}" + " " + user', ' + " " + user'),
                       (f'password: "{a}"\n"user": "bobsmith"', '\n"user": "bobsmith"')]:
        out = redactor.redact(text).text
        assert a not in out and out.endswith(kept)


def test_netrc_entries_and_prose_about_passwords(redactor):
    p, q = pw(), pw()
    text = (f"machine api.example.com\n  login bot\n  account ops\n  password {p}\n"
            f"machine h2 password {q} login me\n"
            "default login anonymous password user@example.com\n"
            "machine h3 login u password $NETRC_PASSWORD\n"
            "Change the password regularly; password hashing uses bcrypt.\n")
    assert redactor.redact_text(text) == (
        "machine api.example.com\n  login bot\n  account ops\n  password [REDACTED:password]\n"
        "machine h2 password [REDACTED:password] login me\n"
        "default login anonymous password user@example.com\n"
        "machine h3 login u password $NETRC_PASSWORD\n"
        "Change the password regularly; password hashing uses bcrypt.\n")


def test_mysql_glued_password_forms(redactor):
    p, q = pw(), pw()
    text = (f"mysql -h db -uroot -p{p} app\nMYSQL_PWD= mariadb-dump -u root -p'{q}' shop > s.sql\n"
            "mysql -u root -p app\nmysql -u root -p$MYSQL_ROOT_PASSWORD\nmysqladmin -P 3306 ping\n")
    assert redactor.redact_text(text) == (
        "mysql -h db -uroot -p[REDACTED:password] app\nMYSQL_PWD= mariadb-dump -u root -p'[REDACTED:password]' "
        "shop > s.sql\nmysql -u root -p app\nmysql -u root -p$MYSQL_ROOT_PASSWORD\nmysqladmin -P 3306 ping\n")


def test_session_cookies_in_headers_json_and_curl(redactor):
    a, b, c, d = rand(32), rand(26).lower() + "7", "s%3A" + rand(40), rand(32)
    text = (f"Cookie: theme=dark; _myapp_session={a}\r\n"
            f'{{"headers": {{"cookie": "lang=en; PHPSESSID={b}"}}}}\n'
            f"curl -b 'connect.sid={c}' https://app/\n"
            f"Set-Cookie: ci_session={d}; Max-Age=7200\n"
            "Set-Cookie: session=; Max-Age=0; Path=/\n"
            "requests.get(url, session=session_factory)\n")
    assert redactor.redact_text(text) == (
        "Cookie: theme=dark; _myapp_session=[REDACTED:token]\r\n"
        '{"headers": {"cookie": "lang=en; PHPSESSID=[REDACTED:token]"}}\n'
        "curl -b 'connect.sid=[REDACTED:token]' https://app/\n"
        "Set-Cookie: ci_session=[REDACTED:token]; Max-Age=7200\n"
        "Set-Cookie: session=; Max-Age=0; Path=/\n"
        "requests.get(url, session=session_factory)\n")


def test_batch_and_single_agree_on_the_new_contexts(redactor):
    p = pw()
    texts = [f"{ESC}[33m{GH}{ESC}[0m", f"machine h login u password {p}", f"mysql -p{p} db",
             f"Cookie: sessionid={rand(32)}", '"{\\"password\\":\\"' + p + '\\"}"', f"DB_PASSWORD={p}\u00a0x",
             "nothing here at all"]
    assert [r.text for r in redactor.redact_many(texts)] == [redactor.redact_text(t) for t in texts]
