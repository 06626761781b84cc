"""Code is no secret: a credential-named parameter's type, a lexer comparing tokens, a filter's
pass band, a class named after a token, a sentinel name. Library code that an agent reads (typeshed
stubs, scipy, pygments, moto) is full of them, and redacting one also redacts every other place the
same text holds it. Each shape is tested with the secret beside it that must still go."""

from __future__ import annotations

import pytest



KEPT = [
    # a parameter's or a field's type, a union, a default
    "def RegDeleteKey(key: PyHKEY, subKey: str, /) -> None: ...\n",
    "        password: _PasswordType | None = None,\n",
    "    password: bytes | None = None,\n",
    "TLSAUTH_PASSWORD: Final = 10105\n",
    "def prepare_star(next: _Next, token: _Token) -> _Callback: ...\n",
    "class Stub:\n    token: Incomplete\n    auth: Incomplete\n",
    "    key = list(self.keys())[0]\n",
    # a lexer's comparisons and names
    '        if token == "#begin":\n            pass\n        elif token.value == "import":\n',
    '    "input_token": "NextToken",\n    "output_token": "nextPageToken",\n',
    "    token_cls = JWTToken\n    private_key: x25519.X25519PrivateKey\n",
    'MovedAttribute("HTTPPasswordMgr", "urllib2", "urllib.request"),\n',
    '        token_placement="auth_header",\n',
    # a filter's pass band, the verb of code
    "taps = firwin(ntaps, pass_zero='lowpass', **kwargs)\nbtype : {'lowpass', 'highpass', 'bandpass', 'bandstop'}\n",
    "@click.pass_context\ndef cli(ctx):\n    pass_context = ctx.obj\n",
    # a sentinel's name; a name given to itself
    "    ROOT_KEY = '__root__'\n",
    "        self._authkey = authkey\n",
    '    ExtendedKeyUsageOID.SERVER_AUTH: "serverAuth",\n    AttributeOID.CHALLENGE_PASSWORD: "challengePassword",\n',
    # an expression, a markdown token's fields, a syntax theme's colours
    "PseudoToken = Whitespace + group(PseudoExtras, Number, Funny, ContStr, Name)\n",
    'token.markup = "linkify"\ntoken.info = "auto"\n',
    '    styles = {\n        Token: "#d4d4d4",\n        Token.Keyword: "bold #569cd6",\n    }\n',
    # an SDK's tables: paginators, a beta header, a policy's name as a mapping's key, resource types
    '    "anthropic-beta": "files-api-2025-04-14",\n',
    '    "ELBSecurityPolicy-TLS13-1-2-2021-06": {\n        "name": "ELBSecurityPolicy-TLS13-1-2-2021-06",\n',
    '    "AWS::KMS::Key": "2b8c4e1f9a7d3c55",\n    "AWS::ApiGateway::ApiKey": "48f1c2d3e4a5b6a3",\n',
    # Lua's method call; a prefix and an ellipsis for the value left out
    'local token = auth:match("^Bearer%s+(.+)$")\n',
    "ANTHROPIC_API_KEY=sk-ant-...\nGITHUB_TOKEN=ghp_\u2026\n",
    # getters, finders and functions named for a secret take a name or a prompt; a key's setter sets
    # a cache's, a message's, an object's key; tape's `t.pass` takes a message
    'tok = vault.read_secret("ci/github-prod")\npassword = getpass.getpass("Database password: ")\n',
    'expect(token("IDENT_NAME"))\nt.pass("should parse the password field");\n',
    'cache.setKey("session:user:8f3a2b1c")\nMessageBuilder.withPayload(p).setKey("order-8f3a2b1c9d")\n'
    'PutObjectRequest.builder().bucket("acme").key("cache-7f3a9b2c1d4e5f60").build()\n',
    'tokens.useToken("spacing.4xl")\ndoc.setAuth("Bearer realm=api")\n',
    # literals joined over lines that hold no secret
    'help_token = ("token_help_"\n    "text_here")\nTOKEN_URL = ("https://example.com/"\n    "oauth/token")\n',
]


