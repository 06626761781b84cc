"""The pieces the rules are built from (`redact.rules`): provider names, the key and value
patterns of the assignment-like rules, and the patterns of the positional rules (commands, calls,
cookies, prose). Patterns are RE2 syntax, compiled over UTF-8 bytes read as Latin-1 (a non-ASCII
word is written as its UTF-8 bytes: `_utf8`)."""

from __future__ import annotations

import re

# Provider names that make a key secret-ish when the value is token shaped ("cloudflare: ..."),
# from the service names of gitleaks' keyword rules and detect-secrets' plugins.
PROVIDERS = (
    "adafruit", "adobe", "airtable", "algolia", "alibaba", "asana", "atlassian", "confluence",
    "jira", "beamer", "bitbucket", "bittrex", "cloudflare", "codecov", "cohere", "coinbase",
    "confluent", "contentful", "datadog", "discord", "droneci", "dropbox", "etsy", "facebook",
    "fastly", "finicity", "finnhub", "flickr", "freshbooks", "gitter", "gocardless", "heroku",
    "hubspot", "intercom", "jfrog", "artifactory", "bintray", "kraken", "kucoin",
    "launchdarkly", "linkedin", "linked_in", "mailchimp", "mailgun", "mapbox", "mattermost",
    "messagebird", "message_bird", "meraki", "netlify", "newrelic", "new_relic", "nytimes",
    "okta", "plaid", "rapidapi", "sendbird", "sentry", "snyk", "sonar", "sourcegraph",
    "squarespace", "sumo", "telegram", "travis", "twitch", "twitter", "typeform", "yandex",
    "zendesk", "softlayer", "cloudant", "contribsys", "privateai", "private_ai", "clickhouse",
    "clojars", "doppler", "dynatrace", "easypost", "frameio", "grafana", "harness",
    "hashicorp", "infracost", "linear", "lob", "maxmind", "notion", "octopus", "openai",
    "anthropic", "perplexity", "planetscale", "postman", "prefect", "pulumi", "readme",
    "rubygems", "scalingo", "sendinblue", "brevo", "settlemint", "shippo", "shopify",
    "slack", "square", "stripe", "twilio", "sendgrid", "vault", "github", "gitlab",
    "huggingface", "digitalocean", "pypi", "npm", "aws", "azure", "gcp", "ibm", "databricks",
    "beamer", "age", "onepassword", "authress", "flutterwave", "fly", "kubernetes", "k8s",
)
# Newer providers (issue 14): they classify a key (`MISTRAL_API_KEY`, `groq:`) but stay out of
# `KEY_RE`'s alternation, whose size is what the assignment regex pays on every long line
# (their keys hold key/token/secret words anyway).
PROVIDERS_CLASSIFY_ONLY = (
    "mistral", "groq", "replicate", "xai", "pinecone", "tavily", "together", "fireworks",
    "deepseek", "openrouter", "dockerhub", "circleci", "mongodb", "atlas", "segment", "teamwork",
    "salesforce", "dependency_track", "sonarqube", "sonarcloud", "jenkins",
)

# The key part of an assignment; the key must contain a secret word or a provider name (`erlang`:
# an Erlang cluster's cookie, `erlangCookie`, `RABBITMQ_ERLANG_COOKIE`).
_KEYWORD_ALT = "pass|pwd|pw|psk|secret|token|cred|key|salt|auth|totp|erlang|" + "|".join(
    sorted({re.escape(p) for p in PROVIDERS if len(p) >= 4}, key=lambda p: (-len(p), p))
)
KEY_RE = r"([A-Za-z0-9_.$\-]*(?:" + _KEYWORD_ALT + r")[A-Za-z0-9_.\-]*)"

# Value alternatives shared by the assignment-like rules: "double", 'single', `backtick`, bare.
# At least 6 characters: no check accepts a shorter value, and `"input_tokens": 1234` (in every
# transcript line) then never reaches the Python checks. A bare value ends at whitespace, a quote,
# a `;` or a `,` followed by whitespace, a quote or the end (`pw=abc, user=x`); it never starts with
# a comma or `=` (`pw :=,x` sets nothing). Inside it a comma is kept (`secret = A,.:-@*?!`);
# `keys._clean_bare` cuts the value before a next `,name=` pair, and the scanner resumes there
# (`scanner.Scanner.scan`), so the pair's own secret is found. A double-quoted value may be
# JSON-escaped (`\"v\"` inside a JSON string: `aws secretsmanager` output, a tool result stored as
# JSON; `\\\"v\\\"` a level deeper, JSON in a string of it); it ends at the first escaped or plain
# quote, so one match never runs on over the keys after it.

