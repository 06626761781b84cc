"""Declared defaults (redact/defaults.py) and the other shapes of settings, network gear and tool
views added with them: a secret-named setting's default (Terraform, CloudFormation, GitHub
Actions, Ansible, ARM, JSON schema), a secret-named option's default (argparse, click, Go's pflag),
Hadoop's and Java's XML name/value pairs, a plan's new value, Scala's `->` pair, Cisco and SNMP
lines, Subversion's and Remote Desktop's saved passwords. Each is tested in context, with the
near-misses beside it that must stay."""

from __future__ import annotations

import random
import string

import pytest

from reverie.redact.defaults import owner_name
from secret_values import generators

g, _ = generators(random.Random(2026))


PW = "Xk29-pq!mR7" + g(4)
TOKEN = g(32)
HEX = "0123456789ABCDEF"

# (text with {} where the secret goes, the secret, its label, the rule that finds it)
FOUND = [
    # a declared default, its setting the block that holds it
    ('variable "db_password" {{\n  type      = string\n  sensitive = true\n  default   = "{}"\n}}\n', PW, "password",
     "declared-default"),
    ("Parameters:\n  DBUser:\n    Type: String\n    Default: appadmin\n  DBPassword:\n    Type: String\n"
     "    NoEcho: true\n    Default: \"{}\"\n", PW, "password", "declared-default"),
    ("inputs:\n  deploy_token:\n    description: the registry token\n    default: '{}'\n", TOKEN, "token",
     "declared-default"),
    ('vars_prompt:\n  - name: db_password\n    prompt: "DB password?"\n    default: "{}"\n    private: true\n', PW,
     "password", "declared-default"),
    ("parameters:\n- name: sqlAdminPassword\n  type: string\n  default: {}\n", PW, "password", "declared-default"),
    ("- type: string\n  name: api_secret\n  default: \"{}\"\n", TOKEN, "secret", "declared-default"),
    ('"adminPassword": {{\n  "type": "securestring",\n  "defaultValue": "{}"\n}}', PW, "password", "declared-default"),
    ('{{"properties": {{"password": {{"type": "string", "default": "{}"}}}}}}', PW, "password", "declared-default"),
    # an option's default
    ('parser.add_argument("--password", default="{}", help="db password")', PW, "password", "option-default"),
    ('parser.add_argument(\n    "-p", "--password",\n    help="the password (optional)",\n    default="{}")', PW,
     "password", "option-default"),
    ('@click.option("--api-key", default="{}", envvar="API_KEY")', TOKEN, "api_key", "option-default"),
    ('cmd.Flags().StringVarP(&password, "password", "p", "{}", "db password")', PW, "password", "go-flag-default"),
    ('rootCmd.PersistentFlags().StringVar(&cfg.Token, "token", "{}", "API token")', TOKEN, "token", "go-flag-default"),
    # XML name and value elements, Java's XML properties
    ("<property>\n  <name>javax.jdo.option.ConnectionPassword</name>\n  <value>{}</value>\n</property>", PW, "password",
     "xml-name-value"),
    ("<name>fs.s3a.secret.key</name><description/><value>{}</value>", g(40, string.ascii_letters + "+/"), "secret",
     "xml-name-value"),
    ('<entry key="db.password">{}</entry>', PW, "password", "xml-entry-key"),
    # a plan's new value, a Scala pair
    ('      ~ "NEW_RELIC_LICENSE_KEY" = "[REDACTED:api_key]" -> "{}"', "eu01xx" + g(34, "0123456789abcdef"), "api_key",
     "plan-change"),
    ('val sfOptions = Map(\n  "sfUser"      -> "SPARK_ETL",\n  "sfPassword"  -> "{}",\n)', PW, "password", "arrow-pair"),
    # network gear and its monitoring
    ("username netops privilege 15 password 7 {}\n", g(22, HEX), "password", "cisco-password"),
    ("tacacs server ISE-01\n address ipv4 10.10.1.20\n key 0 {}\n", g(18), "password", "cisco-password"),
    ("snmp-server community {} RO 10\n", g(12), "password", "snmp-community"),
    ("rocommunity {} 10.99.0.0/16\n", g(12), "password", "snmp-community"),
    ('createUser nmsadmin SHA-256 "{0}" AES "{0}"\n', g(16), "password", "snmp-v3-user"),
    # saved passwords of Subversion and Remote Desktop
    ("K 8\npasstype\nV 6\nsimple\nK 8\npassword\nV 14\n{}\nK 15\nsvn:realmstring\n", g(14), "password",
     "svn-simple-password"),
    ("username:s:CORP\\lvdberg\npassword 51:b:{}\nprompt for credentials:i:0", "01000000D08C9DDF" + g(120, HEX),
     "password", "rdp-file-password"),
    # a game server's keys; a salt of a CMS; an LDAP bind's token
    ('sv_licenseKey "{}"', "cfxk_" + g(20) + "_" + g(6), "api_key", "fivem-license-key"),
    ('set steam_webApiKey "{}"', g(32, HEX), "api_key", "declaration"),
    ("$settings['hash_salt'] = '{}';", g(74), "secret", "assignment"),
    ("ldap_default_authtok_type = password\nldap_default_authtok = {}\n", g(18), "token", "assignment"),
]


