"""Detection and redaction (redact.engine / redact.scanner), each category in realistic contexts.

Token-shaped test values are generated from a seeded RNG at run time so that no secret-looking
literal sits in the repository (push protection) and none contains a placeholder word.
"""

from __future__ import annotations

import random
import string
import time

import pytest

from reverie.redact.engine import Redactor

RNG = random.Random(20240611)
ALNUM = string.ascii_letters + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        v = "".join(RNG.choice(alphabet) for _ in range(n))
        need_digit = any(c.isdigit() for c in alphabet)
        if (any(c.isdigit() for c in v) or not need_digit) and any(c.isalpha() for c in v):
            return v


HEX = "0123456789abcdef"
GH = "ghp_" + rand(36)
AWS_ID = "AKIA" + rand(16, string.ascii_uppercase + "234567")
AWS_SECRET = rand(40, ALNUM + "/+")
SLACK = f"xoxb-{RNG.randrange(10**11, 10**12)}-{RNG.randrange(10**11, 10**12)}-{rand(24)}"
STRIPE = "sk_live_" + rand(24)
OPENAI = "sk-proj-" + rand(58, ALNUM + "_-") + "T3BlbkFJ" + rand(58, ALNUM + "_-")  # "T3BlbkFJ": base64 "OpenAI"
ANTHROPIC = "sk-ant-api03-" + rand(93, ALNUM + "_-") + "AA"
GOOGLE = "AIza" + rand(35, ALNUM + "_-")
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIx" + rand(30) + "." + rand(43, ALNUM + "_-")
PASSWORD = "s3cr3t" + rand(6) + "!"
HF = "hf_" + rand(34, string.ascii_letters)
NPM = "npm_" + rand(36)
PEM_BODY = "\n".join(rand(64, ALNUM + "+/") for _ in range(6))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def assert_kept(redactor, text: str) -> None:
    """`text` comes back unchanged, with no finding."""
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


def test_env_dump_keeps_keys_and_harmless_values(redactor):
    text = (
        f"PORT=8080\nLOG_LEVEL=debug\nDB_PASSWORD={PASSWORD}\nGITHUB_TOKEN={GH}\n"
        f"AWS_ACCESS_KEY_ID={AWS_ID}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\nNODE_ENV=production\n"
    )
    out = redactor.redact(text)
    assert out.text == (
        "PORT=8080\nLOG_LEVEL=debug\nDB_PASSWORD=[REDACTED:password]\nGITHUB_TOKEN=[REDACTED:github_token]\n"
        "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key]\nAWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]\nNODE_ENV=production\n"
    )
    assert [f.type for f in out.findings] == ["password", "github_token", "aws_access_key", "aws_secret_key"]


def test_curl_headers_and_user(redactor):
    opaque = rand(40, ALNUM + "._-")
    text = (
        f'curl -s -H "Authorization: Bearer {opaque}" https://api.example.com/v1/items\n'
        f'curl -s -H "Authorization: Bearer {OPENAI}" https://api.openai.com/v1/models\n'
        f"curl -u deploy:{PASSWORD} https://ci.example.com/api\n"
        f'curl -H "x-api-key: {rand(32, HEX)}" https://api.example.com/v1/messages\n'
        f'curl -H "x-api-key: {ANTHROPIC}" https://api.anthropic.com/v1/messages'
    )
    assert redactor.redact_text(text) == (
        'curl -s -H "Authorization: Bearer [REDACTED:bearer]" https://api.example.com/v1/items\n'
        'curl -s -H "Authorization: Bearer [REDACTED:openai_key]" https://api.openai.com/v1/models\n'
        "curl -u deploy:[REDACTED:password] https://ci.example.com/api\n"
        'curl -H "x-api-key: [REDACTED:api_key]" https://api.example.com/v1/messages\n'
        'curl -H "x-api-key: [REDACTED:anthropic_key]" https://api.anthropic.com/v1/messages'
    )


def test_connection_strings(redactor):
    pw = rand(14)
    text = (
        f"DATABASE_URL=postgres://app:{pw}@db:5432/x\n"
        f"mongodb+srv://admin:{pw}@cluster0.mongodb.net/test\n"
        f"redis://:{pw}@cache:6379/0\n"
        f"jdbc:mysql://db:3306/app?user=app&password={pw}\n"
        f"Server=tcp:db.example.net;Database=app;User ID=app;Password={pw};Encrypt=True"
    )
    assert redactor.redact_text(text) == (
        "DATABASE_URL=postgres://app:[REDACTED:password]@db:5432/x\n"
        "mongodb+srv://admin:[REDACTED:password]@cluster0.mongodb.net/test\n"
        "redis://:[REDACTED:password]@cache:6379/0\n"
        "jdbc:mysql://db:3306/app?user=app&password=[REDACTED:password]\n"
        "Server=tcp:db.example.net;Database=app;User ID=app;Password=[REDACTED:password];Encrypt=True"
    )


def test_yaml_json_toml_ini(redactor):
    text = (
        f'{{"api_key": "{rand(32, HEX)}", "max_tokens": 4096, "model": "claude-sonnet-4"}}\n'
        f"slack:\n  bot_token: {SLACK}\n  channel: general\n"
        f'[stripe]\nsecret_key = "{STRIPE}"\n'
        f"[hf]\ntoken={HF}\n"
    )
    assert redactor.redact_text(text) == (
        '{"api_key": "[REDACTED:api_key]", "max_tokens": 4096, "model": "claude-sonnet-4"}\n'
        "slack:\n  bot_token: [REDACTED:slack_token]\n  channel: general\n"
        '[stripe]\nsecret_key = "[REDACTED:stripe_key]"\n'
        "[hf]\ntoken=[REDACTED:huggingface_token]\n"
    )