#: A string literal's prefix: Python's `b"..."`, `r"..."`, `f"..."` (an f-string's `{name}` is a
#: reference: `handlers._h_assign`), C#'s verbatim and Objective-C's `@"..."`, T-SQL's `N'...'`. A value may also be
#: triple-quoted (`"""v"""`, `'''v'''`: Python, Kotlin, Grafana's ini).
STRING_PREFIX = r"(?:[bBfFrRuU]{1,2}|@|N)?"
VALUE_RE = (
    r"""(?:""" + STRING_PREFIX + r"""(?:\\\\){0,3}\\?"(?:"")?((?:[^"\\\n]|\\[^"\n]){6,})(?:"")?\\?"|""" + STRING_PREFIX
    + r"""'(?:'')?([^'\n]{6,})(?:'')?'|`([^`\n]{6,})`|([^\s"'`,;=](?:[^\s"'`,;]|,[^\s"'`,;]){5,}))"""
)

#: The assignment rule's separators: also a string type's annotation and its `=`, as one separator
#: (`api_key: str = "v"`, `val password: String = "v"`, `const KEY: &'static str = "v"`, `secret:
#: SecretStr = ...`); never a type, then a comma (`{"password": pw, "user": "bob"}`). Other types
#: hold no literal (`token: Token = Token(...)`), and a general type name cost the prefilter.
STRING_TYPES = (r"(?:&(?:'static[ \t]+)?str|str(?:[ \t]*\|[ \t]*None)?|String|string|SecretStr|Optional\[str\]"
                r"|Final(?:\[str\])?|\"str\")")
ASSIGN_SEP_RE = r"""(=>|:{1,3}=|[?.+|!]?={1,3}|:[ \t]*""" + STRING_TYPES + r"""[ \t]*=|:|,|<-)"""

END = r"(?:[^A-Za-z0-9_]|$)"


#: The names of session cookies (PHP, Java, ASP.NET, Express, Laravel, CodeIgniter, Rack, Django).
SESSION_COOKIE = (r"[a-z0-9_\-]*sessid|[a-z0-9_\-]*session(?:_?id)?|asp\.net_sessionid|aspsessionid[a-z]*"
                   r"|connect\.sid|_?sid|laravel_session|ci_session|rack\.session")


#: Where a request's cookies start: a Cookie / Set-Cookie header (also set by a call: `"Cookie", "..."`,
#: a HAR file's `"name": "Cookie", "value": "..."`), a JSON `cookie` field, `curl -b` / `--cookie`.
COOKIE_HEADER = (r"(?i)(?:\b(?:set-)?cookie(?:\\?[\"'])?[ \t]*[:=,][ \t]*(?:\\?[\"'])?|\bdocument\.cookie[ \t]*\r?\n[ \t]*[\"']?"
                 r"|(?:^|[ \t])(?:-b|--cookie)(?:[ \t]+|=)[\"']?)")


#: A command's password argument: double-quoted (JSON-escaped too), single-quoted or bare (groups
#: 1-3; `h_command`); a bare one never starts with `-` (`cargo login --help`), also glued to its
#: flag (`7z -pv`).
COMMAND_VALUE = r"(?:\\?\"([^\"\\\n]{1,200})\\?\"|'([^'\n]{1,200})'|([^\s\"'|;&\\\-][^\s\"'|;&\\]{0,199}))"
#: A quoted literal alone: double-quoted or single-quoted (groups 1-2; `h_command`).
QUOTED_VALUE = r"(?:\"([^\"\n]{1,200})\"|'([^'\n]{1,200})')"


def _utf8(text: str) -> str:
    """`text` as a pattern for UTF-8 bytes read as Latin-1 (how every rule is compiled), escaped;
    with a non-ASCII character, also as JSON writes it escaped (`cl\u00e9`: a Codex rollout, any
    `json.dumps` with its default `ensure_ascii`)."""
    raw = re.escape(text.encode("utf-8").decode("latin-1"))
    if text.isascii():
        return raw
    if any(ord(ch) > 0xFFFF for ch in text):
        return raw   # (a surrogate pair in JSON: none of the words needs one)
    escaped = "".join(re.escape(ch) if ord(ch) < 128 else r"\\u" + "".join(
        "[%s%s]" % (d, d.upper()) if d.isalpha() else d for d in "%04x" % ord(ch)) for ch in text)
    return "(?:" + raw + "|" + escaped + ")"


#: English words of a sentence: a quoted phrase holding one says something about a password
#: (`"empty by default"`, `"in the .env file"`), it is not a passphrase.
FUNCTION_WORDS = frozenset("the a an your my our their his her its in on by of to from with via or and is are "
                           "was be been set same one default file env var never only plus than as at for not no "
                           "it this that".split())