@pytest.mark.parametrize("text", KEPT)
def test_code_that_names_a_credential_stays(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


FOUND = [
    # the same slots, holding a secret
    ('if password == "{}":\n    grant()\n', "Tr0ub4dor&3x", "password"),
    ("SMTP_PASS={}\n", "Tr0ub4dor-3x", "password"),
    ("PASS_PHRASE: {}\n", "Tr0ub4dor-3x", "password"),
    ('token = "{}"\n', "ghx9f8d7s6a5Ld4f3g2h1j0kq", "token"),
    ('<add key="ClearTextPassword" value="{}" />', "TestSourcePassword", "password"),
    ("password: {}\n", "Summer-Rain-2024", "password"),
    # a setter's and a builder's literal
    ('    d.setPassword("{}")\n', "KKmVI5NibRFfQ30Zsi", "password"),
    ('client = Builder().apiKey("{}").build()\n', "Xq7Lm2Rt9Vw4Yz8Bc1Nd5Pf", "api_key"),
    # a Keycloak credential's representation: a `type` field names it
    ('"credentials":[{{"type":"password","value":"{}","temporary":false}}]', "Rep0rting!Svc#2025", "password"),
    # RabbitMQ's Erlang cookie
    ("rabbitmq:\n  auth:\n    erlangCookie: {}\n", "4CMLK5BTOHONIZTECWEI", "secret"),
    # a setter's other syntaxes: PHP's `->`, a char array, C#'s verbatim string; a token's setter
    ("$client = Client::builder()->apiKey('{}')->build();\n", "Xq7Lm2Rt9Vw4Yz8Bc1Nd5Pf", "api_key"),
    ('ds.setPassword("{}".toCharArray());\n', "Kx9mPq2vLr7Tz", "password"),
    ('ds.setPassword(@"{}");\n', "Kx9mPq2vLr7Tz", "password"),
    ('cfg.setToken("{}")\n', "ghx9f8d7s6a5Ld4f3g2h1j0kqZ", "token"),
    # AWS SSM's SecureString; a real value that an ellipsis follows; a password shaped like a Lua call
    ('{{"Name": "/prod/db/password", "Type": "SecureString", "Value": "{}", "Version": 3}}', "Kx9mPq2vLr7Tz!", "secret"),
    ("I set DB_PASSWORD={}... and it still fails\n", "Xk9mPq2vLr7Tz", "password"),
    ("DB_PASSWORD={}\n", "admin:secret(2024)", "password"),
    ('{{"password" :"{}"}}', "Tr0ub4dor2024", "password"),
    # secrets whose keys name a signing secret, a passphrase, a salt of a hash
    ("WEBHOOK_SIGNING_KEY = \"{}\"\n", "8C1E4A7F2B9D3E60", "api_key"),
    ("GPG_PASSPHRASE={}\n", "7F3A9C2E", "password"),
    ('hashed_secret_salt = "{}"\n', "Kp9zQ2xLm7vWn4Tb", "secret"),
]


@pytest.mark.parametrize("template,secret,label", FOUND)
def test_a_secret_in_the_same_slot_goes(redactor, template, secret, label):
    out = redactor.redact(template.format(secret))
    assert out.text == template.format(f"[REDACTED:{label}]")


@pytest.mark.parametrize("template,parts", [
    # Python's implicit concatenation in parentheses; Java's `+` over two lines
    ('ALGOLIA_ADMIN_KEY = (\n    "{}"\n    "{}"\n    "{}"\n)\n', ("bca6bf17816804ee", "ec168fec957cccd2", "a1b2c3d4")),
    ('MAPBOX_TOKEN = ("{}"\n                "{}")\n', ("sk.eyJ1IjoiYWNtZS1tYXBz", "epmEgFMRPbeR1JrgTChes8.1YZ")),
    ('String apiKey = "{}" +\n    "{}";\n', ("AbCdEf123456", "GhIjKl789012")),
    # any characters, a comment before the break, Python's bytes, a short last part
    ('DB_PASSWORD = ("{}"\n  "{}")\n', ("Tr0ub4dor&3", "Xq!horse#7")),
    ('API_KEY = (b"{}"  # part one\n    b"{}"\n    b"{}")\n', ("bca6bf17816804ee", "ec168fec957cccd2", "a1")),
    ('String apiKey = "{}" +\n    "{}" + "{}";\n', ("AbCdEf123456", "GhIjKl789012", "Mn3")),
])
def test_a_value_split_over_literals_goes_whole(redactor, template, parts):
    out = redactor.redact(template.format(*parts))
    assert out.text == template.format(*(["[REDACTED:" + out.findings[0].type + "]"] * len(parts)))
    assert not any(p in out.text for p in parts)


def test_the_rest_of_a_value_a_terminal_wrapped_goes_and_a_next_line_of_words_stays(redactor):
    key = "xai-" + "qbOpy8GWoPKVFjtk2n4y6s4WHplr20hGcoHGGWDuAQq8tW3F0xx3lqbeZ9tAuzU1"
    text = f"XAI_API_KEY={key}\nVKDiFjoFzrrNsWY9\nLOG_LEVEL=debug\n"
    assert redactor.redact(text).text == "XAI_API_KEY=[REDACTED:api_key]\n[REDACTED:api_key]\nLOG_LEVEL=debug\n"
    text = f"XAI_API_KEY={key}\ndone\n"
    assert redactor.redact(text).text == "XAI_API_KEY=[REDACTED:api_key]\ndone\n"
    # up to a connection string's next pair, base64's padding kept
    text = ("DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;AccountName=stmedia01;AccountKey="
            "HhN5lEiPIVW3vkZ+d+uOgme3uTrZ2Z2cvGySM7\nNlUJMq358D2JWxXeyeZopaN3BwBHbeA9T2Yr7xfnSlvnUbpA==;BlobEndpoint=x\n")
    assert redactor.redact(text).text == ("DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;AccountName="
                                          "stmedia01;AccountKey=[REDACTED:api_key]\n[REDACTED:api_key];BlobEndpoint=x\n")
    # a next command after a long line is no rest: a word, a version, another encoding's symbol
    key = "sk-proj-Zq8Xv2Lm9Rt4Wp7Yc3Kd5Nf6Hb1Jg0Qs8Tu2Vw4Xy6Za"
    for after in ("python3", "step-2", "HTTP/1.1"):
        text = f"$ export OPENAI_API_KEY={key}\n{after}\n"
        assert redactor.redact(text).text == f"$ export OPENAI_API_KEY=[REDACTED:openai_key]\n{after}\n"
    # lines that fill the terminal's width go on; the last one may be short
    part = "Zq8Xv2Lm9Rt4Wp7Yc3Kd5Nf6Hb1Jg0Qs8Tu2Vw4Xy6ZaQ1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHhJjKk"[:80]
    first = "TOKEN=ghp_" + part[:70]
    text = f"{first}\n{part}\nx9Q\ndone\n"
    assert redactor.redact(text).text == "TOKEN=[REDACTED:github_token]\n[REDACTED:github_token]\n[REDACTED:github_token]\ndone\n"
    # a dump's lines of one width are none of a value's
    rows = "\n".join(("%064X" % (0x9E3779B97F4A7C15F39CC0605CEDC8341082276BF3A27251F86C6A11D0C18E95 * k))[-64:]
                     for k in range(1, 21))
    text = "token: EAAC3481FC612665CA112D3F889A0E5B7843EFFCEFACA24A01B6AC2B7DDE02F4\n" + rows + "\n"
    assert rows in redactor.redact(text).text
    # a short line is no terminal's wrap
    text = "TOKEN=Zq8Xv2Lm9Rt4Wp7Yc3\nB7c9D2e4F6\n"
    assert redactor.redact(text).text == "TOKEN=[REDACTED:token]\nB7c9D2e4F6\n"