def test_provider_tokens_alone_in_prose(redactor):
    for token, label in [(GH, "github_token"), (SLACK, "slack_token"), (STRIPE, "stripe_key"),
                         (OPENAI, "openai_key"), (ANTHROPIC, "anthropic_key"), (GOOGLE, "google_api_key"),
                         (AWS_ID, "aws_access_key"), (JWT, "jwt"), (HF, "huggingface_token"), (NPM, "npm_token")]:
        text = f"I pasted {token} into the chat by mistake."
        assert redactor.redact_text(text) == f"I pasted [REDACTED:{label}] into the chat by mistake.", label


def test_private_key_printed_by_cat(redactor):
    text = f"$ cat ~/.ssh/id_rsa\n{PEM}\n$ ls"
    out = redactor.redact(text)
    assert out.text == "$ cat ~/.ssh/id_rsa\n[REDACTED:private_key]\n$ ls"
    assert [(f.type, f.rule) for f in out.findings] == [("private_key", "private-key")]
    # JSON-escaped newlines (a tool result stored as a JSON string) and a truncated key
    escaped = f'{{"output": "{PEM.replace(chr(10), chr(92) + "n")}"}}'
    assert redactor.redact_text(escaped) == '{"output": "[REDACTED:private_key]"}'
    truncated = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY[:200]
    assert redactor.redact_text(truncated) == "[REDACTED:private_key]"


def test_error_log_with_token_in_url(redactor):
    token = rand(40)
    text = f"ERROR 2024-05-01T10:00:00Z GET https://api.example.com/v1/items?access_token={token}&page=2 -> 401"
    assert redactor.redact_text(text) == (
        "ERROR 2024-05-01T10:00:00Z GET https://api.example.com/v1/items?access_token=[REDACTED:token]&page=2 -> 401"
    )


def test_values_that_must_survive(redactor):
    text = (
        "commit 3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e\n"
        "id 123e4567-e89b-12d3-a456-426614174000 tool toolu_01A09q90qw90lq917835lq9 msg msg_01XFDUDYJgAACzvnptvVoYEL\n"
        "request req_011CRUdTk6ZWZ9q2nPL1bT9X image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
        '"integrity": "sha512-7A5X3ciwJu1OZa0jInl2FaYXwRaNI5hsVfr0cI21Bs3+yJ8w9TXb0PtQJFDsnl3hbNMYcv9SIH7Cf1FPkg1w7g=="\n'
        "PORT=8080 LOG_LEVEL=debug\n"
        "the password reset flow sends a link; the token expires after an hour\n"
        "key={todo.id} token = Review(token) password: ${DB_PASSWORD} api_key=os.environ['API_KEY']\n"
        '"input_tokens": 1234, "cache_creation_input_tokens": 0, "max_tokens": 8192\n'
        "Authorization: Bearer $TOKEN\n"
    )
    out = redactor.redact(text)
    assert out.text == text
    assert out.findings == []


def test_placeholders_are_not_secrets(redactor):
    text = (
        "API_KEY=your-api-key\nTOKEN=<token>\nPASSWORD=changeme\nSECRET=xxxxxxxxxxxxxxxx\n"
        "GITHUB_TOKEN=${GITHUB_TOKEN}\nAWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX\npassword: '********'\n"
    )
    assert redactor.redact(text).findings == []


def test_same_value_elsewhere_in_the_text_is_removed(redactor):
    text = f"export DB_PASSWORD={PASSWORD}\n$ psql -U app -W\nPassword for user app: {PASSWORD}"
    assert redactor.redact_text(text) == (
        "export DB_PASSWORD=[REDACTED:password]\n$ psql -U app -W\nPassword for user app: [REDACTED:remembered]"
    )


def test_findings_carry_no_value(redactor):
    out = redactor.redact(f"GITHUB_TOKEN={GH}")
    (f,) = out.findings
    d = f.to_dict()
    assert set(d) == {"type", "start", "end", "rule", "hash_prefix"}
    assert (d["type"], d["start"], d["end"], len(d["hash_prefix"])) == ("github_token", 13, 13 + len(GH), 8)
    assert GH not in repr(out.findings)


def test_redaction_is_idempotent(redactor):
    once = redactor.redact_text(f"DB_PASSWORD={PASSWORD} token={GH} key={rand(32)}")
    assert redactor.redact(once).findings == []


def test_binary_and_odd_input(redactor):
    blob = bytes(range(256)) * 50 + b"\xff\xfe GITHUB_TOKEN=" + GH.encode() + b" \x00\x00"
    out = redactor.redact(blob)
    assert GH not in out.text
    assert "[REDACTED:github_token]" in out.text
    assert redactor.redact_text("") == ""
    assert redactor.redact_text(None) == ""
    surrogate = "caf\udce9 token=" + GH + " \ud83d"
    assert redactor.redact_text(surrogate) == "caf\udce9 token=[REDACTED:github_token] \ud83d"
    unicode = "Mot de passe: é password=" + PASSWORD + " ✓ 日本語"
    assert redactor.redact_text(unicode) == "Mot de passe: é password=[REDACTED:password] ✓ 日本語"


def test_huge_input(redactor):
    filler = "ordinary transcript text with words and numbers 12345, paths /usr/lib and urls https://x.org\n"
    text = filler * 60_000 + f"OPENAI_API_KEY={OPENAI}\n" + filler * 1000  # ~5.6 MB
    out = redactor.redact(text)
    assert OPENAI not in out.text
    assert [(f.type, f.start) for f in out.findings] == [("openai_key", len(filler) * 60_000 + len("OPENAI_API_KEY="))]