#: Two-factor recovery codes: the words that introduce them, and a code alone on its line, in the
#: forms GitHub (`xxxxx-xxxxx`, hex) and GitLab (16 hex digits) give them.
RECOVERY_CODES = r"(?i)\b(?:recovery|backup|2fa|two-factor)[ \t_\-]+codes?\b"
RECOVERY_CODE = re.compile(
    rb"(?m)^[ \t]*(?:[-*]|\d{1,2}[.)])?[ \t]*([0-9a-f]{5}-[0-9a-f]{5}|[0-9a-f]{16})"
    rb"[ \t]*\r?$")
#: A line naming a password, maybe a table's header (markdown `|`, CSV, TSV, `;`): `arguments.h_table`
#: reads its cells.
#: The words a password column's name holds, as UTF-8 bytes (the rule's pattern and its prefilter's).
TABLE_PASSWORD_WORDS = "|".join(["passw", "pwd", "_pw", "passphrase", "kennwort", "contrase", "senha", "wachtwoord"]
                                + [w.encode("utf-8").decode("latin-1") for w in ("lösenord", "hasło", "пароль")])
CREDENTIAL_TABLE_HEADER = r"(?im)^[^\n]*(?:" + TABLE_PASSWORD_WORDS + r")[^\n]*"

#: A UUID (either case).
UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


#: Words that name a password or a key in prose: German, French, Spanish, Portuguese, Italian,
#: Dutch, Polish, Russian, Japanese, Chinese, Korean (ASCII ones in any case). English is rule
#: prose-is's: `password` is in most code, and this rule's prefilter would fire on all of it.
PROSE_WORDS = "|".join(
    [r"\b(?i:passwort|kennwort|mot de passe|phrase de passe|jeton|contrasena|senha|chiave|wachtwoord|sleutel|passord|adgangskode"
     r"|salasana|heslo|kata sandi|sandi|parola|sifre)"]
    + [_utf8(w) for w in ("schlüssel", "Schlüssel", "SCHLÜSSEL", "clé", "Clé", "CLÉ", "contraseña", "Contraseña",
                          "CONTRASEÑA", "hasło", "Hasło", "HASŁO", "пароль", "Пароль", "ПАРОЛЬ", "ключ", "Ключ",
                          "токен", "Токен", "パスワード", "暗証番号", "トークン", "APIキー", "密码", "密碼", "口令",
                          "密钥", "密鑰", "令牌", "비밀번호", "암호", "lösenord", "Lösenord",
                          "klíč", "jelszó", "Jelszó", "şifre", "Şifre", "mật khẩu", "Mật khẩu")]
)
#: Keys that name a password or a key in other languages (`senha`, `wachtwoord`, `hasło`,
#: `пароль`, `密码`, `كلمة_المرور`): words, not whole keys (`DB_WACHTWOORD`, `mật_khẩu`, `api_ключ`).
#: `keys.classify_key` classifies them (`FOREIGN_PASSWORD_WORDS`, `FOREIGN_KEY_WORDS`), rule
#: `assignment-i18n` reads `KEY = value` with them, full-width `：` and `＝` too.
FOREIGN_PASSWORD_WORDS = (
    "passwort", "kennwort", "mot_de_passe", "motdepasse", "contrasena", "contraseña", "senha",
    "parola_d_ordine", "paroladordine", "wachtwoord", "haslo", "hasło", "heslo", "losenord", "lösenord",
    "sifre", "şifre", "salasana", "passord", "adgangskode", "jelszo", "jelszó", "kata_sandi", "katasandi",
    "mat_khau", "matkhau", "mật_khẩu", "mật khẩu", "parol", "пароль", "κωδικός", "κωδικος", "密码", "密碼",
    "口令", "كلمة_المرور", "كلمة المرور", "סיסמה", "סיסמא", "パスワード", "비밀번호", "암호",
)
FOREIGN_KEY_WORDS = ("schluessel", "schlüssel", "chiave", "sleutel", "klic", "klíč", "klyuch", "ключ", "密钥",
                     "密鑰", "令牌", "トークン", "キー", "токен")
def _cased(words: tuple[str, ...]) -> str:
    """An alternation of `words`: the ASCII ones in any case, the others lower, Capitalized and UPPER
    (case-insensitive matching of UTF-8 bytes read as Latin-1 would fold bytes, not letters, and cost
    the prefilter a third of its speed)."""
    ascii_words = sorted((w for w in words if w.isascii()), key=len, reverse=True)
    other = sorted({v for w in words if not w.isascii() for v in (w, w.capitalize(), w.upper())}, key=len, reverse=True)
    return "(?i:" + "|".join(re.escape(w) for w in ascii_words) + ")|" + "|".join(_utf8(w) for w in other)


