"""Credentials in what APIs, HTTP tools, browsers, templates and SQL emit or store: cookie jars and
cookie exports, WS-Security headers, an OAuth response's long ID token, a HAR form's encoded field
names, Jinja's and Helm's defaults, SQL passphrases and foreign servers, T-SQL's N'' literals, Dart's
gmail(). Each is tested in context, with the near-misses beside it that must stay."""

from __future__ import annotations

import random
import string

import pytest

from secret_values import generators

B62 = string.ascii_letters + string.digits
g, _ = generators(random.Random(2027))


PW = "Xk29-pq!mR7" + g(4)

# (text with {} where the secret goes, the secret, its label, the rule that finds it)
FOUND = [
    ("# Netscape HTTP Cookie File\n#HttpOnly_.example.net\tTRUE\t/\tTRUE\t1724210000\tuser_session\t{}\n",
     g(48, B62 + "-_"), "token", "cookie-jar-line"),
    ('[\n  {{\n    "domain": ".atlassian.net",\n    "httpOnly": true,\n    "name": "tenant.session.token",\n'
     '    "path": "/",\n    "secure": true,\n    "value": "{}"\n  }}\n]', g(120, B62 + "-_"), "token", "cookie-export-value"),
    ('<wsse:UsernameToken><wsse:Username>B2B_0417</wsse:Username>\n<wsse:Password Type="http://docs.oasis-open.org/'
     'wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText">{}</wsse:Password>', g(16), "password",
     "xml-element"),
    ('{{\n  "token_type": "Bearer",\n  "id_token": "{}"\n}}', "eyJ" + g(600, B62 + "-_") + ".eyJ" + g(480, B62 + "-_"),
     "token", "assignment"),
    ('{{ "name": "user%5Bpassword%5D", "value": "{}" }},', "Winter%212024" + g(4), "password", "name-value"),
    ("DB_PASSWORD={{{{ vault_db_password | default('{}') }}}}", g(16), "password", "template-default"),
    ('value: {{{{ .Values.redis.password | default "{}" | quote }}}}', g(24), "password", "template-default"),
    ('value: {{{{ default "{}" .Values.redis.password }}}}', g(24), "password", "template-default-first"),
    ("ALTER ROLE app_readonly WITH LOGIN PASSWORD '{}';", "autumn leaves fall quietly on Tuesday", "password",
     "keyword-quoted"),
    ("ALTER SERVER legacy OPTIONS (ADD user 'etl', ADD password '{}');", PW, "password", "keyword-quoted"),
    ("EXEC sp_addlinkedsrvlogin @rmtsrvname = N'LEGACY01', @rmtuser = N'etl_link', @rmtpassword = N'{}';", PW,
     "password", "assignment"),
    ("final smtpServer = gmail('reports@gmail.com', '{}');", "8tve s10z 061t 9odz", "password", "credential-call"),
    # infrastructure state and what secret stores print
    ('"password": {{\n    "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",\n'
     '    "plaintext": "\\"{}\\""\n  }}', g(30), "secret", "pulumi-plaintext-secret"),
    ('{{\n        "OutputKey": "MasterUserPassword",\n        "OutputValue": "{}",\n', PW, "password", "cfn-key-value"),
    ("aws cloudformation create-stack --parameters ParameterKey=DBPassword,ParameterValue={}", PW, "password",
     "cfn-key-value"),
    ('      - set {{\n          - name  = "webserverSecretKey" -> null\n          - value = "{}" -> null\n        }}',
     g(32, "0123456789abcdef"), "secret", "name-value"),
    ('local res, aerr = red:auth("ratelimiter", "{}")', g(28), "password", "credential-call"),
]


@pytest.mark.parametrize("template,secret,label,rule", FOUND)
def test_a_credential_in_tool_output_goes(redactor, template, secret, label, rule):
    text = template.format(secret)
    out = redactor.redact(text)
    assert out.text == template.format(f"[REDACTED:{label}]")
    assert rule in {f.rule for f in out.findings}


KEPT = [
    # cookies nothing rides on; a digest, not a password
    ".example.net\tTRUE\t/\tTRUE\t1753870000\tcookie_consent\tanalytics%3Dtrue%2Cmarketing%3Dfalse\n",
    '<wsse:Password Type="...#PasswordDigest">weYI3nXd8LjMNVksCKFV8t3rgHh3Rw==</wsse:Password>',
    # what a presigned URL's log, a webhook's headers and an S3 response carry in the clear
    "presign bucket=media key=avatars/233a3396-334e-539a-f6ef-4f4420b25733.png\n",
    "X-Amz-Credential=ASIAEXAMPLEIDNOTREAL/20240802/eu-west-1/s3/aws4_request\n",
    "X-GitHub-Delivery: 9a82605f-076c-c9d4-6c20-19b7bc5a40a8\n",
    "{'x-amz-id-2': 'vlk661cAo6zqEg6vcCA0euNtqYehCIuPkK9VWu6g3o+aP+QIeBVnNrhYvY3e', 'x-amz-request-id': 'A1'}",
    # references: Spring's SpEL, PowerShell variables, a template's variable
    '@Value("${stripe.webhook-secret:#{null}}")\nprivate String webhookSecret;',
    '$headers = @{ Authorization = "Token token=$apiKey" }',
    "DB_PASSWORD={{ vault_db_password | default(db_password_fallback) }}",
    # masked and blank values in unmistakable slots
    "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXXXXXXXX/XXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX\n",
    'JWK_THUMBPRINT_URN = "urn:ietf:params:oauth:jwk-thumbprint"',
    # what a plan or a secret store prints in place of a value, and a secret's name
    "    password                 = (sensitive value)\n",
    "$ aws secretsmanager describe-secret --secret-id prod/orders/postgres\n",
]


@pytest.mark.parametrize("text", KEPT)
def test_what_tools_print_that_is_no_secret_stays(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])
