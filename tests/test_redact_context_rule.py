"""The credential-context rule (redact.shapes, "CREDENTIAL CONTEXTS"), tested both ways: a value in
a secret-named context is redacted unless it is clearly not a secret. Each exception the module
docstring names has a case that stays, next to a redacted counterpart of the same shape. Values
that look like credentials are generated at run time (tests/secret_values.py)."""

from __future__ import annotations

import random

import pytest
from secret_values import generators

from reverie.redact import shapes

RNG = random.Random(1414)
rand, pw = generators(RNG)


# --- redacted by default: "looks like words" is no exception ---------------------------------

REDACTED = [
    # (input, expected output)
    ("DB_PASSWORD=correct-horse-battery\n", "DB_PASSWORD=[REDACTED:password]\n"),
    ("DB_PASSWORD=hunter2-Xq9-Mv77\n", "DB_PASSWORD=[REDACTED:password]\n"),
    ('DB_PASSWORD="hunter2-Xq9-Mv77"\n', 'DB_PASSWORD="[REDACTED:password]"\n'),
    ("password: correct-horse-battery\n", "password: [REDACTED:password]\n"),
    ("  POSTGRES_PASSWORD: sunflower\n", "  POSTGRES_PASSWORD: [REDACTED:password]\n"),
    ("SECRET_KEY=jetbrains-mps-elimination\n", "SECRET_KEY=[REDACTED:secret]\n"),
    ("api_token: struct_X509_pubkey\n", "api_token: [REDACTED:token]\n"),
    ("<password>dolphins</password>", "<password>[REDACTED:password]</password>"),
    ("mysql -uroot -pcorrect-horse app", "mysql -uroot -p[REDACTED:password] app"),
    ("Server=db;Database=app;User Id=sa;Password=Tr0ub4dor&3;", "Server=db;Database=app;User Id=sa;Password=[REDACTED:password];"),
    ("psql postgres://app:sunflower-42@db:5432/app", "psql postgres://app:[REDACTED:password]@db:5432/app"),
    ("--password correct-horse-battery", "--password [REDACTED:password]"),
    ("PIN_PASSWORD=482913", "PIN_PASSWORD=[REDACTED:password]"),
    ('const password = "dbPassword";', 'const password = "[REDACTED:password]";'),  # quoted: a literal
    ("secret: Sup3r.Secr3t", "secret: [REDACTED:secret]"),                        # no attribute path
    ("DB_PASSWORD=abcdefghij12", "DB_PASSWORD=[REDACTED:password]"),              # weak, still a password
    # a key named auth is a credential context, with a provider's name too; a provider name alone
    # takes a random token (the typed sequence next to it in KEPT stays)
    ("square_oauth = sq0csp-ABCDEFGHIJK_LMNOPQRSTUVWXYZ-0123456789", "square_oauth = [REDACTED:token]"),
    ("GITHUB_OAUTH=hunter2-Xq9-Mv77", "GITHUB_OAUTH=[REDACTED:token]"),
    (f"meraki: {rand(40)}", "meraki: [REDACTED:token]"),
    # a comma inside a bare value is part of it; one before whitespace or a next `name=` ends it
    ("DB_PASSWORD=P@ss,w0rd!\n", "DB_PASSWORD=[REDACTED:password]\n"),
    ("secret = A,.:-@*?!\n", "secret = [REDACTED:secret]\n"),
    ("password=abc123X,user=bob", "password=[REDACTED:password],user=bob"),
    ("--set auth.password=s3cr3tPW,auth.user=me", "--set auth.password=[REDACTED:password],auth.user=me"),
    ("pw=hunter2-Xq9, next step", "pw=[REDACTED:password], next step"),
    # a pair glued on by a comma is scanned anew: its own secret is found
    ("passwd_file=pw.txt,password=S3cr3tPass9!", "passwd_file=pw.txt,password=[REDACTED:password]"),
    ("token_type=bearer,access_token=Zk8Qp2Lm9Xv4Rt7Wn3", "token_type=bearer,access_token=[REDACTED:token]"),
    ("password=changeme,db_password=Zk8Qp2Lm9Xv4Rt7", "password=changeme,db_password=[REDACTED:password]"),
    # a `;` ends a bare value (a shell's next command)
    ("PASSWORD=Xk29qPz7Lm;echo done", "PASSWORD=[REDACTED:password];echo done"),
]


@pytest.mark.parametrize("text,want", REDACTED, ids=[t.split("=")[0][:24] for t, _ in REDACTED])
def test_values_in_a_credential_context_are_redacted(redactor, text, want):
    assert redactor.redact_text(text) == want


# --- clearly not a secret: each exception of the rule ----------------------------------------