_FOREIGN_WORDS = _cased(FOREIGN_PASSWORD_WORDS + FOREIGN_KEY_WORDS)
#: The words alone (the prefilter's pattern of the rules built on them).
FOREIGN_WORDS_RE = r"(?:" + _FOREIGN_WORDS + r")"
#: A key holding one of those words (ASCII ones in any case), its other characters ASCII or not.
FOREIGN_KEY_RE = (r"((?:[A-Za-z0-9_.$\-]|[\x80-\xff])*(?:" + _FOREIGN_WORDS + r")(?:[A-Za-z0-9_.\-]|[\x80-\xff])*)")
#: The assignment separators, and the full-width `：` and `＝` of CJK text.
FOREIGN_SEP_RE = r"(" + ASSIGN_SEP_RE[1:-1] + r"|\xef\xbc\x9a|\xef\xbc\x9d)"
#: What links the word to its value: a word after a space (is, ist, est, es, é, è, jest, это, to),
#: or a mark (`:` and `：`, Japanese は/が, Chinese 是/为, Korean 는/은, which glue to the word before
#: them; a dash between spaces: `api-key-v` is one word); with no words between, a space alone
#: (`Passwort v`). `=` is the assignment rule's, which reads a value's end better (`pw=v,user=x`);
#: a value told in prose ends at `,`, `;` or `=` too.
_PROSE_SPACE = r"(?:[ \t]|\xc2\xa0|\\u00[aA]0)*"   # a no-break space too (French puts one inside « »)
PROSE_LINK = (
    r"[ \t]+(?:(?i:is|are|was|to|ist|lautet|est|c'est|es|era|jest|sont|son|er|adalah|ialah|hai|je|on|ja)\b|(?:"
    + "|".join(_utf8(w) for w in ("é", "è", "são", "это", "är", "là", "c’est")) + r")[ \t])"
    + r"|" + _PROSE_SPACE + r"(?::|" + "|".join(_utf8(w) for w in ("—", "：", "は", "が", "是", "为", "為", "는", "은"))
    + r")|[ \t]+-[ \t]"
)
#: The links of a credential told in a sentence (`redact.told.h_told`), in the languages of
#: `PROSE_LINK` (not its short words that English also has: `to`, `on`, `er`).
TOLD_LINK = (r"(?:is|are|was|ist|lautet|est|es|era|jest|adalah|ialah|(?:ye[ \t]+)?hai|sono|"
             + "|".join(_utf8(w) for w in ("è", "é", "är", "это", "são")) + r")")
PROSE_OPEN = "|".join(['"', "'", "`"] + [_utf8(w) for w in ("«", "„", "“", "「", "『")])
#: A value told in prose between quotes that may hold spaces (a passphrase), with its closing quote.
_PROSE_PHRASE = (
    r"(?:\"(.{6,120}?)\"|" + "|".join(_utf8(a) + _PROSE_SPACE + r"(.{6,120}?)" + _PROSE_SPACE + _utf8(b)
                                    for a, b in (("«", "»"), ("„", "“"), ("„", "”"), ("“", "”"), ("”", "”"),
                                                 ("「", "」"), ("『", "』")))
    + r")"
)
PROSE_PASSWORD = (
    r"(?:" + PROSE_WORDS + r")[A-Za-z]*"
    # (up to four words before the link; five to eight when none holds a digit, which a value
    # has: `heslo Švestka.9Knedlík – a ještě API klíč pro Mapy.cz: ...` links no later value)
    r"(?:(?:(?:[ \t]+[^\s:=]+){0,4}?|(?:[ \t]+[^\s:=0-9]+){5,8}?)(?:" + PROSE_LINK + r")" + _PROSE_SPACE
    # (`ist jetzt v`, `es ahora v`: the link, then `now`)
    + r"(?:(?i:jetzt|nun|now|ahora|maintenant|agora|adesso|ora|teraz|nu)[ \t]+)?"
    # the value: ASCII, Latin or Greek letters (not CJK: `パスワードは英数字8文字以上`, where no space ends it)
    + r"|[ \t]+)(?:" + _PROSE_PHRASE + r"|(?:" + PROSE_OPEN + r")?" + _PROSE_SPACE
    + r"([^\s\"'`\\,;=\xd0-\xff]{6,}))"
)


#: Caddy's DNS provider modules that take a token as their one argument (caddy-dns/*).
CADDY_DNS_PROVIDERS = ("cloudflare|duckdns|digitalocean|hetzner|godaddy|gandi|linode|vultr|netlify|dnsimple"
                       "|desec|ionos|njalla|porkbun|ovh|dynv6|inwx|bunny|netcup|scaleway|dnspod|infomaniak"
                       "|namedotcom|easydns|acmedns|powerdns|mailinabox|metaname|he")