def test_backtracking_bombs_finish_fast(redactor):
    """Inputs that make backtracking regexes explode (nested quantifiers over long near-matches)."""
    bombs = [
        "password=" + "a" * 200_000 + "!",
        "-----BEGIN RSA PRIVATE KEY-----" + "A" * 300_000,
        "curl " + "-u " * 50_000 + "x",
        "https://" + "a:" * 100_000 + "@",
        "token" * 100_000,
        "a_" * 150_000 + "token = " + "=" * 100_000,
        '"' + "\\\\" * 100_000 + '"',
        "eyJ" + "a" * 50_000 + ".eyJ" + "b" * 50_000 + "." * 50_000,
        "key=" + "key=" * 60_000,
    ]
    for bomb in bombs:
        t0 = time.perf_counter()
        redactor.redact(bomb)
        # generous bound: linear-time work on <= 600 KB; a backtracking engine takes minutes here
        assert time.perf_counter() - t0 < 20, bomb[:30]


def test_redact_many_and_scrub_shape(redactor):
    texts = [f"token={GH}", "nothing here", f"password: {PASSWORD}"]
    outs = redactor.redact_many(texts)
    assert [o.text for o in outs] == ["token=[REDACTED:github_token]", "nothing here", "password: [REDACTED:password]"]
    assert redactor.scrub(f"token={GH}") == ("token=[REDACTED:github_token]", 1)


def test_presidio_registry_holds_only_our_recognizers(redactor):
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    names = sorted(r.name for r in redactor.analyzer.registry.recognizers)
    assert names == [
        "reverie-secret-assignment", "reverie-secret-auth-header", "reverie-secret-connection-string",
        "reverie-secret-high-entropy", "reverie-secret-private-key", "reverie-secret-provider-token",
    ]
    assert isinstance(redactor.analyzer.nlp_engine, NoOpNlpEngine)


def test_redact_many_matches_one_by_one(redactor):
    texts = ["short", "plain words only, nothing to see", f"GITHUB_TOKEN={GH}", "", None,
             f"é unicode then {SLACK}", f"AC{rand(32, HEX)} twilio-like", "tokens: 12"] * 3
    many = redactor.redact_many(texts)
    one = [redactor.redact(t) for t in texts]
    assert [(m.text, m.findings) for m in many] == [(o.text, o.findings) for o in one]


def test_redact_many_finds_what_each_text_alone_would(redactor):
    """Batch prefilter: anchors at a text's edges (`^-u`, a token right before the end, a k8s
    block) must fire inside a joined batch exactly as they do alone."""
    k8s = "kind: Secret\ndata:\n  token: " + rand(24, ALNUM) + "==\n"
    texts = [
        "plain words", f"-u deploy:{PASSWORD} https://ci.example.com", "more plain words here",
        k8s, f"ends with a token {GH}", f"{SLACK} starts the text", "x" * 30,
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}", "-----END RSA PRIVATE KEY----- stray footer",
    ]
    many = redactor.redact_many(texts)
    one = [redactor.redact(t) for t in texts]
    assert [(m.text, m.findings) for m in many] == [(o.text, o.findings) for o in one]
    assert [bool(o.findings) for o in one] == [False, True, False, True, True, True, False, True, False]