KEPT = [
    # nothing set: a value cannot start with `,` or `=`
    "password :=,", "password := , other", '"max_tokens":4096,"temperature":0',
    # a variable or reference
    "DB_PASSWORD=$DB_PASSWORD", "DB_PASSWORD=${DB_PASSWORD}", "set PASSWORD=%DB_PASSWORD%",
    "password: process.env.DB_PASSWORD", "password = os.environ['DB_PASSWORD']",
    "password = os.getenv('DB_PASSWORD')", "password: {{ .Values.db.password }}",
    "password: <your-password>", "password: !Ref DbPasswordParameter",
    "password: ENC[AES256_GCM,data:Tr0ub4dor,iv:abc=,tag:xyz=,type:str]",
    # a function call, an index or an attribute path
    "password = getPassword()", "token = this.tokenService.current",
    "password = request.form['password']", "$pwd = $_POST[\"password\"];",
    "api_key: config.providers.openai", "SMTP_PASSWORD_HOST=smtp.gmail.com",
    "generateToken = (user) => sign(user)", "api_key_configured: !!process.env.OPENAI_API_KEY",
    # unquoted code names, generic types, arguments
    "connect(host=host, password=db_password)", "{ tokenMint: mint, tokenSymbol: ticker }",
    "let signerAuthLinkTokenObj: SignerAuthLinkToken = body;", "token_a: Pubkey;",
    "deletingWatchedTokenSet: Set<string>;",
    # empty, placeholders, filler, status words
    "DB_PASSWORD=", "DB_PASSWORD=changeme", "API_KEY=your-api-key-here", "API_KEY=xxxxxxxxxxxx",
    "password: '********'", "token: invalid", "password: required", "API_KEY=glc_1111111111111111",
    # the name of a secret, a versioned package
    "    - secretKey: api-key", "notes = io.jsonwebtoken:jjwt-jackson-0.11.2",
    "CLICKHOUSE_KEY_SECRET=CLICKHOUSE_KEY_SECRET:latest",
    # paths and URLs: where the secret is
    "password_file: /run/secrets/db_password", "token: ./tokens/dev.txt",
    # messages
    '"error.password_store_failed": "存储密码失败：{error}"', '"cli.store_password": "是否安全存储密码？"',
    # weaker evidence: prose and an empty shell variable before a command
    "    password: Override the configured username if provided",
    "MYSQL_PWD= mariadb-dump -u root shop",
    # a key that says the value is not real
    "fake_api_key = 'Zx81Qm4Lp9Tt'", "nonMatchingToken := \"Zx81Qm4Lp9Tt\"",
    # a provider's name alone is no credential context: a typed sequence there is a docs example
    "meraki: abdefghjk0123456789mnopqrstuvwx12345678",
    # no value: a password's hash, a size, a credential's file; code: a cmdlet, a bang call
    'users.users.deploy.hashedPassword = "$6$rounds=65536$abcdefgh$' + "Qz7.x/" * 14 + 'Qz";',
    "admin:$apr1$Qx7f3kLm$" + "Zx81Qm4Lp9Tt/.Ab7cD3eF",
    "password:  24 bytes", "LoadCredential=db-password:/run/secrets/db.pass",
    '$cred = Get-Credential -UserName "CONTOSO\\svc-backup"',
    'secret_key_base: System.fetch_env!("SECRET_KEY_BASE")',
    # a label made of a credential's words: a form's, an SDK's error message
    '{"apiKey": "API Key", "token": "Access token"}', "new OpenAI({ apiKey: 'My API Key' })",
    'password: "Your password here"',
    # a PostgreSQL stored hash
    "password = 'md5a1b2c3d4e5f60718293a4b5c6d7e8f90'",
]


@pytest.mark.parametrize("text", KEPT, ids=[t[:30] for t in KEPT])
def test_values_that_are_clearly_not_a_secret_stay(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


def test_rule_functions_agree_with_the_docstring():
    """`context_secret` is the one place of the rule; `quoted` turns a code name into a literal."""
    assert shapes.context_secret("correct-horse-battery")
    assert not shapes.context_secret("correct_horse") and shapes.context_secret("correct_horse", quoted=True)
    assert not shapes.context_secret("db_password", quoted=True)  # the name of a secret, quoted or not
    assert not shapes.context_secret("userPassword") and shapes.context_secret("userPassword", quoted=True)
    assert shapes.context_secret("QzMltKIpOoeMdeR9")          # random mixed case is no code name
    assert not shapes.context_secret("short")                  # under 6 characters
    assert shapes.context_secret(pw()) and not shapes.context_secret("${" + pw() + "}")
    assert "CREDENTIAL CONTEXTS" in shapes.__doc__ and "tests/test_redact_context_rule.py" in shapes.__doc__


def test_passphrase_with_spaces_in_a_secret_context(redactor):
    text = 'DB_PASSWORD="correct horse battery staple"\npassphrase: correct horse battery staple\n'
    assert redactor.redact_text(text) == 'DB_PASSWORD="[REDACTED:password]"\npassphrase: [REDACTED:password]\n'


def test_cli_password_flags(redactor):
    v = pw()
    sonar = rand(40, "0123456789abcdef")
    text = (f"docker login -u me -p {v} registry.example.com\n"
            f"psexec \\\\fileserver -u Administrator -p {v} cmd.exe\n"
            f"sshpass -p '{v}' ssh deploy@host\n"
            f"mvn sonar:sonar -Dsonar.login={sonar}\n"
            f"java -Ddb.password={v} -jar app.jar\n"
            f"keytool -importkeystore -storepass {v}\n")
    assert redactor.redact_text(text) == (
        "docker login -u me -p [REDACTED:password] registry.example.com\n"
        "psexec \\\\fileserver -u Administrator -p [REDACTED:password] cmd.exe\n"
        "sshpass -p '[REDACTED:password]' ssh deploy@host\n"
        "mvn sonar:sonar -Dsonar.login=[REDACTED:token]\n"
        "java -Ddb.password=[REDACTED:password] -jar app.jar\n"
        "keytool -importkeystore -storepass [REDACTED:password]\n")


def test_dash_p_of_other_commands_is_no_password(redactor):
    text = ("mkdir -p src/components\ndocker run -p 8080:80 nginx\nssh -p 2222 me@host\n"
            "git add -p\nmysql -u root -p appdb\necho $PW | docker login --password-stdin registry.example.com\n"
            "date -u +\"%Y-%m-%dT%H:%M:%S\"\n")
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])