#: A shell default after `${K:-`, `${K=` or Spring's `${K:` (not `${K:?message}`, `${K:+alt}`).
SHELL_DEFAULT = r"[^}?+\n][^}\n]{0,199}"
#: The default of an environment variable (`redact.arguments.h_env_default`; groups: key, value):
#: `os.getenv("K", "v")`, `environ.get`, `config("K", default="v")`, `env('K', 'v')`,
#: `ENV.fetch("K") { "v" }`, `getenv('K') ?: 'v'`; `process.env.K || "v"`; `${K:-v}` and Spring's
#: `${K:v}` (`${jwt.secret:v}`: a property's dotted name; not `${K:?message}` or `${K:+alternative}`);
#: `ENV["K"] || "v"`.
ENV_DEFAULT = (
    r"\b(?i:getenv\w*|get_?env|environ\.get|env\.(?:str|get)|env\.fetch|env|config)\(\s*[\"']([A-Za-z0-9_.\-]{1,100})[\"'][ \t]*"
    r"(?:,\s*(?:default[ \t]*[=:]\s*)?|\)[ \t]*(?:\{\s*|\?:[ \t]*|\|\|[ \t]*|\?\?[ \t]*|or[ \t]+))[\"']([^\"'\n]{1,200})[\"']"
    r"|\bprocess\.env(?:\.([A-Za-z0-9_]{1,100})|\[[ \t]*[\"']([A-Za-z0-9_]{1,100})[\"'][ \t]*\])[ \t]*(?:\|\||\?\?)[ \t]*"
    r"[\"'`]([^\"'`\n]{1,200})[\"'`]"
    r"|\$\{([A-Za-z0-9_.\-]{1,100})(?::[-=]?|[-=])(" + SHELL_DEFAULT + r")\}"
    r"|\bENV\[[ \t]*[\"']([A-Za-z0-9_]{1,100})[\"'][ \t]*\][ \t]*\|\|[ \t]*[\"']([^\"'\n]{1,200})[\"']"
)
#: A name and its value given as two fields (`redact.arguments.h_name_value`; groups: the name, then
#: the value double-quoted, single-quoted or bare): a Kubernetes container's `env` (`- name: K` then
#: `value: v` on the next line), Terraform's and Helm's `set { name = "K" value = "v" }`, JSON
#: `{"name": "K", "value": "v"}` (a HAR file's headers, an API's settings), Postman's and
#: Insomnia's `{"key": "K", "value": "v"}`.
NAME_VALUE_HEAD = (
    r"(?i)\b(?:name|key)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([A-Za-z0-9_.%\-]{1,100})\\?[\"']?(?:[ \t]*->[ \t]*null)?[ \t]*,?[ \t]*"
    r"(?:\r?\n[ \t]*(?:[\-+~][ \t]+)?)?\\?[\"']?value\\?[\"']?"
)
#: ... and a `type` field that names a credential (Keycloak's `{"type": "password", "value": V}`,
#: AWS SSM's `"Type": "SecureString", "Value": V`).
TYPE_VALUE_HEAD = (
    r"(?i)\btype\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?([A-Za-z0-9_.%\-]{0,40}(?:password|passwd|secret|token|api_?key"
    r"|credential|securestring)[A-Za-z0-9_.%\-]{0,40})\\?[\"']?[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?\\?[\"']?value\\?[\"']?"
)
_VALUE_FIELD = (
    r"[ \t]*[:=][ \t]*"
    r"(?:\\?\"((?:[^\"\\\n]|\\[^\"\n]){1,400})\\?\"|'([^'\n]{1,400})'|([^\s\"',;{}\[\]][^\s\"',;{}\[\]]{0,400}))"
)
NAME_VALUE = NAME_VALUE_HEAD + _VALUE_FIELD
TYPE_VALUE = TYPE_VALUE_HEAD + _VALUE_FIELD
#: A name element and its value element (Hadoop's `<name>K</name><value>V</value>`, a Jenkins
#: parameter's `<defaultValue>`), and Java's XML properties (`<entry key="K">V</entry>`): group 1 the
#: name, group 2 the value (`redact.arguments.h_name_value`).
XML_NAME_VALUE = (
    r"<(?:name|key)>[ \t]*([A-Za-z0-9_.\-:]{1,100})[ \t]*</(?:name|key)>[ \t\r\n]*"
    r"(?:(?:<description>[^<]{0,400}</description>|<description/>)[ \t\r\n]*)?"
    r"<(?:value|defaultValue)>([^<\n]{1,400})</(?:value|defaultValue)>"
)
XML_ENTRY_KEY = r"""<entry[ \t]+key=["']([A-Za-z0-9_.\-:]{1,100})["'][ \t]*>([^<\n]{1,400})</entry>"""
#: A declared default (`redact.defaults.h_declared_default`): group 1 what is before the field,
#: groups 2-4 the value (double-quoted, single-quoted, bare).
DECLARED_DEFAULT = (
    r"""(?m)(^[ \t]*(?:-[ \t]+)?|[{,][ \t]*)\\?["']?[Dd]efault(?:[Vv]alue|_value)?\\?["']?[ \t]*[:=][ \t]*"""
    r"""(?:\\?"((?:[^"\\\n]|\\[^"\n]){1,400})\\?"|'([^'\n]{1,400})'|([^\s"'#,{}\[\]|>&*!][^\s,{}\[\]]{0,400}))"""
)
#: Go's flag and pflag (cobra) string options: group 1 the name, group 2 the default.
GO_FLAG_DEFAULT = (
    r"""\b(?:String|StringP|StringVar|StringVarP)\([ \t]*(?:&[\w.\[\]]+[ \t]*,[ \t]*)?"([A-Za-z][A-Za-z0-9_.\-]{0,60})"[ \t]*,"""
    r"""[ \t]*(?:"[A-Za-z]?"[ \t]*,[ \t]*)?"((?:[^"\\\n]|\\.){1,400})"(?:[ \t]*,)()"""
)
#: A command-line option's default in the call that declares it (`redact.defaults.h_option_default`;
#: argparse's and optparse's `add_argument`/`add_option`, click's and typer's `option`, commander's
#: `addOption`): group 1 the first option name, groups 2-3 the value (double-, single-quoted).
OPTION_DEFAULT = (
    r"""\b(?:add_argument|add_option|option|Option|argument|addOption)\([ \t\r\n]*"""
    r"""["'](--?[A-Za-z][A-Za-z0-9_\-]{0,60})["'][ \t]*,(?:[^()"']|"[^"\n]*"|'[^'\n]*')*?"""
    r"""\bdefault[ \t]*=[ \t]*(?:"((?:[^"\\\n]|\\.){1,400})"|'([^'\n]{1,400})')"""
)
#: The head of a call that takes a credential by position, up to its opening parenthesis (group 1:
#: the call's name; `redact.arguments.SECRET_ARGUMENT` says which argument).
CREDENTIAL_CALL = (
    r"(?:^|[^A-Za-z0-9_])((?i:login|authenticate|basic_?auth|with_?basic_?auth|set_?basic_?auth|http_?basic_?auth"
    r"|http_?digest_?auth|bearer_?auth|mysqli?_connect)|(?i:jwt)\.(?:sign|encode|decode|verify)|Credentials\.basic"
    r"|new[ \t]+PDO|PDO->__construct|Credentials|SearchClient(?:\.|::)[Cc]reate|algoliasearch|Twilio(?:::REST)?::Client\.new|twilio\.rest\.Client|DBI->connect"
    r"|new[ \t]+UsernamePasswordCredentialsImpl|DriverManager\.getConnection|Sql\.newInstance"
    r"|MongoCredential\.Create(?:ScramSha(?:1|256))?Credential|pyotp\.(?:TOTP|HOTP)"
    r"|(?:new|New-Object)[ \t]+(?:System\.Net\.)?Cookie"
    r"|new[ \t]+(?:System\.Net\.)?NetworkCredential|ftplib\.FTP(?:_TLS)?|pymysql\.connect|MySQLdb\.connect|auth|smtp\.(?:PlainAuth|CRAMMD5Auth)|gmail"
    # a password hashed from a literal (a seed, a migration, a fixture): its cleartext is in the call
    r"|make_password|Hash::make|bcrypt(?:\.hash(?:Sync|pw)?)?|password_hash|generate_password_hash|hashpw"
    r"|BCrypt::Password\.create"
    # a key credential of Azure's and OpenAI's .NET SDKs; Twilio's Node client (`twilio(sid, token)`)
    r"|(?:new[ \t]+)?(?:AzureKeyCredential|AzureNamedKeyCredential|ApiKeyCredential)|twilio)[ \t]*\("
)