def test_redact_many_runs_presidio_once_per_chunk_with_each_text_scanned_alone(redactor, monkeypatch):
    """The batch path joins the candidate texts for ONE presidio `analyze` call per chunk, but every
    recognizer scans each text on its own: a k8s Secret's two markers split over neighbouring texts
    stay apart, spans never cross texts, offsets after multi-byte text map back exactly."""
    from reverie.redact import engine

    texts = []
    for i in range(engine._DETECT_BATCH + 40):
        texts += [
            f"é{i}ü GITHUB_TOKEN={GH}",
            "kind: Secret",  # alone: not a k8s manifest, so the next text's value stays
            "data:\n  settings: " + rand(40, ALNUM) + "==",
            f"{SLACK}",
            f"ünïcödé then password: {PASSWORD} and again {PASSWORD}",
            "plain words, nothing to see here",
        ]
    # texts of 2 KB and more get their own prefilter pass (`scanner._ALONE_BYTES`), the rest share one
    texts += ["lorem ipsum " * 200 + f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "plain " * 500]
    one = [redactor.redact(t) for t in texts]
    calls = []
    real = redactor.analyzer.analyze

    def counting(*args, **kwargs):
        calls.append(len(kwargs.get("text", args[0] if args else "")))
        return real(*args, **kwargs)

    monkeypatch.setattr(redactor.analyzer, "analyze", counting)
    many = redactor.redact_many(texts)
    assert [(m.text, m.findings) for m in many] == [(o.text, o.findings) for o in one]
    candidates = sum(1 for t in texts if redactor.scanner.triggered(t))
    assert len(calls) == -(-candidates // engine._DETECT_BATCH)
    assert one[0].text.endswith("GITHUB_TOKEN=[REDACTED:github_token]")
    assert one[2].findings == []
    assert redactor.redact(texts[1] + "\n" + texts[2]).text == "kind: Secret\ndata:\n  settings: [REDACTED:secret]"
    assert one[4].text == "ünïcödé then password: [REDACTED:password] and again [REDACTED:remembered]"
    assert (one[-2].text, one[-1].text) == ("lorem ipsum " * 200 + "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key]",
                                            "plain " * 500)


def test_prefilter_that_gives_up_runs_every_rule(redactor, monkeypatch):
    """When RE2's Sets bail out (no sentinel in their answer), every rule runs: same findings; one
    group's Set giving up runs every rule of that group, the others still prefilter."""
    text = f"DB_PASSWORD={PASSWORD} and {GH} in {JWT}"
    expected = redactor.redact(text)
    sc = redactor.scanner
    groups = sc.prefilter.groups
    assert len(groups) == 6 and frozenset().union(*(g.all for g in groups)) == sc.all_rules
    for group in groups:  # the real Sets name their sentinel whatever the text
        for data in (b"", b"plain words", b"a\nb\n", text.encode()):
            assert group.sentinel in group.match(data), data

    class GaveUp:  # RE2::Set::Match returns no match at all when its DFA runs out of memory
        def Match(self, data):
            return None

    with monkeypatch.context() as m:
        for group in groups:
            m.setattr(group, "match", GaveUp().Match)
        assert sc.fired(text.encode()) == sc.all_rules
        got = redactor.redact(text)
        assert (got.text, got.findings) == (expected.text, expected.findings)
        assert [o.text for o in redactor.redact_many([text, "plain"])] == [expected.text, "plain"]
    monkeypatch.setattr(groups[0], "match", GaveUp().Match)
    assert sc.fired(b"plain words") == groups[0].all
    assert sc.fired(text.encode()) >= groups[0].all | {i for i, r in enumerate(sc.rules) if r.name == "assignment"}
    got = redactor.redact(text)
    assert (got.text, got.findings) == (expected.text, expected.findings)


def _random_b64(n: int, seed: int) -> str:
    """n random base64 characters holding an upper-case letter, a digit and a character outside
    base58 (`0`), so no draw of the seed lands in an excluded alphabet."""
    rng = random.Random(seed)
    body = "".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(n - 3))
    return body[: n // 2] + "Q7" + body[n // 2:] + "0"


def test_quoted_random_string_with_no_key_is_redacted(redactor):
    a, b = _random_b64(48, 1), _random_b64(40, 2)
    got = redactor.redact(f'const client = new StreamClient("{a}");\nauth=("billing", \'{b}\')')
    # (a tuple given to `auth=` is a user and a password: rule auth-tuple's)
    assert got.text == 'const client = new StreamClient("[REDACTED:secret]");\nauth=("billing", \'[REDACTED:password]\')'
    assert [f.rule for f in got.findings] == ["quoted-high-entropy", "auth-tuple"]
    c, d, e = _random_b64(32, 8), _random_b64(64, 9), _random_b64(44, 10)
    got = redactor.redact(f'X="{c}=="\n{{"tool": "echo \\"{d}\\""}}\nkey = b\'{e}\'')
    # (a `b'...'` literal after a key is the assignment rule's: the key says what it is)
    assert got.text == 'X="[REDACTED:secret]"\n{"tool": "echo \\"[REDACTED:secret]\\""}\nkey = b\'[REDACTED:api_key]\''


def test_a_random_string_under_a_json_content_key_is_redacted(redactor):
    """`content` is any JSON message's key: it says nothing of the value (only a `<meta>` tag's
    `content` attribute is a page's public metadata, see the next test)."""
    v = _random_b64(48, 21)
    text = '{"role": "tool", "content": "' + v + '"}'
    assert redactor.redact(text).text == '{"role": "tool", "content": "[REDACTED:secret]"}'
    assert redactor.redact('<div content="' + v + '">').text == '<div content="[REDACTED:secret]">'


@pytest.mark.parametrize("key, label", [("session_id", "secret"), ("sessionId", "secret"),
                                        ("access_key_id", "api_key"), ("api_key_uuid", "api_key")])
def test_an_identifier_that_is_a_credential_is_redacted(redactor, key, label):
    """`keys.says_not_secret` lets an identifier's value be (`rawId`), never a session's or a key's."""
    value = _random_b64(43, 25)
    assert redactor.redact(f'"{key}": "{value}",').text == f'"{key}": "[REDACTED:{label}]",'


def test_a_json_web_keys_public_members_survive_and_its_private_one_does_not(redactor):
    x, y, d = _random_b64(43, 26), _random_b64(43, 27), _random_b64(43, 28)
    public = f'const jwk = {{\n  kty: "EC",\n  crv: "P-256",\n  x: "{x}",\n  y: "{y}",\n}};'
    assert redactor.redact(public).text == public
    rsa = '{"kty": "RSA", "n": "%s", "e": "AQAB", "x5t#S256": "%s"}' % (_random_b64(683, 29), x)   # 4096 bits
    assert redactor.redact(rsa).text == rsa
    private = '{"kty": "EC", "crv": "P-256", "x": "%s", "y": "%s", "d": "%s"}' % (x, y, d)
    assert redactor.redact(private).text == private.replace(d, "[REDACTED:secret]")
    assert redactor.redact(f'point = {{"x": "{x}"}}').text == 'point = {"x": "[REDACTED:secret]"}'


def test_a_keyless_finding_is_never_remembered(tmp_path):
    """A value only `quoted-high-entropy` found is removed where it stands, but no later text loses
    it: with no key to show for it, it is too weak a reason to erase it everywhere."""
    r = Redactor(tmp_path / "secrets")
    v = _random_b64(48, 12)
    assert r.redact(f'client = Client("{v}")').text == 'client = Client("[REDACTED:secret]")'
    assert r.redact(f"the id {v} again").text == f"the id {v} again"
    assert r.memory.count() == 0


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("text", [
    '"integrity": "sha512-' + _random_b64(86, 3) + '=="',                 # a lockfile hash: `-` early (the pattern)
    '"integrity": "' + _random_b64(86, 3) + '=="',                        # the key says it is a checksum
    '"src/app9/Kz/9fQvX2mLbT7wRy4NcHdPa3"',                              # a relative path (`_PATH_SEGMENTS`)
    'export const USDC_MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";',  # base58: an address
    '{"sha": "9fceb02d0ae598e95dc970b74767f19372d61af8"}',                # no upper case
    '{"id": "3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b"}',                      # a UUID: `-` early (the pattern)
    'PosixPath("/private/var/folders/x8/Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY/T/pytest-3")',  # `/` first (the pattern)
    'public_key = "' + _random_b64(44, 4) + '"',                          # the key says it is public
    'fake_token: "' + _random_b64(44, 5) + '"',                           # ... or not real
    '"rawId": "' + _random_b64(43, 24) + '",',                            # ... or an identifier
    "public_key = b'" + _random_b64(44, 15) + "'",                        # ... behind a string prefix
    '<meta name="csrf-token" content="' + _random_b64(56, 13) + '">',     # a page's metadata
    '<META property="og:x"\n  content=\\"' + _random_b64(56, 14) + '\\">',  # ... JSON-escaped, any case
    'registry.get("thisIsAVeryLongCamelCaseHandlerName2024")',            # words: low entropy
    '"' + _random_b64(140, 6) + '"',                                     # longer than a key: a blob
    _random_b64(48, 7),                                                  # not quoted: no finding
    'const README_B64 = "' + _b64(b"# Acme Web\n\nA small storefront built with Next.js.\n") + '";',  # encoded text
    'payload = "' + _b64(b"name,qty,price\nwidget,4,9.99\ngadget,1,24.50\n") + '"',        # ... a CSV
])
def test_quoted_strings_that_are_no_secret_survive(redactor, text):
    assert redactor.redact(text).findings == []


@pytest.mark.parametrize("raw", [
    b"deploy:" + _random_b64(24, 21).encode(),                                 # user:password
    b"# staging env\nDB_PASSWORD=" + _random_b64(18, 22).encode() + b"\n",         # an env file
    b"Authorization header for the staging api " + _random_b64(20, 23).encode(),  # a credential word
])
def test_encoded_credentials_are_no_encoded_text(redactor, raw):
    """`shapes.encoded_text` exempts encoded content, never an encoded credential: the same
    quoted base64 that survives as a README is redacted when it decodes to one."""
    value = _b64(raw)
    assert redactor.redact(f'const BLOB = "{value}";').text == 'const BLOB = "[REDACTED:secret]";'


def test_every_rule_kind_has_a_handler_and_one_recognizer():
    """A rule whose kind no recognizer category holds would match and be dropped unseen; one that
    two categories hold would be reported twice."""
    from collections import Counter

    from reverie.redact.engine import CATEGORIES
    from reverie.redact.handlers import HANDLERS
    from reverie.redact.rules import RULES

    kinds = {r.kind for r in RULES}
    held = Counter(k for ks in CATEGORIES.values() for k in ks)
    assert (kinds - set(HANDLERS), {k for k in kinds if held[k] != 1}) == (set(), set())
    # the named categories are written by hand (ASSIGNMENT takes the rest): none names a kind twice
    # or a kind no handler has
    from reverie.redact.engine import _NAMED_CATEGORIES
    named = Counter(k for ks in _NAMED_CATEGORIES.values() for k in ks)
    assert ({k for k, n in named.items() if n > 1}, set(named) - set(HANDLERS)) == (set(), set())


def test_the_stateful_kinds_are_the_handlers_that_take_state():
    """A handler's `state` comes from the scanner only for these kinds: a handler that wants one and
    is not listed would raise on every match (its whole match then redacted)."""
    from reverie.redact.handlers import STATEFUL_KINDS

    assert STATEFUL_KINDS == {"values_after", "userlist", "k8s", "table", "cracked"}


def test_loosen_keeps_a_superset():
    import re2

    from reverie.redact.prefilter import loosen

    assert loosen(r"\b(ghp_[0-9A-Za-z]{36,})", 1) == r"\b(ghp_[0-9A-Za-z]+)"
    assert loosen(r"x{0,2}y{3}[{}]{2,5}\{1\}", 1) == r"x*y+[{}]+\{1\}"
    assert loosen(r"v{8,}w{2,4}", 6) == r"v{6,}w{2,}"
    for pattern, text in [(r"AKIA[A-Z2-7]{16}", "AKIA" + "B" * 16), (r"a{3}b{0,2}", "aaab")]:
        assert re2.search(loosen(pattern, 1), text) and re2.search(pattern, text)


def test_provider_rules_follow_documented_formats(redactor):
    def found(text: str) -> list[str]:
        return [f.rule for f in redactor.redact(text).findings]

    body20, body25 = rand(20, ALNUM + "_-"), rand(25, ALNUM + "_-")
    # GitLab: exact lengths where GitLab documents one, and the token must end there
    assert found(f"glimt-{body25} in the mail") == ["gitlab-token"]
    assert found(f"glimt-{body25}x in the mail") == []
    assert found(f"glptt-{rand(40, HEX)}") == ["gitlab-token"]
    assert found(f"glptt-{rand(38, HEX)}") == []
    assert found(f"glsoat-{body20}") == ["gitlab-token"]
    # OpenAI keys carry "T3BlbkFJ"; a scoped prefix (sk-proj-, sk-admin-, sk-svcacct-) is enough
    # alone for a random body of 32 characters or more (issue 14: the docs promise no length), not
    # for a shorter one or words
    assert found(f"use {OPENAI} now") == ["openai-key"]
    assert found("sk-proj-" + rand(48)) == ["openai-scoped-key"]
    assert found("sk-proj-" + rand(24)) == []
    assert found("sk-admin-" + rand(140, ALNUM + "_-")) == ["openai-scoped-key"]
    assert found("see sk-proj-settings-page-for-the-organisation-admins") == []
    # a JWT's header decodes to a JSON object
    assert found(f"token {JWT}") == ["jwt"]
    assert found("eyJhbGciOieeeiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIx" + rand(30) + "." + rand(43)) == []
    # Sidekiq gem credentials, Telegram bot tokens with their bounds
    assert redactor.redact_text("export BUNDLE_GEMS__CONTRIBSYS__COM=cafe0123:beef4567") == (
        "export BUNDLE_GEMS__CONTRIBSYS__COM=[REDACTED:sidekiq_secret]")
    bot = f"{RNG.randrange(10**8, 10**9)}:A" + rand(34, ALNUM + "_-")
    assert found(f"telegram bot {bot} ok") == ["telegram-bot-token-ctx"]
    assert found('telegram schema type="clm95552:AgencyIdentificationCodeContentType"') == []


def test_documentation_examples_and_masks_are_not_findings(redactor):
    text = (
        "GOOGLE_MAPS=AIzaSyabcdefghijklmnopqrstuvwxyz1234567\n"           # typed alphabet: an example
        '"token4": "xoxp-572370529330-573807301142-572331691188-####################"\n'  # masked
        "db-password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BCB=,tag:KkQfh6Oy==,type:str]\n"  # SOPS
        '<entry key="jetbrains.mps.v8_elimination" value="executed" />\n'   # a name made of words
        "minisat-master-keying:x64-uwp=fail\n"                              # not a master key
        "kind: Secret\ndata:\n  htpasswd: {{ htpasswd }}\n---\nkind: ReplicationController\n"
    )
    assert_kept(redactor, text)


def test_typed_sequence_password_is_redacted_but_not_learned(tmp_path):
    r = Redactor(tmp_path / "s")
    weak = "abcdefghij12"
    out = r.redact(f"DB_PASSWORD={weak}\nthen psql with {weak}")
    assert out.text == "DB_PASSWORD=[REDACTED:password]\nthen psql with [REDACTED:remembered]"
    assert out.learned == 0 and r.memory.count() == 0


def test_access_key_ids_and_provider_ids(redactor):
    key_id = rand(32, HEX)
    assert redactor.redact_text(f"access_key_id = {key_id}") == "access_key_id = [REDACTED:api_key]"
    assert redactor.redact_text(f'["access_key_id"] = \'{key_id}\'') == '["access_key_id"] = \'[REDACTED:api_key]\''
    assert redactor.redact_text(f'const MessageBirdClientID = "{key_id}"') == (
        'const MessageBirdClientID = "[REDACTED:token]"')
    # other *_id keys stay metadata
    assert redactor.redact(f"key_id = {key_id}\nuser_id = {key_id}").findings == []


# --- unmistakable slots: redacted even with a placeholder body, never remembered -------------------

ARTIFACTORY_KEY = "AKCp" + rand(69)
ARTIFACTORY_PASSWORD = "AP3" + rand(44)
TWILIO_SID = "AC" + rand(32, HEX)
CLOUDANT_KEY = rand(24, string.ascii_lowercase)


def test_artifactory_keys_and_encrypted_passwords(redactor):
    text = (
        f'curl -H "X-JFrog-Art-Api: {ARTIFACTORY_KEY}" https://acme.jfrog.io/artifactory/api/repositories\n'
        f"<password>{ARTIFACTORY_PASSWORD}</password>\n"
        "# docs: set X-JFrog-Art-Api: AKCxxxxxxxxxx or artifactory:_password=AP6xxxxxxxxxx\n"
        "testAKCwithinsomeirrelevantstring artifactory:_password=AP6xxxxxx\n"
    )
    assert redactor.redact_text(text) == (
        'curl -H "X-JFrog-Art-Api: [REDACTED:artifactory_key]" https://acme.jfrog.io/artifactory/api/repositories\n'
        "<password>[REDACTED:artifactory_key]</password>\n"
        "# docs: set X-JFrog-Art-Api: [REDACTED:artifactory_key] or artifactory:_password=[REDACTED:artifactory_key]\n"
        "testAKCwithinsomeirrelevantstring artifactory:_password=AP6xxxxxx\n"
    )
    # inside a base64 blob `/AP3...` is chance, not a JFrog password
    blob = rand(30, ALNUM + "+/") + "/AP3" + rand(20) + "+" + rand(30, ALNUM + "+/")
    assert redactor.redact(f"image data: {blob}").findings == []


def test_twilio_slack_npm_placeholders_in_their_own_slots(redactor):
    text = (
        f"TWILIO_ACCOUNT_SID={TWILIO_SID}\n"
        "# from the Twilio docs: client = Client('ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', auth_token)\n"
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx\n"
        "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=npm_xxxxxxxxxxx\n"
    )
    assert redactor.redact_text(text) == (
        "TWILIO_ACCOUNT_SID=[REDACTED:twilio_key]\n"
        "# from the Twilio docs: client = Client('[REDACTED:twilio_key]', auth_token)\n"
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/[REDACTED:webhook]\n"
        "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=[REDACTED:npm_token]\n"
    )


def test_slack_tokens_with_digit_groups_and_webhook_paths(redactor):
    team, user, bot = "5" + "1" * 8, "3" + "1" * 10, "3" + "1" * 12
    legacy = f"xoxa-2-{team}-{user}-{bot}-{rand(18, HEX)}"
    upper = string.ascii_uppercase + string.digits
    hook = f"T{rand(8, upper)}/B{rand(10, upper)}/{rand(24)}"
    text = (
        f'{{"ok": true, "access_token": "{legacy}", "scope": "identify,bot"}}\n'
        f"curl -X POST -d '{{\"text\": \"deployed\"}}' https://hooks.slack.com/services/{hook}\n"
    )
    assert redactor.redact_text(text) == (
        '{"ok": true, "access_token": "[REDACTED:slack_token]", "scope": "identify,bot"}\n'
        "curl -X POST -d '{\"text\": \"deployed\"}' https://hooks.slack.com/services/[REDACTED:webhook]\n"
    )


def test_a_webhook_path_learned_once_is_removed_alone(tmp_path):
    upper = string.ascii_uppercase + string.digits
    hook = f"T{rand(8, upper)}/B{rand(10, upper)}/{rand(24)}"
    red = Redactor(tmp_path / "secrets")
    red.redact(f"curl -X POST https://hooks.slack.com/services/{hook}")
    later = f"the part of the webhook after /services/ reads {hook} (from the team wiki)"
    assert red.redact_text(later) == "the part of the webhook after /services/ reads [REDACTED:remembered] (from the team wiki)"


def test_a_private_key_flattened_onto_one_line_is_removed_whole(redactor):
    """`echo $KEY` without quotes prints the key on one line; a clipped tool result has no END line."""
    lines = [rand(64, ALNUM + "+/") for _ in range(6)]
    flat = "$ echo $DEPLOY_KEY\n-----BEGIN RSA PRIVATE KEY----- " + " ".join(lines) + " ...[clipped]"
    out = redactor.redact_text(flat)
    assert out == "$ echo $DEPLOY_KEY\n[REDACTED:private_key] ...[clipped]"
    spaced = "-----BEGIN RSA PRIVATE KEY-----  " + "".join(lines)
    assert redactor.redact_text(spaced) == "[REDACTED:private_key]"


def test_private_key_block_with_any_body(redactor):
    text = "some text here\n-----BEGIN PRIVATE KEY-----\nyabba dabba doo"
    out = redactor.redact(text)
    assert out.text == "some text here\n[REDACTED:private_key]"
    assert [(f.type, f.rule) for f in out.findings] == [("private_key", "private-key-block")]
    # JSON-escaped newline (a tool result stored as a JSON string), a truncated example body
    escaped = '{"content": "-----BEGIN RSA PRIVATE KEY-----\\nMIIE...\\n-----END RSA PRIVATE KEY-----"}'
    assert redactor.redact_text(escaped) == '{"content": "[REDACTED:private_key]\\n-----END RSA PRIVATE KEY-----"}'
    # code that handles keys, and prose that names the header, keep their text
    code = (
        'if line.strip() == "-----BEGIN PRIVATE KEY-----":\n'
        'pem = "-----BEGIN PRIVATE KEY-----\\n" + body + "\\n-----END PRIVATE KEY-----\\n"\n'
        'pem = f"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----"\n'
        "-----BEGIN PRIVATE KEY-----\n$PRIVATE_KEY\n"
        "A key file starts with -----BEGIN PRIVATE KEY----- and ends with the END line.\n"
    )
    assert_kept(redactor, code)


def test_passphrases_of_several_words_after_a_password_key(redactor):
    text = (
        'password = "correct horse battery staple"\n'
        "db:\n  admin_password: 'open sesame please'\n"
        '{"newPassword": "tr0ub4dor and 3", "passwordConfirm": "tr0ub4dor and 3"}\n'
        'my_password_super_secure = "value with quotes and spaces"\n'
        "api_key: 'value with quotes and spaces'\n"
        'SECRET_KEY = "not so secret words"\n'
    )
    assert redactor.redact_text(text) == (
        'password = "[REDACTED:password]"\n'
        "db:\n  admin_password: '[REDACTED:password]'\n"
        '{"newPassword": "[REDACTED:password]", "passwordConfirm": "[REDACTED:password]"}\n'
        'my_password_super_secure = "[REDACTED:password]"\n'
        "api_key: '[REDACTED:password]'\n"
        'SECRET_KEY = "[REDACTED:password]"\n'
    )


def test_sentences_about_passwords_are_not_passphrases(redactor):
    text = (
        'password_error = "Too short, try again"\n'
        'PASSWORD_TOO_SHORT = "Must be at least 8 characters"\n'
        'someotherpassword = "doesnt start right"\n'
        'secret_name: "db creds for staging"\n'
        'password = "%s %s" % (user, pw)\n'
        'password = "${DB_USER} ${DB_PASS}"\n'
        'password: "<your password here>"\n'
        'if password == "two words":\n'
        "the password reset flow sends a link; the secret: keep it short\n"
        'label = "Password" placeholder = "Enter a password"\n'
    )
    assert_kept(redactor, text)


def test_cloudant_and_aws_secret_slots(redactor):
    text = (
        f'cloudant_api_key = "{CLOUDANT_KEY}"\n'
        'cloudant_key = "abcdefghijabcdefghijabcd"\n'
        'aws_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9Tq2Xa7k"\n'
        'aws_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'   # AWS's documented example: public
        'aws_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYa"\n'
    )
    assert redactor.redact_text(text) == (
        'cloudant_api_key = "[REDACTED:cloudant_key]"\n'
        'cloudant_key = "[REDACTED:cloudant_key]"\n'
        'aws_access_key = "[REDACTED:aws_secret_key]"\n'
        'aws_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'
        'aws_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYa"\n'
    )


def test_placeholders_in_unmistakable_slots_are_redacted_but_never_remembered(tmp_path):
    r = Redactor(tmp_path / "s")
    placeholders = [
        "AKCxxxxxxxxxx", "AP6xxxxxxxxxx", "ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "npm_xxxxxxxxxxx",
        "services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx", "abcdefghijabcdefghijabcd",
        "xoxb-123456789012-123456789012-xxxxxxxxxxxxxxxxxxxxxxxx",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYxxxxxxxxxx", "value with quotes and spaces",
    ]
    text = (
        "X-JFrog-Art-Api: AKCxxxxxxxxxx\nartifactory:_password=AP6xxxxxxxxxx\n"
        "TWILIO_ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n//registry.npmjs.org/:_authToken=npm_xxxxxxxxxxx\n"
        "https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx\n"
        "SLACK_BOT_TOKEN=xoxb-123456789012-123456789012-xxxxxxxxxxxxxxxxxxxxxxxx\n"
        'cloudant_key = "abcdefghijabcdefghijabcd"\n'
        'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYxxxxxxxxxx"\n'
        'password = "value with quotes and spaces"\n'
        "-----BEGIN PRIVATE KEY-----\nyabba dabba doo\n"
    )
    out = r.redact(text)
    assert out.text == (
        "X-JFrog-Art-Api: [REDACTED:artifactory_key]\nartifactory:_password=[REDACTED:artifactory_key]\n"
        "TWILIO_ACCOUNT_SID=[REDACTED:twilio_key]\n//registry.npmjs.org/:_authToken=[REDACTED:npm_token]\n"
        "https://hooks.slack.com/services/[REDACTED:webhook]\n"
        "SLACK_BOT_TOKEN=[REDACTED:slack_token]\n"
        'cloudant_key = "[REDACTED:cloudant_key]"\n'
        'aws_secret_access_key = "[REDACTED:aws_secret_key]"\n'
        'password = "[REDACTED:password]"\n'
        "[REDACTED:private_key]\n"
    )
    assert (out.learned, r.memory.count()) == (0, 0)
    # nothing was learned, so the same placeholders elsewhere, with no slot around them, stay
    prose = "the docs write " + ", ".join(placeholders)
    assert r.memory.scrub(prose) == (prose, 0)
    # the same rules on real values do remember them (the contrast that makes the test able to fail)
    real = r.redact(f"X-JFrog-Art-Api: {ARTIFACTORY_PASSWORD}\nTWILIO_ACCOUNT_SID={TWILIO_SID}\n")
    assert real.text == "X-JFrog-Art-Api: [REDACTED:artifactory_key]\nTWILIO_ACCOUNT_SID=[REDACTED:twilio_key]\n"
    assert (real.learned, r.memory.count()) == (2, 2)
    assert r.memory.scrub(f"later: {TWILIO_SID} alone") == ("later: [REDACTED:remembered] alone", 1)


def test_passphrase_keys_in_every_case_style(redactor):
    text = (
        'Password = "open sesame now"\n'                 # a C# property
        '{"clientApiKey": "two words here"}\n'
        "DB-PASSWORD: 'horse battery staple'\n"
        'export PASSPHRASE="correct horse battery"\n'
    )
    assert redactor.redact_text(text) == (
        'Password = "[REDACTED:password]"\n'
        '{"clientApiKey": "[REDACTED:password]"}\n'
        "DB-PASSWORD: '[REDACTED:password]'\n"
        'export PASSPHRASE="[REDACTED:password]"\n'
    )


def test_artifactory_prefixes_need_a_long_random_body(redactor):
    text = "part AP1234567890 shipped, batch APB2024112900123, AKC registration AKC12345678\n"
    assert_kept(redactor, text)


def test_anthropic_keys_of_every_kind_and_length_but_not_placeholders(redactor):
    """api03 keys (93 characters and AA), admin and OAuth tokens and shorter older keys all go;
    an `sk-ant-` value that is a placeholder stays."""
    admin = "sk-ant-admin01-" + rand(40, ALNUM + "_-")
    short = "sk-ant-api03-" + rand(48, ALNUM)
    oauth = "sk-ant-oat01-" + rand(60, ALNUM + "_-")
    text = f"keys: {ANTHROPIC}, {admin} and {short}; token {oauth}."
    assert redactor.redact(text).text == ("keys: [REDACTED:anthropic_key], [REDACTED:anthropic_key] and "
                                          "[REDACTED:anthropic_key]; token [REDACTED:anthropic_key].")
    for placeholder in ("sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-ant-api03-your-key-here-placeholder-value"):
        assert redactor.redact(f"export ANTHROPIC_KEY_EXAMPLE={placeholder}").text.endswith(placeholder)


def test_an_anthropic_key_in_its_whole_documented_form_goes_whatever_its_body(redactor):
    """`sk-ant-api03-` or `sk-ant-admin01-`, 93 characters, then `AA`: an unmistakable slot, so a
    body that reads as a placeholder (`abc123xyz`, `klmnop`) goes too; the same body in any other
    form (another ending, another length) is the placeholder it looks like and stays."""
    body = ("abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-" * 2)[:93]
    for prefix in ("sk-ant-api03-", "sk-ant-admin01-"):
        got = redactor.redact(f'ANTHROPIC_API_KEY="{prefix}{body}AA"')
        assert (got.text, [f.rule for f in got.findings]) == (
            'ANTHROPIC_API_KEY="[REDACTED:anthropic_key]"', ["anthropic-key-exact"])
        for kept in (f"{prefix}{body}BB", f"{prefix}{body[:80]}AA", f"{prefix}{body}AAx"):
            assert redactor.redact(f"see {kept} in the docs").findings == []