@pytest.mark.parametrize("template,secret,label,rule", FOUND)
def test_a_declared_or_saved_secret_goes(redactor, template, secret, label, rule):
    text = template.format(secret)
    out = redactor.redact(text)
    assert out.text == template.format(f"[REDACTED:{label}]")
    assert rule in {f.rule for f in out.findings}


KEPT = [
    # defaults that are no secret, or whose setting names none
    'variable "region" {\n  default = "us-east-1"\n}\nvariable "db_password" {\n  type = string\n}\n',
    'variable "db_password" {\n  type    = string\n  default = "${var.fallback}"\n}\n',
    "password:\n  type: string\n  minLength: 8\n  default: changeme\n",
    '{"properties": {"password": {"type": "string", "default": ""}, "max_tokens": {"default": 1024}}}',
    "token_budget:\n  default: 4096\n",
    "switch (token) {\n  case A:\n    return 1;\n  default:\n    return 0;\n}",
    "inputs:\n  token:\n    description: GitHub token\n    default: ${{ github.token }}\n",
    "DBPassword:\n  Type: String\n  NoEcho: true\n  Default: '{{resolve:secretsmanager:prod/db:SecretString:password}}'\n",
    'parser.add_argument("--port", default="5432")\nparser.add_argument("--password", help="pw")',
    'parser.add_argument("--password", default=os.environ.get("PW", "x"))',
    'host := flag.String("host", "localhost", "db host")',
    'pw := pflag.StringP("password", "p", "", "password")',
    "<property><name>fs.s3a.secret.key</name><value>${env.S3_SECRET}</value></property>",
    '<entry key="db.user">app_reader</entry>',
    # masked values and documented examples, whatever their slot
    "-  API_KEY: '*** (before)'\n+  API_KEY: '*** (after)'\n",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    "SESSION_SECRET=replace-with-output-of-openssl-rand-hex-32",
    # a password's hash: Tomcat's digest, Cisco's types 5, 8 and 9
    '<user username="admin" password="' + g(64, "0123456789abcdef") + "$100000$" + g(128, "0123456789abcdef")
    + '" roles="manager-gui"/>',
    "enable secret 9 $9$w96zCxJihIkYq6$GImppEVgMSdIz1HEW_QbtX1xZIcaFy5q3yHNIqaeoVS\n",
    "username admin privilege 15 secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0\n",
    # a plan's change of a setting that is no secret, an arrow of Scala code
    '      ~ "LOG_LEVEL" = "info" -> "debug"',
    'val m = Map("sfUser" -> "SPARK_ETL", "sfRole" -> "TRANSFORMER")',
    "snmp-server location Branch-Leiden Floor 2 IDF\n",
]


@pytest.mark.parametrize("text", KEPT)
def test_what_is_no_secret_stays(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


def test_the_owner_of_a_default_is_the_block_that_holds_it():
    data = b'Parameters:\n  DBUser:\n    Default: a\n  DBPassword:\n    NoEcho: true\n    Default: b\n'
    assert owner_name(data, data.index(b"Default: a")) == "DBUser"
    assert owner_name(data, data.index(b"Default: b")) == "DBPassword"
    nested = b'variable "x_password" {\n  validation {\n    condition = true\n  }\n  default = "v"\n}\n'
    assert owner_name(nested, nested.index(b"default")) == "x_password"   # a sibling block is skipped
    arm = b'"adminPassword": {\n  "type": "securestring",\n  "metadata": {\n    "description": "x"\n  },\n  "defaultValue": "v"\n}'
    assert owner_name(arm, arm.index(b'"defaultValue')) == "adminPassword"
    minified = b'{"a":{"type":"string"},"b":{"default":"v"}}'
    assert owner_name(minified, minified.index(b'"default')) == "b"
    far = b"db_password:\n" + b"  # note\n" * 50 + b"  default: v\n"
    assert owner_name(far, far.index(b"default")) is None          # past OWNER_LINES