def key_word(*words: str) -> str:
    """`words` as the last word of a key: lower, UPPER or Capitalized after a non-alphanumeric
    character or the start (`password`, `db_password`, `DB-PASSWORD`, `Password`, `apiKey`), or
    Capitalized as a camelCase hump (`dbPassword`, `clientApiKey`); never glued to lower-case
    letters (`someotherpassword`). UPPER may also be glued to upper-case letters or digits, as
    environment names are (`PGPASSWORD`, `MYSQLPWD`). A word's parts are written with `_` between
    them and may be joined by `_`, `-` or nothing (`api_key`, `api-key`, `apikey`)."""
    bare, hump, upper = [], [], []
    for word in words:
        parts = word.split("_")
        sep = r"[_\-]?"
        bare.append(sep.join(parts))
        upper.append(sep.join(p.upper() for p in parts))
        if len(parts) > 1:
            bare.append(parts[0] + "".join(p.capitalize() for p in parts[1:]))  # apiKey
        hump.append("".join(p.capitalize() for p in parts))  # Password, dbPassword, ApiKey
    return (r"(?:(?:^|[^A-Za-z0-9])(?:" + "|".join(bare + upper + hump) + r")|[a-z0-9](?:" + "|".join(hump)
            + r")|[A-Z0-9](?:" + "|".join(upper) + "))")


# Passphrases: a quoted value of several words (`password = "correct horse battery staple"`)
# counts only where the key's own word names the secret: the key is words joined by `_ . -` or
# camelCase humps (`db_password`, `dbPassword`, `DB_PASSWORD`; not `someotherpassword`), the secret
# word comes last or is followed only by qualifiers that still name it (`password_confirm`,
# `password_admin`, `password_super_secure`, `password2`), so messages about a password
# (`password_error = "Too short"`, `secret_name: "db creds"`) do not count. Templates and format
# strings (`${A} ${B}`, `%s %s`, `{user} {pw}`, `<your password>`) are code, not values.
KEY_QUALIFIERS = (
    "admin|root|super|superuser|user|db|new|old|current|confirm|confirmation|again|repeat|retype|"
    "plain|plaintext|clear|cleartext|secure|strong|default|initial|master|main|temp|tmp"
)
# (a phrase never starts with shell or code punctuation: `expect "password:"; send "..."` closes the
# key's own string, then goes on in code)
PASSPHRASE_TAIL = (
    r"(?:[_.\-]?(?i:" + KEY_QUALIFIERS + r"))*[0-9]*[\"'\]]?[ \t]*(?::=|=>|=|:)[ \t]*[\"']"
    r"([^\s\"'\\${}%<>;,|&()][^\"'\\\n${}%<>]{0,60}[ \t][^\"'\\\n${}%<>]{0,60})[\"']"
)


#: An interactive interpreter's prompt (pdb and ipdb, Python's `>>>`, IPython's `In [n]:`, irb
#: and Rails' `app(env)>`, pry, iex, gdb, Scala's `scala>`, Node's and Deno's bare `>`: a Markdown
#: quote too, which `arguments.h_repl` tells apart), an expression (printed with `p`/`print`/`puts`
#: or alone), then the line it printed: a quoted string (after IPython's `Out[n]:`, irb's `=>`,
#: gdb's `$1 =`), or Scala's `val res0: String = v`. A line break may be JSON-escaped, and the echo
#: may end a JSON string (a tool result stored as JSON). Groups: the expression, the value single-
#: quoted, double-quoted, bare (Scala).
REPL_ECHO = (
    r"(?m)(?:^|\\n|\")[ \t]*(?:\(Pdb\+?\+?\)|ipdb>|>>>|In[ \t]*\[\d{1,5}\]:|irb\([^)\n]{0,40}\):\d{1,5}(?::\d{1,3})?[>*]"
    r"|[\w\-]{1,30}\([\w\-]{1,20}\)(?::\d{1,5})?>|(?:\[\d{1,5}\][ \t]*)?pry\([^)\n]{0,40}\)>|iex\(\d{1,5}\)>"
    r"|\(gdb\)|scala>|>)[ \t]+"
    r"(?:(?:pp?|print|pprint|puts|IO\.puts|println)[ \t(]+)?((?:[^\n\\]|\\\"){1,200}?)\)?[ \t]*(?:\r?\n|\\n)"
    r"[ \t]*(?:(?:Out\[\d{1,5}\]:[ \t]*|=>[ \t]*|\$\d{1,5}[ \t]*=[ \t]*)?"
    r"(?:'([^'\n\\]{6,400})'|\\?\"([^\"\n\\]{6,400})\\?\")"
    r"|(?:val[ \t]+)?res\d{1,5}:[ \t]*String[ \t]*=[ \t]*([^\s\"'\\]{6,400}))[ \t]*(?:\r?$|\\n|\")"
)
#: The commands that print an Azure storage account's keys (a table, TSV or JSON of them), and
#: such a key: 64 bytes in base64, alone between spaces, quotes or separators.
AZURE_KEYS_COMMAND = (r"\baz[ \t]+storage[ \t]+account[ \t]+keys[ \t]+(?:list|renew)\b"
                      r"|\b(?:Get|New)-AzStorageAccountKey\b")
def _alone_64_bytes(alphabet: bytes):
    """64 bytes in base64 of `alphabet` with their `==`, alone between spaces, quotes, separators
    or JSON escapes (a table's or a JSON document's cell)."""
    return re.compile(rb"""(?:^|[\s"',;=:|]|\\[tn])([""" + alphabet + rb"""]{86}==)(?=[\s"',;|]|\\[tnr"]|$)""")


AZURE_KEY_VALUE = _alone_64_bytes(rb"A-Za-z0-9+/")
#: The InfluxDB commands that print API tokens (a table of them), and such a token: 64 bytes in
#: base64url with its padding.
INFLUX_TOKEN_COMMAND = r"\binflux[ \t]+(?:v1[ \t]+)?auth[ \t]+(?:create|list|ls|find)\b|\binflux[ \t]+setup\b"
INFLUX_TOKEN_VALUE = _alone_64_bytes(rb"A-Za-z0-9_\-")
#: Postmark's SMTP host and token header, and the UUID its SMTP login takes as user and password
#: (its server API token: "use your Server API token as both the username and password").
POSTMARK_ANCHOR = r"(?i)\bsmtp\.postmarkapp\.com\b|\bx-postmark-server-token\b"
POSTMARK_TOKEN = re.compile(   # a key that ends in user, pass or token (not `user_id`, `MessageID`)
    rb"""(?i)(?<![\w.\-])(?:[\w.\-]{0,40}?[_.\-])?(?:user(?:name)?|login|pass(?:word)?|(?:server[_\-]?|api[_\-]?)?token)"""
    rb"""\\?["']?[ \t]*[:=][ \t]*\\?["']?(""" + UUID.encode() + rb""")\b""")
#: Consul's ACL tokens block (`acl { tokens { initial_management = "..." agent = "..." } }`, HCL or
#: JSON), and its tokens (UUIDs) by Consul's names for them.
CONSUL_TOKENS_BLOCK = r"(?m)(?:^[ \t]*|[{;][ \t]*)tokens[ \t]*=?[ \t]*\{|\\?\"tokens\\?\"[ \t]*:[ \t]*\{"
CONSUL_TOKEN_VALUE = re.compile(
    rb'(?:initial_management|agent_recovery|agent_master|agent|default|replication|master|dns'
    rb'|config_file_service_registration)\\?"?[ \t]*[=:][ \t]*\\?"'
    rb'(' + UUID.encode() + rb')\\?"')


#: A Google account's app password as Google shows it: four groups of four lower-case letters (the
#: spaces may be left out when it is pasted).
APP_PASSWORD = re.compile(r"[a-z]{4}(?: ?[a-z]{4}){3}")
#: A word that names a credential, then only punctuation (`Passwords`, `token:`, `PIN`): a phrase
#: holding one talks about a credential, it is none.
CREDENTIAL_WORD = re.compile(r"(?i)(?:pass(?:word|wort|phrase)?s?|token|secret|key|credentials?|login|pin)\W*$")
#: The words of a phrase that is about a password rather than one: its rules (length, characters,
#: strength), where it is kept (a vault, a password manager, a wiki), what happens to it, or that it
#: is the same as another, in the languages of `PROSE_WORDS` and English (no short word that a
#: passphrase may hold: `zu`, `see`, `too`).
ABOUT_A_PASSWORD = re.compile(
    r"(?i)\b(?:zeichen|caract[eè]res?|caracteres|characters?|chars|znak(?:i|ów)|tecken|tegn|merkki[äa]|"
    r"mindestens|minimum|m[ií]nimo|au moins|at least|almeno|co najmniej|minst|"
    r"court|courte|kurz|corta|faible|schwach|d[ée]bil|"
    r"siehe|coffre|tresor|b[oó]veda|cofre|wiki|1password|bitwarden|vaultwarden|keepass(?:xc)?|lastpass|dashlane|"
    r"ge[äa]ndert|chang[ée]|cambiada|changed|abgelaufen|oubli[ée]|vergessen|"
    r"same as|misma|mismo|gleiche|m[êe]me|mesma|stessa)\b")


#: What makes the text before a key part of a name: an AWS ARN, a URN, a CloudFormation resource
#: type (`arn:aws:secretsmanager:...:secret:`, `urn:ietf:params:oauth:`, `AWS::ApiGateway::`); on
#: the UTF-8 bytes of a text, ending where the key starts.
NAME_BEFORE = re.compile(rb"\b(?:arn:aws[\w-]*|urn:[A-Za-z0-9][A-Za-z0-9\-]{0,31}):[^\s\"'`]*$"
                         rb"|\b(?:AWS|Alexa|Custom)::(?:\w+::)*$")
