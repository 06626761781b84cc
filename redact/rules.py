"""The detection rules: general patterns per provider and per credential shape.

Every rule is an RE2 pattern (linear time, compiled as Latin-1 bytes over the UTF-8 text). All
patterns also go, loosened (`redact.prefilter.loosen`), into the prefilter's RE2 Sets: one pass
over a text (or a whole batch of texts) tells which rules can match at all, and only those rules'
regexes and checks run. Rules are written per provider or per shape, never per test case;
gitleaks' and detect-secrets' public rule sets were the source of the provider prefixes and
lengths.

Redacting and remembering are separate decisions (the product's policy):
  * Redacting: a value in an unmistakable credential slot is redacted even when its body looks like
    a placeholder: a provider's own prefix (`AKC`, `AP[0-9A-F]` of Artifactory, `SK`/`AC` + 32 of
    Twilio, `npm_`, `xox?-` of Slack), a Slack webhook path, the value right after a Cloudant or AWS
    secret-key name, a PEM block, a quoted value of several words assigned to a key whose own
    word is a password, passphrase, secret or API key. Redacting a placeholder costs the reader
    nothing; leaving a real value in such a slot leaks it. Token rules opt in with the option
    `placeholder_ok=True` (`redact.handlers._h_token` then yields a value that `shapes.is_placeholder`
    or `shapes.is_typed_sequence` flags instead of dropping it; every other check still applies to
    values that are not placeholders). Rules without that option, and every generic
    `KEY=value` rule, still leave placeholders (`API_KEY=your-api-key`, `AKIAXXXXXXXXXXXXXXXX`,
    `AIzaSyabcdefghij...`) alone: there the slot is not unmistakable and a placeholder is the
    likely reading.
  * Remembering: only `shapes.credential_like` values are remembered (no placeholder, no typed
    sequence, no whitespace, ...), whatever rule found them. So `AP6xxxxxxxxxx`, `npm_xxxxxxxxxxx`
    or a passphrase of several words are redacted where they are seen and never remembered.

Writing a pattern: avoid a broad character class with a bounded count in front of the distinctive
part (`[A-Za-z0-9]{14}` before `.atlasv1`): the prefilter loosens counts to `+`, but leading broad classes still
multiply the states of the combined automaton. Prefer a literal prefix.

Kinds (how `redact.handlers` turns a match into a span to redact):
  token     group 1 (or the whole match) is the secret; dropped if it is a placeholder.
  pem       the whole match (a private key block) is the secret.
  assign    KEY <sep> VALUE; the key is classified (`classify_key`), the value shape-checked.
  xml       <KEY> VALUE </KEY>, same checks as assign.
  cli       --KEY VALUE / --KEY=VALUE, same checks as assign.
  is        "password is VALUE" in prose, same checks as assign.
  userinfo  scheme://user:PASSWORD@host: group 2 is the password.
  query     ?password=VALUE&... in URLs and connection strings.
  header    Authorization: [scheme] VALUE.
  bearer    Bearer VALUE anywhere.
  curl_user curl -u / --user USER:PASSWORD.
  pwvalue   group 1 is a password (quotes stripped), password shaped: .netrc, `mysql -pVALUE`.
  cookie    NAME=VALUE of a session cookie: group 2 is the value, secret shaped.
  jprop     -DNAME=VALUE (Java system property): group 1 the name (classified, `-D` dropped), group 2
            the value (the credential-context rule).
  kwvalue   KEYWORD VALUE with no operator: the keyword classified, the value token shaped.
  phrase    a password key and an unquoted value with spaces to the end of its line.
  entropy   a quoted random string with no key: group 1, checked by `handlers._h_entropy`.
  header_kv a named header (`X-API-Key: VALUE`): group 2, secret shaped.
  k8s       a Kubernetes Secret's `data:` value (base64), group 1.
  reverse   "VALUE" == password: a literal compared with a secret-named variable.
  kwquoted  password "VALUE": a quoted literal right after a password or secret word.
  cookie_header  every long cookie of a Cookie header (group 1: the rest of the header).
  gradle    a Gradle field: group 1 the name (classified), group 2 the literal.
  nextline  KEY: then a quoted VALUE on the next line (a formatter's wrap), same checks as assign.
  concat    KEY = a value split over string literals, one a line: the key's check on their join.
  xml_phrase  a password element's words with spaces and a digit (`told.told_passphrase`).
Kinds of credentials told in prose, whose handlers live in `redact.told`:
  told, told_phrase, told_bare_phrase  a credential told in a sentence, a quoted passphrase told
            in one, an unquoted one that a remark in brackets follows (`TOLD_REMARK`);
  prose     a password told in prose in other languages (`PROSE_PASSWORD`).
Positional kinds, whose handlers live in `redact.arguments`:
  shaped_password  a password where another word could stand (`-u USER ... -p VALUE`, `user/VALUE@db`);
  envdefault, call, printed, piped, namevalue, chat   (see that module's docstring);
  command   a command's, SQL's or a config line's password argument (`COMMAND_VALUE` groups);
  htpasswd  `htpasswd -b [file] user password`, by its flags;
  setter    a setter's or a builder's literal (`setPassword("v")`, `.apiKey("v")`);
  form_fill what an end-to-end test types into a password field;
  cracked, found_login  a cracked hash's plaintext, a login a scanner found (`arguments`);
  generated a password a tool printed as generated; redis_auth, userlist: Redis AUTH, PgBouncer.
"""

from __future__ import annotations

import re

from .patterns import (
    ASSIGN_SEP_RE, CADDY_DNS_PROVIDERS, COMMAND_VALUE, COOKIE_HEADER, CREDENTIAL_CALL, ENV_DEFAULT, KEY_RE,
    NAME_VALUE, NAME_VALUE_HEAD, TYPE_VALUE, PASSPHRASE_TAIL, PROSE_PASSWORD, PROSE_WORDS, QUOTED_VALUE, SESSION_COOKIE, VALUE_RE,
    AZURE_KEY_VALUE, AZURE_KEYS_COMMAND, CREDENTIAL_TABLE_HEADER, RECOVERY_CODE, RECOVERY_CODES, TABLE_PASSWORD_WORDS, CONSUL_TOKEN_VALUE, CONSUL_TOKENS_BLOCK, INFLUX_TOKEN_COMMAND,
    INFLUX_TOKEN_VALUE, POSTMARK_ANCHOR, POSTMARK_TOKEN, TOLD_LINK, XML_NAME_VALUE, XML_ENTRY_KEY, DECLARED_DEFAULT, OPTION_DEFAULT, GO_FLAG_DEFAULT, FOREIGN_KEY_RE, FOREIGN_SEP_RE, FOREIGN_WORDS_RE,
    REPL_ECHO, key_word)
from .providers import CURRENT_PROVIDERS, PREFIXED_TOKENS
from .rule import Rule, token_rule as _tok  # noqa: F401  (Rule: importable from here too)


#: The prefix `docker compose logs` puts before each line of a service's output (`jenkins  | `,
#: with `-t` a timestamp after it), and `kubectl logs --prefix` (`[pod/jenkins-0/jenkins] `).
_LOG_PREFIX = (r"(?:(?:[\w.\-]{1,40}[ \t]+\||\[[\w./\-]{1,80}\])"
               r"(?:[ \t]*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)?)?")


#: The last word of a setter's or a builder's name that names the secret (`setPassword`, `.apiKey`).
_SETTER_WORD = r"(?i:pass(?:word|phrase)?|passwd|pwd|secret|token|key|auth|credentials?)"


#: A remark in brackets on how a passphrase told with no quotes is typed: its spaces, its quotes,
#: its case (`(with spaces, all lowercase)`, `(mit Leerzeichen)`, `(todo en minúsculas, con espacios)`).
TOLD_REMARK = (r"\([^()\n]{0,60}?(?i:spaces?|leerzeichen|espacios?|espaces?|spazi|spaties|mellanslag|spacje|quotes"
               r"|anf\xc3\xbchrungszeichen|comillas|guillemets|lower[ \-]?case|upper[ \-]?case|min\xc3\xbasculas|may\xc3\xbasculas"
               r"|kleinbuchstaben|gro\xc3\x9fbuchstaben|minuscules|majuscules|capital)")
#: The prefilter pattern of the rules of a password told in a sentence (told-phrase,
#: told-bare-phrase: one Set entry): a password's word in English or another language, a space.
TOLD_WORD_HEAD = r"(?i)(?:password|passwd|passphrase|pwd|" + PROSE_WORDS + r")s?\*{0,2}[ \t]"


def _after(name: str, label: str, anchor: str, kilobytes: int, **options) -> Rule:
    """A rule whose values follow an anchor (`arguments.h_values_after`): the pattern is the anchor,
    and the handler reads the `kilobytes` KB after it (`window`), each byte once per scan however
    many anchors come in a row (`scanner.Scanner.scan` keeps where the last window ended)."""
    return Rule(name, label, anchor, "values_after", options={**options, "window": kilobytes * 1024})


def _command(name: str, label: str, pattern: str, head: str, bare: bool = False) -> Rule:
    """A rule whose value a command, a call or a config line takes as an argument
    (`arguments.h_command`): `head` is the start the prefilter holds (`set_pattern`), and `bare`
    says every group is a bare value (else the groups are read as double-quoted, single-quoted,
    bare)."""
    options = {"set_pattern": head, **({"bare_groups": True} if bare else {})}
    return Rule(name, label, pattern, "command", options=options)



RULES: tuple[Rule, ...] = (
    # --- private keys -----------------------------------------------------------------------
    # A block up to its END line; without one (truncated output), the body must start on the next
    # line or, on the header's own line, be base64 right away: prose that names the header
    # ("starts with -----BEGIN PRIVATE KEY----- and ends with ...") is not a key.
    Rule(
        "private-key", "private_key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}(?:PRIVATE KEY(?: BLOCK)?)?-----"
        # (a key printed on one line, flattened or clipped: every base64 run of the body goes)
        r"|[ \t]*(?:\r?\n|\\[rn])(?:[A-Za-z0-9+/=:,.\- \t\r\n]|\\[nrt])*"
        r"|[ \t]*[A-Za-z0-9+/=]{16,}(?:[ \t]+[A-Za-z0-9+/=]{4,})*)",
        "pem",
    ),
    # A PEM header, a line break, a body line: a private key block whatever its body says
    # (`yabba dabba doo`, `MIIE...`), unlike the rule above which wants a key-sized body. Templates
    # (`{body}`, `$KEY`, `" + b64 + "`) do not start with a base64 character and stay.
    _tok("private-key-block", "private_key",
         r"(-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*"
         r"[A-Za-z0-9+/=][^\r\n\\\"'`]{3,})",
         allow_filler=True, placeholder_ok=True),
    Rule(
        "putty-private-key", "private_key",
        r"PuTTY-User-Key-File-\d: [\s\S]*?Private-MAC: [0-9a-fA-F]+", "pem",
    ),
    *PREFIXED_TOKENS,   # (redact.providers)
    *CURRENT_PROVIDERS,   # (redact.providers)
    # AWS STS session tokens: base64 of a binary header, one of two documented starts
    _tok("aws-session-token", "aws_session_token", r"\b((?:FwoGZXIvYXdz|IQoJb3JpZ2lu)[A-Za-z0-9+/]{100,}={0,2})"),
    # a PEM private key, base64-encoded (a k8s Secret `data:`, `PRIVATE_KEY_B64=`): the blob
    # decodes to "-----BEGIN ... PRIVATE KEY" (a certificate's blob does not: it stays)
    _tok("private-key-base64", "private_key", r"\b(LS0tLS1CRUdJTi[A-Za-z0-9+/]{30,}={0,2})", b64_private_key=True),
    # Jenkins credentials.xml: a secret encrypted with the controller's key, `{AQAAAB...}`
    _tok("jenkins-secret", "jenkins_secret", r"\{(AQAAAB[A-Za-z0-9+/]{20,}={0,2})\}"),
    # a one-time codes' seed as authenticator setup pages show it: 32 base32 characters in eight
    # groups of four (a digit among them: English words of four letters have none; random: not hex
    # words, not the documentation's `JBSW Y3DP EHPK 3PXP` repeated)
    _tok("totp-setup-key", "secret",
         r"(?:^|[^A-Za-z0-9])((?:[A-Z2-7]{4}[ \t]){7}[A-Z2-7]{4}|(?:[a-z2-7]{4}[ \t]){7}[a-z2-7]{4})(?:[^A-Za-z0-9]|$)",
         min_entropy=3.7, needs_digit=True, set_pattern=r"(?:[A-Za-z2-7]{4}[ \t]){7}[A-Za-z2-7]{4}",
         set_group="screens"),
    # CLI password flags whose flag name says nothing: `docker login -p`, `psexec -p`, `sshpass -p`
    Rule("cli-login-password", "password",
         r"(?:^|[\s;&|(`\"'])(?i:(?:docker|podman|nerdctl|buildah|skopeo|oras|crane|helm(?:[ \t]+registry)?)[ \t]+login"
         r"|psexec(?:64)?(?:\.exe)?|paexec(?:\.exe)?|winexe|sshpass|smbmap|crackmapexec|netexec|nxc|evil-winrm)"
         r"(?:[ \t]+[^\s|;&<>]+)*?[ \t]+(?:-p|--password|--pass)(?:[ \t]+|=)"
         r"((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&<>])+)", "pwvalue"),
    # other clients' password flags: `redis-cli -a`, `ssh-keygen -N`, `sqlcmd -P`, `ldapsearch -w`,
    # `az login -p`, `mongosh -p`, macOS' `security import x.p12 -P`
    Rule("cli-password-flag", "password",
         r"(?:^|[\s;&|(`\"'])(?i:redis-cli(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-a"
         r"|ssh-keygen(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-[NP]|sqlcmd(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-P"
         r"|ldap(?:search|modify|add|delete|passwd|whoami)(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-w"
         r"|(?:az[ \t]+login|mongo(?:sh)?|cypher-shell)(?:[ \t]+[^\s|;&<>]+)*?[ \t]+(?:-p|--password)"
         r"|security[ \t]+(?:import|create-keychain|unlock-keychain|export)(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-[pP])(?:[ \t]+|=)"
         r"((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&<>])+)", "pwvalue"),
    # any other client's `-u USER ... -p PASSWORD` (cqlsh, mosquitto_pub's `-P`, influx, nats): a
    # user flag, then a password flag in the same command, shaped like a password (`arguments.
    # h_shaped_password`: not `psql -U app -p 5432`, `docker run -u 1000 -p 8080:80`, `journalctl -u
    # nginx -p warning`, nor MySQL's `-p database`, which prompts)
    Rule("cli-user-password", "password",
         r"(?:^|[ \t])(?:-u|-U|--user(?:name)?)(?:[ \t]+|=)[^\s|;&<>\-][^\s|;&<>]*"
         r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s|;&<>]+)){0,6}?"
         r"[ \t]+-[pP](?:[ \t]+|=)((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&<>])+)", "shaped_password",
         options={"set_pattern": r"(?:^|[ \t])(?:-u|-U|--user(?:name)?)[ \t=][^\n]*[ \t]-[pP][ \t=]",
                  "prompting": re.compile(rb"\b(?:mysql\w*|mariadb[\w\-]*)\b"), "same_program": True,
                  "max_matches": 500}),
    # Oracle's tools and SQL*Plus' CONNECT: `sqlplus -s system/PASSWORD@//host:1521/DB`, `expdp
    # userid=app/PASSWORD`, `SQL> conn app/PASSWORD@db`
    Rule("oracle-connect", "password",
         r"(?i)\b(?:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)(?:[ \t]+-[A-Za-z]+)*"
         r"[ \t]+(?:(?:target|catalog|auxiliary)[ \t]+)?(?:userid=)?[\"']?[A-Za-z0-9_$#.]+/([^\s@/\"']{4,200})(?:@|[\"'\s]|$)", "shaped_password",
         options={"set_pattern": r"(?i)\b(?:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)[ \t]"}),
    Rule("sqlplus-connect", "password",
         r"(?im)^[ \t]*(?:SQL>[ \t]*)?conn(?:ect)?[ \t]+[A-Za-z0-9_$#.]+/([^\s@/\"']{4,200})"
         r"(?:@|[ \t]+as[ \t]+sys\w+|[ \t]*;?[ \t]*\r?$)",
         "shaped_password", options={"set_pattern": r"(?im)^[ \t]*(?:SQL>[ \t]*)?conn(?:ect)?[ \t]+[A-Za-z0-9_$#.]+/",
                                     "max_matches": 500}),
    # a token given to a CLI's `login` as its one argument, at a command's start (`wandb login KEY`,
    # `comet login KEY`): random, 32 characters or more, no hyphen (not a UUID, a tenant's id)
    _tok("cli-login-token", "token",
         r"(?m)(?:^|[;&|]|\$)[ \t]*[A-Za-z][\w\-]{1,30}[ \t]+login[ \t]+([A-Za-z0-9_]{32,200})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.0, needs_digit=True, set_pattern=r"[ \t]login[ \t]"),
    # the value given to a secret store's command (`databricks secrets put-secret s k --string-value v`)
    Rule("secret-store-value", "secret",
         r"(?i)\bsecrets?[ \t]+(?:put|put-secret|set|create|add|write|update)\b[^\n|;&]{0,200}?[ \t]--(?:string-value|secret-string|secret-value|value)(?:[ \t]+|=)"
         r"((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&<>])+)", "pwvalue",
         options={"set_pattern": r"(?i)[ \t]--(?:string-value|secret-string|secret-value|value)[ \t=]"}),
    # Kickstart's root password (`rootpw --plaintext v`; `--iscrypted` holds a hash, which stays)
    Rule("kickstart-rootpw", "password",
         r"(?m)^[ \t]*rootpw(?:[ \t]+--(?:plaintext|lock|allow-ssh))*[ \t]+([^\s\-][^\s]{3,200})[ \t]*\r?$", "pwvalue",
         options={"set_pattern": r"(?m)^[ \t]*rootpw[ \t]"}),
    # Windows' unattended setup: `<AdministratorPassword>` / `<Password>` holding a `<Value>`
    # (base64 of the password and its element's name when `<PlainText>false</PlainText>`)
    Rule("unattend-password", "password",
         r"(?i)<(?:AdministratorPassword|Password|AutoLogonPassword|DomainPassword)>[ \t\r\n]*<Value>([^<\n]{4,400})</Value>",
         "pwvalue", options={"set_pattern": r"(?i)Password>[ \t\r\n]*<Value>"}),
    # Confluent Cloud's API key as the SASL user of a Kafka client (`PlainLoginModule required
    # username="KEY" password="SECRET"`): 16 capitals and digits
    _tok("confluent-api-key", "api_key",
         r"PlainLoginModule[ \t]+required[ \t]+username=\\?[\"']([A-Z0-9]{16})\\?[\"']", min_entropy=3.0,
         needs_digit=True, set_pattern=r"PlainLoginModule[ \t]+required[ \t]+username="),
    # what offensive-security tools print when they find a password: a cracked hash and its
    # plaintext (`hashcat --show`, `john --show`: `user:NTLM:plaintext`, `$krb5tgs$...:plaintext`,
    # a JWT and its HS256 secret), with a cracking tool named within 4 KB (`arguments.h_cracked`)
    Rule("cracked-hash", "password",
         r"(?m)^(?:[^\s:]{1,64}:)?(?:[^\s:]{1,64}:)?(?:[0-9a-fA-F]{32,128}|\$[a-z0-9]+\$[^\s:]{8,}"
         r"|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+):([^\n:]{4,128})\r?$", "cracked",
         options={"near": re.compile(rb"(?i)hashcat|\bjohn[ \t]+--|\bjtr\b|\.pot\b|potfile|Status\.{3,}:[ \t]*Cracked"),
                  "set_pattern": r"(?m)(?:[0-9a-fA-F]{32}|\$[a-z0-9]+\$[^\s:]{8}|eyJ[A-Za-z0-9_\-]+\.[^\s:]+):[^\n:]{4}"}),
    # a credential a login scanner or a sprayer found (Metasploit's `Success: 'DOMAIN\\user:v'`,
    # NetExec's and CrackMapExec's `[+] domain\\user:v (Pwn3d!)`), a combolist's `e-mail:v` line
    Rule("found-login", "password",
         r"(?m)(?:\bSuccess:[ \t]+'[^'\n:]{1,100}:([^'\n]{4,200})'"
         r"|\[\+\][ \t]+[\w.\-]{1,100}\\[\w.$\-]{1,100}:([^\s]{4,200})(?:[ \t]+\(Pwn3d!\)|[ \t]*\r?$)"
         r"|^(?:[^\s:]{1,200}:\d{1,9}:|\d{1,9}:)?[\w.+\-]{1,64}@[\w\-]{1,63}(?:\.[\w\-]{1,63}){1,8}:([^\s:/]{4,128})\r?$)",
         "found_login", options={"set_pattern": r"(?m)\bSuccess:[ \t]+'|\[\+\][ \t]+[\w.\-]+\\|@[\w\-]+(?:\.[\w\-]+)+:[^\s:/]{4}[^\s:]*\r?$"}),
    # FTP's and POP3's `USER name` then `PASS v` (a packet capture followed as text, a session log)
    Rule("protocol-pass", "password",
         r"(?m)^[ \t]*USER[ \t]+[^\s]{1,100}[ \t]*\r?\n(?:[^\n]{0,100}\n){0,6}?[ \t]*PASS[ \t]+([^\s]{4,200})[ \t]*\r?$",
         "pwvalue", options={"set_pattern": r"(?m)^[ \t]*PASS[ \t]+[^\s]"}),
    # impacket's secretsdump: an LSA secret's cleartext after its name (`[*] DefaultPassword` then
    # `(Unknown User):v`, `[*] _SC_service` then `DOMAIN\\user:v`)
    Rule("lsa-secret", "password",
         r"(?m)^\[\*\][ \t]+(?:DefaultPassword|_SC_[^\s]{1,100})[ \t]*\r?\n[^\n:]{1,100}:([^\n]{4,200}?)[ \t]*\r?$",
         "pwvalue", options={"set_pattern": r"(?m)^\[\*\][ \t]+(?:DefaultPassword|_SC_)"}),
    # SMB clients' `-U user%password`, Windows `net use \\host\share /user:NAME password`
    Rule("smb-user-password", "password",
         r"(?:^|[\s;&|(`\"'])(?i:smbclient|rpcclient|smbmap|smbget|smbcacls)(?:[ \t]+[^\s|;&<>]+)*?[ \t]+"
         r"(?:-U|--user(?:name)?)(?:[ \t]+|=)[\"']?[^\s%\"']+%([^\s\"']+)", "pwvalue"),
    Rule("net-use-password", "password",
         r"(?i)\bnet[ \t]+use[ \t]+[^\n]*?/user:[^\s]+[ \t]+([^\s/\"'][^\s\"']*)", "pwvalue"),
    # .pgpass: `host:port:database:user:password`, one entry per line, nothing else on it
    Rule("pgpass-line", "password",
         r"(?m)^[ \t]*[A-Za-z0-9_.*\-]+:(?:\d{1,5}|\*):[A-Za-z0-9_.*\-]+:[A-Za-z0-9_.*@\-]+:((?:\\[:\\]|[^\s:]){6,})[ \t]*\r?$",
         "pwvalue"),   # a `:` or `\` in the password is escaped with `\` (PostgreSQL's libpq docs)
    # network gear: Cisco IOS / NX-OS lines with a type-0 (clear) or type-7 (reversible) password or
    # key (types 5, 8 and 9 are hashes: no digit 0 or 7, no finding); SNMP communities and v3 users
    Rule("cisco-password", "password",
         r"(?m)^[ \t]*(?:enable[ \t]+|username[ \t]+\S+[ \t]+(?:privilege[ \t]+\d+[ \t]+)?)?"
         r"(?:password|secret|key|key-string|authentication-key)[ \t]+[07][ \t]+(\S+)[ \t]*\r?$", "pwvalue"),
    Rule("snmp-community", "password",
         r"(?m)^[ \t]*(?:snmp-server[ \t]+community|r[ow]community6?|com2sec[ \t]+\S+[ \t]+\S+)[ \t]+(\S+)", "pwvalue"),
    Rule("snmp-v3-user", "password",
         r"(?m)^[ \t]*(?:createUser|usmUser)[ \t]+\S+[ \t]+(?:MD5|SHA(?:-\d+)?)[ \t]+(\"[^\"\n]+\"|\S+)", "pwvalue"),
    Rule("snmp-v3-privacy", "password",
         r"(?m)^[ \t]*(?:createUser|usmUser)[ \t]+\S+[ \t]+(?:MD5|SHA(?:-\d+)?)[ \t]+(?:\"[^\"\n]+\"|\S+)"
         r"[ \t]+(?:DES|AES(?:-?\d+)?)[ \t]+(\"[^\"\n]+\"|\S+)", "pwvalue"),
    # Subversion's cached credentials (`~/.subversion/auth/svn.simple/*`): `K 8` / `password` / `V n` / the value
    _tok("svn-simple-password", "password", r"(?m)^K[ \t]+8\r?\npassword\r?\nV[ \t]+\d+\r?\n([^\r\n]{1,400})"),
    # a Remote Desktop file's password, DPAPI-encrypted for the user who saved it
    _tok("rdp-file-password", "password", r"(?m)^password[ \t]+51:b:([0-9A-Fa-f]{32,})"),
    # a Scala / Kotlin pair: `"sfPassword" -> "v"`, an entry of a `Map(...)` (a plan's `->` follows a
    # value after `=`: `plan-change`)
    Rule("arrow-pair", "secret",
         r"""(?m)(?:^[ \t]*|[(,\[{][ \t\r\n]*)["']([A-Za-z0-9_.\-]{1,100})["'][ \t]*->[ \t]*("[^"\n]+"|'[^'\n]+')""", "jprop",
         options={"set_pattern": r"""["'][ \t]*->[ \t]*["']"""}),
    # Java system properties: `-Dsonar.login=VALUE`, `-Ddb.password=VALUE`, `-Dapi.token=VALUE`
    Rule("java-property", "secret",
         r"(?:^|[\s\"'])-D([A-Za-z0-9_.\-]*(?i:password|passwd|pwd|secret|token|login|apikey|api\.key|credentials?|auth)"
         r"[A-Za-z0-9_.\-]*)=(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)", "jprop"),
    # a quoted string of random base64 with no key at all (detect-secrets' Base64HighEntropyString,
    # bounded): 32-128 characters of upper, lower and digits, as random as a random draw of that
    # length; never a path, an identifier of words, or a public base58 id (an address, an IPFS
    # id); see `handlers._h_entropy`. A string prefix (`b"..."`, `f'...'`) may stand before it.
    # The pattern leaves out what fills every transcript line: a leading `/` (a path), a `-` or `_`
    # among the first 9 characters (a UUID, a typed id: `msg_01...`, `toolu_01...`; a base64url
    # value is found 3 times in 4); the prefilter Set takes it as it is (loosened, its counts
    # would let them back in).
    Rule("quoted-high-entropy", "secret",
         r"""(?:^|[^A-Za-z0-9+/_\\\-])(?:[bBfFrRuU]{1,2})?\\?["']([A-Za-z0-9+][A-Za-z0-9+/]{8}"""
         r"""[A-Za-z0-9+/_\-]{23,119}={0,2})\\?["']""", "entropy", 4.5, {"exact_in_set": True}),
    # a secret keyword, then the value with no operator: `pdfshift-KEY 4f1c...`, `api key 9Xk...`
    Rule("keyword-value", "api_key",
         r"(?i)(?:^|[^A-Za-z0-9_.\-])([A-Za-z0-9_.\-]*(?:api[ _\-]?key|token|secret|passw(?:or)?d|key|auth))"
         r"[ \t]+`?([A-Za-z0-9_\-+/=.]{24,200})(?:[^A-Za-z0-9_\-+/=.]|$)", "kwvalue"),
    # a passphrase with spaces, unquoted, after a password key on its own line (YAML, INI,
    # .properties: `spring.mail.password=abcd efgh ijkl mnop`, a Gmail app password; Ansible's
    # `ansible_become_pass: ...`)
    Rule("passphrase-line", "password",
         r"(?im)^[ \t]*(?:- )?([A-Za-z0-9_.\-]*(?:password|passphrase|passwd|pass_phrase|(?:become|ssh|sudo|db|smtp|mail|admin|root|user|vault|login)_pass))(?::|[ \t]*=)[ \t]*"
         r"([^\s\"'#|>&{$%<\[][^\n\"'#]{0,80}[ \t][^\n\"'#]{0,80}?)[ \t]*\r?$", "phrase"),
    # --- credentials in URLs, connection strings, headers, commands ----------------------------
    # one rule (one label) for every key word: a second Set entry cost ~2% of the prefilter pass
    _tok("passphrase", "password",
         key_word("password", "passwd", "pass_phrase", "pwd", "psk", "secret", "api_key", "secret_key",
                   "access_key", "ssh_pass", "become_pass", "sudo_pass", "db_pass", "smtp_pass",
                   "mail_pass", "admin_pass", "root_pass", "user_pass") + PASSPHRASE_TAIL,
         placeholder_ok=True),
    # (a database's URL with its `:` left out too: the error that says it cannot parse it echoes it)
    Rule("url-userinfo", "password",
         r"(?:\b[A-Za-z][A-Za-z0-9+.\-]*:|\b(?i:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql"
         r"|sqlserver|oracle|snowflake|clickhouse)(?:\+\w+)?)//([^\s:@/\"'<>\\]*):([^\s@/\"'<>\\]+)@", "userinfo"),
    # a token as the whole user part of a URL, no password: a Sentry DSN's key
    # (`https://KEY@o1.ingest.sentry.io/2`), a clone URL's token (`https://TOKEN@git.example.com/r`)
    _tok("url-user-token", "token",
         r"\b[A-Za-z][A-Za-z0-9+.\-]*://([A-Za-z0-9_\-]{20,200})@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+",
         min_entropy=3.0, needs_digit=True, not_words=True),
    # a NuGet.org API key (`oy2` and 43 lower-case letters and digits), as `nuget push -k` and
    # NuGet.Config's `<apikeys>` hold it
    _tok("nuget-api-key", "api_key", r"\b(oy2[a-z0-9]{43})\b", min_entropy=3.0, needs_digit=True),
    # Caddy's DNS challenge credentials: `acme_dns cloudflare <token>`, `dns cloudflare <token>`
    _tok("caddy-dns-token", "token",
         r"(?m)^[ \t]*(?:acme_)?dns[ \t]+(?:" + CADDY_DNS_PROVIDERS + r")[ \t]+([A-Za-z0-9_\-]{20,200})[ \t]*(?:#[^\n]*)?\r?$",
         min_entropy=3.5, needs_digit=True),
    # an Anaconda token in a channel URL's path (`https://conda.anaconda.org/t/<token>/<channel>`)
    _tok("anaconda-channel-token", "token",
         r"\b(?:conda\.|repo\.)?anaconda\.(?:org|com|cloud)/t/([A-Za-z0-9][A-Za-z0-9_\-]{15,200})/",
         min_entropy=3.0, needs_digit=True),
    Rule("url-query-secret", "password",
         r"(?i)[?&;]((?:[a-z0-9_\-]*(?:password|passwd|pwd|secret|token)|api[_\-]?key|apikey|access[_\-]?key|client[_\-]?secret"
         r"|[a-z0-9_\-]*signature|sig))"
         r"=([^&\s\"'<>#;]{4,})", "query"),
    # OpenWeather's API key in a query (`&appid=` and 32 hex; other `appid`s are public app ids)
    _tok("openweather-appid", "token", r"[?&;]appid=([0-9a-f]{32})(?:[^0-9A-Za-z]|$)", needs_digit=True),
    # `Authorization: ...`, `"Authorization", "..."` (a header set by a call), `Authorization "..."`
    # (nginx `proxy_set_header`, Apache `RequestHeader set`)
    Rule("authorization-header", "authorization",
         r"(?i)\b(?:proxy-)?authorization(?:\\?[\"'])?(?:[ \t]*[:=][ \t]*(?:\\?[\"'])?|(?:[ \t]*,)?[ \t]+\\?[\"']|,\\?[\"'])"
         r"((?:bearer|basic|token|digest|api-token|apikey|sso-key|ssws|negotiate|ntlm|hmac)[ \t]+)?"
         r"([A-Za-z0-9._~+/=:@!$%^&*\-]{8,})", "header"),
    Rule("bearer-token", "bearer",
         r"\b[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+([A-Za-z0-9._~+/=\-]{16,})", "bearer"),
    Rule("api-key-header", "api_key",
         r"(?i)\b((?:x-)?(?:[a-z]+-)?(?:api-?key|auth-token|private-token|api-token|access-token|token|apikey|art-api))"
         r"(?:\\?[\"'])?(?:[ \t]*:[ \t]*(?:\\?[\"'])?|[ \t]+\\?[\"'])([A-Za-z0-9._~+/=\-]{8,})", "header_kv"),
    Rule("curl-user", "password",
         r"(?:^|[ \t])(?:-u|--user)(?:=|[ \t]+)((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'])+)", "curl_user"),
    # .netrc (curl, git, ftp): `machine HOST [login U] [account A] [port P] password VALUE`, on one
    # line or over several; the `machine`/`default` entry start is what tells it from prose
    Rule("netrc-password", "password",
         r"(?:^|[ \t\r\n])(?:machine[ \t]+[^\s]+|default)(?:[ \t\r\n]+(?:login|account|port)[ \t]+[^\s]+)*"
         r"[ \t\r\n]+password[ \t]+([^\s]+)", "pwvalue"),
    # the Erlang distribution cookie (`vm.args`, `erl -setcookie`), HAProxy's userlist and stats
    # passwords, PowerShell's plain text turned into a SecureString
    Rule("erlang-cookie", "password", r"(?m)(?:^|[ \t])-setcookie[ \t]+((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'])+)", "pwvalue"),
    Rule("haproxy-password", "password",
         r"\b(?:insecure-password|stats[ \t]+auth[ \t]+[^\s:]+:)[ \t]*((?:\"[^\"\n]*\"|[^\s\"])+)", "pwvalue"),
    Rule("securestring-plaintext", "password",
         r"(?i)\bConvertTo-SecureString(?:[ \t]+-String)?[ \t]+(\"[^\"\n]*\"|'[^'\n]*')[^\n]*-AsPlainText", "pwvalue"),
    # credentials someone types in a chat: `creds for the box: admin / v`, `login: admin:v`
    Rule("chat-credentials", "password",
         r"(?i)\b(?:creds?|credentials|login|log[ \-]?in|logging[ \t]+in|logon|sign[ \-]?in|signing[ \t]+in|anmeld(?:en|ung)|zugangsdaten|logga(?:r)?"
         r"|inloggning|inloggen|identifiants|connexion|credenciai?s|credenciales|dane logowania)\b"
         r"[^\n\\]{0,40}?[: \t][ \t]*`?[A-Za-z0-9._@\-]{2,40}`?(?:[ \t]*(?:/|:)|[ \t]+(?:with|and|pw|pass(?:word)?:?))[ \t]*"
         r"`?([^\s/:\\\"`]{8,64})", "chat"),
    # (in backquotes too: `` `qa@x.dev` / `v` ``; not over a JSON-escaped line break, nor a JSON string's end)
    # a credential told in a sentence (`told.h_told`): a secret word, up to eight words, a link
    # (`is` or `:` after a word: right after it, `prose-is` and the assignment rule read it; `->`, `—`),
    # the value, maybe on the next line (of a quoted reply too: `> > `): `the API key we use is
    # VALUE`, `Pre-shared key (for the L2TP fallback): VALUE`, `admin token for the import -> VALUE`
    Rule("told-credential", "secret",
         r"(?i)(?:^|[^A-Za-z0-9_.\-])((?:[A-Za-z0-9_.\-]+[ \t])?[A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd"
         r"|secret|token|api[ _\-]?key|access[ _\-]?key|psk|credentials?|key))s?"
         r"(?:(?:[ \t]+[^\s:=]+){1,8}?[ \t]+" + TOLD_LINK + r"|(?:[ \t]+[^\s:=]+){0,8}?[ \t]+(?:->|=>|\xe2\x80\x94|\xe2\x86\x92)"
         r"|(?:[ \t]+[^\s:=]+){1,8}?[ \t]*:)"
         r"[ \t]*(?:\r?\n[ \t]*(?:>[ \t]*)*)?[`*]?([A-Za-z0-9!#$%&*+\-./:=?@^_~]{8,200})", "told",
         options={"set_pattern": r"(?i)(?:password|passwd|passphrase|pwd|secret|token|api[ _\-]?key|access[ _\-]?key|psk"
                                 r"|credentials?|key)s?[ \t]", "fallback": True, "set_group": "keyed"}),
    # ... and a password's value right after its word, no link (`..., password 5yRU9U-jpDKXZ, expires`)
    Rule("told-password", "password",
         r"(?i)(?:^|[^A-Za-z0-9_.\-])([A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd))[ \t]+"
         r"([A-Za-z0-9!#$%&*+\-./:=?@^_~]{8,200})", "told",
         options={"set_pattern": r"(?i)(?:password|passwd|passphrase|pwd)[ \t]+[A-Za-z0-9!#$%&*+\-./:=?@^_~]",
                  "set_group": "keyed", "fallback": True}),
    # ... and a passphrase told between quotes, words between its word and the link (`The signing
    # key passphrase for the release builds is `maple river 7 lantern``)
    Rule("told-phrase", "password",
         r"(?i)(?:^|[^A-Za-z0-9_.\-])([A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd))s?\*{0,2}(?:[ \t]+[^\s:=\"]+){1,8}?"
         r"(?:[ \t]+" + TOLD_LINK + r"(?:[ \t]+now)?[ \t]*:?|[ \t]*:)[ \t]*"
         r"(?:\"([^\"\n]{8,120})\"|`([^`\n]{8,120})`|'([^'\n]{8,120})'|\xe2\x80\x9c([^\n]{8,120}?)\xe2\x80\x9d)", "told_phrase",
         options={"set_pattern": TOLD_WORD_HEAD, "set_group": "keyed"}),
    # ... and one told with no quotes, that a remark in brackets right after says how to type
    # (`passphrase is: correct horse battery staple 1987 (no quotes, all lower case)`, `Passwort ist
    # Sommerregen im Hafen 1987 (mit Leerzeichen)`): where it ends is told; on the link's line or the next
    Rule("told-bare-phrase", "password",
         r"(?i)(?:^|[^A-Za-z0-9_.\-])([A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd)|" + PROSE_WORDS + r")s?"
         r"(?:[ \t]+[^\s:=`\"]+){0,6}?[ \t]+" + TOLD_LINK + r"(?:[ \t]*:[ \t]*|[ \t]*\r?\n[ \t]*|[ \t]+)"
         r"([^\s\"'`(\[{<][^\n\"'`()\[\]{}<>=@/\\]{4,120}?)[ \t]*(?:\r?\n[ \t]*)?" + TOLD_REMARK, "told_bare_phrase",
         options={"set_pattern": TOLD_WORD_HEAD,
                  "set_group": "keyed", "fallback": True}),
    # an e-mail address and a password as a pair (a tuple, a list, a set of test accounts):
    # `("qa-admin@acme.io", "v")`, with upper and lower case and digits (`h_login_pair`)
    Rule("login-pair", "password",
         r"""(?:^|[\s=,:(\[{])[(\[{][ \t]*["'][^"'\s@]{1,64}@[A-Za-z0-9.\-]{1,100}\.[A-Za-z]{2,24}["'][ \t]*,[ \t]*"""
         r"""["']([^"'\s]{8,64})["'][ \t]*[)\]}]""", "login_pair"),
    # Redis: `requirepass` / `masterauth` in redis.conf (a `grep -n` line number before it too)
    Rule("redis-conf-password", "password",
         r"(?m)^[ \t]*(?:\d+:)?(?:requirepass|masterauth)[ \t]+((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'])+)", "pwvalue"),
    # a password a tool generated and printed (each line may carry a compose service's `name | `
    # prefix, `_LOG_PREFIX`): Elasticsearch's `elasticsearch-reset-password`
    # (`... user successfully reset.` then `New value: v`, a compose service's `name | ` prefix
    # allowed) and `elasticsearch-setup-passwords` (`PASSWORD elastic = v`), MySQL's first start
    # (`A temporary password is generated for root@localhost: v`). A line may also break
    # JSON-escaped (`\n`: the output stored inside a JSON string).
    Rule("generated-password", "password",
         r"(?m)(?:user successfully reset\.[ \t]*(?:\r?\n|(?:\\r)?\\n)(?:[\w.\-]{1,40}[ \t]+\|[ \t]+)?New value:"
         r"|(?:^|\\n)PASSWORD [\w.\-]{1,64} =|temporary password is generated for [^\s:]{1,100}:"
         # Jenkins' first start (`... password to proceed to installation:`, a blank line, the
         # password), Elasticsearch's (`Password for the elastic user (reset with ...):`, the next
         # line; `Copy the following enrollment token ...:`, the next line)
         r"|password to proceed to installation:(?:[ \t]*(?:\r?\n|(?:\\r)?\\n)" + _LOG_PREFIX + r")+"
         r"|Password for the [\w.\-]{1,40} user[^\n]{0,80}:[ \t]*\r?\n" + _LOG_PREFIX
         + r"|enrollment token[^\n]{0,120}:[ \t]*\r?\n" + _LOG_PREFIX
         # the Elasticsearch package's first install (`... for the elastic built-in superuser is : v`)
         + r"|generated password for the [\w.\-]{1,40} built-in superuser is[ \t]*:)"
         r"[ \t]*([^\s\\]{8,1000})", "generated",
         options={"set_pattern": r"successfully reset\.|PASSWORD [\w.\-]+ =|temporary password is generated"
                                 r"|password to proceed to installation:|Password for the [\w.\-]+ user|enrollment token"
                                 r"|generated password for the"}),
    # Mattermost's incoming webhooks: `https://chat.example.com/hooks/<26 characters>`
    _tok("mattermost-webhook", "webhook", r"\bhttps?://[A-Za-z0-9.\-]+(?::\d+)?/hooks/([a-z0-9]{26})\b",
         min_entropy=3.0, needs_digit=True),
    # a Google Authenticator export (`otpauth-migration://offline?data=...`: every account's seed)
    _tok("otpauth-migration", "secret", r"\botpauth-migration://offline\?data=([A-Za-z0-9%+/=_\-]{20,})"),
    # a tuple of user and password given to an auth parameter: `auth=("user", "v")`, `AUTH = ('neo4j', 'v')`
    _command("auth-tuple", "password",
         r"(?i)\b[a-z_]*auth[a-z_]*[ \t]*[=:][ \t]*[(\[][ \t]*[\"'][^\"'\n]{1,100}[\"'][ \t]*,[ \t]*"
         + QUOTED_VALUE + r"[ \t]*[)\]]",
         r"(?i)auth[a-z_]*[ \t]*[=:][ \t]*[(\[][ \t]*[\"']"),
    # PgBouncer's auth file (`userlist.txt`, `auth_file`): lines of `"user" "password"`, in a text
    # that names the file or PgBouncer (the same shape is a Valve KeyValues line)
    Rule("pgbouncer-userlist", "password",
         r"(?m)(?:^|\\n)\\?\"[A-Za-z0-9_.@\-]{1,64}\\?\"[ \t]+\\?\"([^\"\s\\]{8,200})\\?\"", "userlist",
         options={"set_pattern": r"[A-Za-z0-9_.@\-]\\?\"[ \t]+\\?\"[^\"\s]"}),
    # Redis' `AUTH [user] password` command: at a redis-cli prompt (`6379> auth v`), a line's start,
    # in a health check's script (HAProxy's `tcp-check send AUTH\ v\r\n`)
    Rule("redis-auth", "password",
         r"(?m)(?:(?:^|\\n)[ \t]*AUTH2?|>[ \t]*(?i:auth2?)|\bsend[ \t]+AUTH2?)(?:\\ |[ \t])+"
         r"(?:([A-Za-z0-9_.@\-]{1,64})(?:\\ |[ \t])+)?([^\s\\\"'`]{8,200})",
         "redis_auth", options={"set_pattern": r"AUTH2?(?:\\ |[ \t])|>[ \t]*(?i:auth)"}),
    # SMTP's AUTH PLAIN / AUTH LOGIN: base64 of the user and password, as a client's debug log shows it
    _tok("smtp-auth", "password", r"\bAUTH[ \t]+(?:PLAIN|LOGIN)[ \t]+([A-Za-z0-9+/]{12,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
         min_entropy=3.0),
    # what a command prints when it is asked for one secret: the output line after it, alone
    # (`kubectl get secret ... -o jsonpath='{.data.X}'`, `vault kv get -field=password`, `aws
    # secretsmanager get-secret-value ... --output text`, `gcloud secrets versions access`, `az
    # keyvault secret show --query value`, `op read`, `doppler secrets get --plain`, `heroku
    # config:get`, `elasticsearch-keystore show`, `cat config/master.key`, `cat` of a file whose
    # name says pass, secret or token: `~/.ansible/vault_pass.txt`, not `/etc/passwd`)
    Rule("printed-secret", "secret",
         r"(?m)(\bkubectl[ \t][^\n]*jsonpath=[^\n]*\.data\.[^\n]*|\bvault[ \t][^\n]*-field[= ][^\n]*"
         r"|\baws[ \t]+secretsmanager[ \t]+get-secret-value[^\n]*|\bgcloud[ \t]+secrets[ \t]+versions[ \t]+access[^\n]*"
         r"|\baz[ \t]+keyvault[ \t]+secret[ \t]+show[^\n]*|\bop[ \t]+read[ \t][^\n]*|\bdoppler[ \t]+secrets[ \t]+get[^\n]*"
         r"|\bheroku[ \t]+config:get[^\n]*|\bnetlify[ \t]+env:get[^\n]*|\bterraform[ \t]+output[ \t][^\n]*-raw[^\n]*"
         r"|\belasticsearch-keystore[ \t]+show[^\n]*|\bargocd[ \t]+admin[ \t]+initial-password[^\n]*"
         r"|\bcat[ \t]+[^\n|;&]*(?:master\.key|credentials\.key|\.secret|secret\.txt|token\.txt|\.token"
         r"|[/ ][^\s/|;&]*(?:pass[_.]|[_\-]pass|secret|token)[^\s/|;&]*))"
         # (a value printed with no line break runs into the next prompt: `v$ terraform ...`; the
         # match ends at the prompt, so the command after it is read too)
         r"\r?\n[ \t]*([^\s]{8,1000}?)(?:\$ |[ \t]*\r?$)", "printed"),
    # a literal piped into a command that stores it as a secret (`echo "v" | wrangler secret put K`,
    # `gh secret set`, `docker secret create`, `docker login --password-stdin`), or into an
    # environment variable whose name says secret (`vercel env add K`, `netlify env:set K`)
    Rule("piped-secret", "secret",
         r"\b(?:echo|printf)(?:[ \t]+-[a-zA-Z]+)*(?:[ \t]+(?:'%s(?:\\n)?'|\"%s(?:\\n)?\"))?[ \t]+"
         r"(?:\\?\"([^\"\\\n]{6,400})\\?\"|'([^'\n]{6,400})'|([^\s\"'|;&\\]{6,400}))"
         r"[ \t]*\|[ \t]*(?:sudo[ \t]+)?(?:npx[ \t]+|bunx[ \t]+)?((?:vercel[ \t]+env[ \t]+add|netlify[ \t]+env:set)[ \t]+[^\s|;&]+"
         r"|wrangler[ \t]+(?:pages[ \t]+)?secret[ \t]+put|gh[ \t]+secret[ \t]+set"
         r"|docker[ \t]+secret[ \t]+create|fly(?:ctl)?[ \t]+secrets[ \t]+(?:set|import)"
         r"|supabase[ \t]+secrets[ \t]+set|(?:docker|podman|helm[ \t]+registry|nerdctl)[ \t]+login[^\n|]*--password-stdin"
         r"|kubectl[ \t]+create[ \t]+secret|sudo[ \t]+-[A-Za-z]*S|passwd[ \t]+--stdin|chpasswd"
         r"|(?:pass|gopass)[ \t]+(?:insert|set)|vault[ \t]+kv[ \t]+put|op[ \t]+item[ \t]+create)", "piped"),
    # MySQL / MariaDB clients: `-pVALUE` glued to its flag (`-p VALUE` prompts, VALUE is the database)
    Rule("mysql-dash-p", "password",
         r"(?:^|[\s;&|(`\"'/])(?i:mysql[a-z_\-]*|mariadb[a-z_\-]*)(?:[ \t]+[^\s|;&<>]+)*?[ \t]+-p"
         r"((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&<>])+)", "pwvalue"),
    # session cookies in a Cookie / Set-Cookie header (`"Cookie", "..."` set by a call too), a JSON
    # `cookie` field, `curl -b` / `--cookie`
    Rule("session-cookie", "token", COOKIE_HEADER + r"(?:[^\n]*?[;,][ \t]*)?"
         r"((?:" + SESSION_COOKIE + r")=)([^;\s,\"'\\]{8,})", "cookie",
         options={"set_pattern": COOKIE_HEADER + r"[^\n]", "set_group": "positional"}),   # one Set entry with cookie-header
    # any long cookie in a Cookie / Set-Cookie header, whatever its name (`.AspNetCore.Cookies`,
    # `auth0`, `__Secure-next-auth.session-token`): a request's cookies are its session
    Rule("cookie-header", "token", COOKIE_HEADER + r"([^\n]{24}[^\n]*)", "cookie_header",
         options={"set_pattern": COOKIE_HEADER + r"[^\n]"}),
    # a session cookie as a field of its own: `cookies={"sessionid": "..."}` (a cookies word earlier
    # on the line), a browser's stored cookie (`{"name": "sessionid", "value": "..."}`: Playwright's
    # storage state, a devtools export)
    # a Netscape cookie jar's line (curl -c, wget, yt-dlp): domain, flag, path, secure, expiry, name,
    # value, tab-separated: a session cookie's value (by its name, as a cookie export's below)
    Rule("cookie-jar-line", "token",
         r"(?m)^(?:#HttpOnly_)?\.?[A-Za-z0-9][A-Za-z0-9.\-]*\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t\d+\t"
         r"((?i:[^\t\n]{0,80}(?:sess|sid|auth|token|jwt|remember|login)[^\t\n]{0,80}))\t([^\t\r\n]{16,})", "cookie",
         options={"set_pattern": r"\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t\d+\t"}),
    # a cookie export's object (Cookie-Editor, EditThisCookie, Playwright's storage state): a session
    # cookie's "name", then its "value" a few fields later in the same object (right after it:
    # `session-cookie-field`)
    Rule("cookie-export-value", "token",
         r"""(?i)"name"[ \t]*:[ \t]*"([^"\n]{0,80}(?:sess|sid|auth|token|jwt|remember|login)[^"\n]{0,80})"[ \t]*,"""
         r"""(?:[ \t\r\n]*"[A-Za-z]{1,30}"[ \t]*:[ \t]*(?:"[^"\n]{0,300}"|[\w.\-]{1,40})[ \t]*,)+?"""
         r"""[ \t\r\n]*"value"[ \t]*:[ \t]*"([^"\s;,\\]{16,})\"""", "cookie",
         options={"set_pattern": r"""(?i)"name"[ \t]*:[ \t]*"[^"\n]{0,80}(?:sess|sid|auth|token|jwt|remember|login)""",
                  "near": re.compile(rb'"(?:domain|httpOnly|hostOnly|sameSite|expirationDate|expires)"[ \t]*:')}),
    Rule("session-cookie-field", "token",
         r"(?i)(?:\bcookies?\b[^\n]{0,80}?[\"']?(" + SESSION_COOKIE + r")[\"']?[ \t]*[:=][ \t]*\\?[\"']"
         r"|[\"']name\\?[\"'][ \t]*:[ \t]*\\?[\"'](?:" + SESSION_COOKIE + r")\\?[\"'][ \t]*,[ \t]*\\?[\"']value\\?[\"']"
         r"[ \t]*:[ \t]*\\?[\"'])([^\"'\s;,\\]{8,})", "cookie"),
    # a `__Host-` or `__Secure-` cookie whose name says session or auth, NAME=VALUE anywhere (copied
    # from devtools, a HAR, a log): a long random value is the session
    _tok("prefixed-cookie", "token",
         r"(?i)(?:^|[^A-Za-z0-9_\-])__(?:Host|Secure)-[A-Za-z0-9_.\-]{0,40}(?:session|sess|sid|auth|token|jwt|login)"
         r"[A-Za-z0-9_.\-]{0,40}=([A-Za-z0-9%+/=_.\-]{24,1000})", min_entropy=4.0, needs_digit=True,
         set_pattern=r"(?i)__(?:Host|Secure)-"),
    # --- commands that take a password as a positional argument (redact.arguments.h_command) ---
    # archives: `zip -P v`, `unzip -P v`, `7z a -pv`, `rar a -pv`
    _command("archive-password", "password",
         r"(?:^|[\s;&|(`\"/\\])(?:zip|zipcloak|unzip)(?:\.exe)?\b[^\n|;&]{0,200}?[ \t]-[A-Za-z]*P[ \t]+" + COMMAND_VALUE
         + r"|(?:^|[\s;&|(`\"/\\])(?:7z|7za|7zr|7zz|rar|unrar)(?:\.exe)?\b[^\n|;&]{0,200}?[ \t]-p" + COMMAND_VALUE,
         r"(?:zip|zipcloak|7z[arz]?|rar)\b"),
    # `rabbitmqctl add_user u v`, `rabbitmqctl change_password u v`, MinIO's `mc alias set n url key v`
    _command("command-password", "password",
         r"\brabbitmqctl(?:[ \t]+-\S+)*[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+" + COMMAND_VALUE
         + r"|\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+" + COMMAND_VALUE,
         r"\brabbitmqctl\b|\bmc[ \t]+(?:alias|config)[ \t]"),
    # `cargo login <token>`
    _command("login-argument", "token",
         r"\bcargo[ \t]+login(?:[ \t]+--registry[ \t=]+\S+)?[ \t]+" + COMMAND_VALUE,
         r"\bcargo[ \t]+login[ \t]"),
    # HTTPie's `http -a user:v` / `--auth user:v`
    _command("httpie-auth", "password",
         r"(?:^|[\s;&|(\"'])(?:http|https|xh|xhs)(?:[ \t][^\n|;&]{0,200}?)?[ \t](?:-a|--auth)[ \t=]+[^\s:\"']+:" + COMMAND_VALUE,
         r"[ \t](?:-a|--auth)[ \t=]"),
    # Apache's `htpasswd -b [file] user v` (`-n`: no file)
    Rule("htpasswd-batch", "password",
         r"\bhtpasswd((?:[ \t]+-[A-Za-z0-9]+)+)[ \t]+(\S+)[ \t]+(\S+)"
         r"(?:[ \t]+((?:\\?\"[^\"\\\n]*\\?\"|'[^'\n]*'|[^\s|;&\"'\\])+))?", "htpasswd",
         options={"set_pattern": r"\bhtpasswd[ \t]+-"}),
    # SQL: `IDENTIFIED BY 'v'` (MySQL, Oracle), `SET PASSWORD ... = 'v'`, MySQL's `PASSWORD('v')`
    _command("sql-password", "password",
         r"(?i)\bIDENTIFIED(?:[ \t]+WITH[ \t]+\S+)?[ \t]+BY[ \t]+(?:PASSWORD[ \t]+)?(?:\\?\"([^\"\\\n]{1,200})\\?\"|'([^'\n]{1,200})')"
         + r"|\b(?:SET[ \t]+PASSWORD\b[^=\n]{0,200}=[ \t]*(?:PASSWORD[ \t]*\([ \t]*)?|PASSWORD[ \t]*\([ \t]*)"
         + QUOTED_VALUE,
         r"(?i)\bIDENTIFIED[ \t]|\bPASSWORD[ \t]*\(|\bSET[ \t]+PASSWORD\b"),
    # a template's default for a secret-named variable: Jinja's `{{ db_password | default('v') }}`,
    # Helm's `{{ .Values.redis.password | default "v" }}` and `{{ default "v" .Values.redis.password }}`
    Rule("template-default", "secret",
         r"""\{\{-?[ \t]*\.?([A-Za-z0-9_.]{1,100})[ \t]*\|[ \t]*default[ \t]*\(?[ \t]*("[^"\n]+"|'[^'\n]+')""", "jprop",
         options={"set_pattern": r"\|[ \t]*default[ \t]*\(?[ \t]*[\"']"}),
    Rule("template-default-first", "secret",
         r"""\{\{-?[ \t]*default[ \t]+("[^"\n]+"|'[^'\n]+')[ \t]+\.?([A-Za-z0-9_.]{1,100})""", "jprop",
         options={"set_pattern": r"\{\{-?[ \t]*default[ \t]+[\"']", "name_group": 2}),
    # libcurl's `CURLOPT_USERPWD, "user:v"` and `CURLOPT_PASSWORD, "v"` (C, PHP's curl_setopt)
    _command("curl-option-password", "password",
         r"CURLOPT_(?:PROXY)?USERPWD[ \t]*,[ \t]*L?\"[^\":\n]*:([^\"\n]{1,200})\""
         r"|CURLOPT_(?:PROXY)?PASSWORD[ \t]*,[ \t]*L?\"([^\"\n]{1,200})\"",
         r"CURLOPT_"),
    # Go's MySQL DSN: `user:v@tcp(host:3306)/db`, `user:v@(localhost)/`, `user:v@unix(/run/...)`
    _command("go-mysql-dsn", "password",
         r"(?:^|[\s\"'`=(,])[A-Za-z0-9_.\-]{1,64}:([^\s\"'`]{1,200}?)@(?:tcp|unix|udp)?\(",
         r"@(?:tcp|unix|udp)?\(", bare=True),
    # a Terraform state's generated password: a `random_password` resource's `result`
    _command("terraform-random-password", "password",
         r"\"type\"[ \t]*:[ \t]*\"random_password\"[\s\S]{0,1000}?\"result\"[ \t]*:[ \t]*\"((?:[^\"\\\n]|\\.){1,200})\"",
         r"\"random_password\""),
    # the string an interpreter printed for a secret-named expression (`(Pdb) p settings.SECRET_KEY`)
    Rule("repl-echo", "secret", REPL_ECHO, "repl"),
    # the keys `az storage account keys list` printed, and Postmark's server token as SMTP login
    _after("azure-storage-keys-output", "azure_storage_key", AZURE_KEYS_COMMAND, 2, values=AZURE_KEY_VALUE, mixed=True),
    _after("postmark-smtp-token", "token", POSTMARK_ANCHOR, 2, values=POSTMARK_TOKEN, before=1024),
    _after("influx-token-output", "token", INFLUX_TOKEN_COMMAND, 4, values=INFLUX_TOKEN_VALUE, mixed=True),
    # a space-separated config's password line (mosquitto, redis, sshd-like): `remote_password v`
    # (`pass` and `secret` in a key of two words or more: `secret santa2024` is prose)
    Rule("spaced-config-password", "password",
         r"(?im)^[ \t]*([A-Za-z0-9_.\-]*(?:password|passwd)|[A-Za-z0-9]+[_.\-][A-Za-z0-9_.\-]*(?:pass|secret))"
         r"[ \t]+([^\s#;\"'=:]{6,200})[ \t]*\r?$",
         "spaced"),
    _after("consul-acl-tokens", "token", CONSUL_TOKENS_BLOCK, 2, values=CONSUL_TOKEN_VALUE, until=b"}"),
    # two-factor recovery codes, each alone on its line after the words that introduce them, a list
    # of three or more (a trace id after "backup codes" is one)
    _after("recovery-codes", "secret", RECOVERY_CODES, 1, values=RECOVERY_CODE, at_least=3),
    # a table (markdown, CSV, TSV) with a password column: the passwords in that column
    Rule("credential-table", "password", CREDENTIAL_TABLE_HEADER, "table",
         options={"set_pattern": r"(?i)" + TABLE_PASSWORD_WORDS, "set_group": "keyed"}),
    # `terraform output -json`: the value of an output marked sensitive (the keys come sorted:
    # sensitive, type, value), also JSON-escaped inside a tool result
    _command("terraform-sensitive-output", "secret",
         r"\\?\"sensitive\\?\"[ \t]*:[ \t]*true[ \t]*,(?:\s|\\[nrt])*\\?\"type\\?\"[ \t]*:[ \t]*\\?\"string\\?\"[ \t]*,"
         r"(?:\s|\\[nrt])*\\?\"value\\?\"[ \t]*:[ \t]*"
         # plain JSON (`\"` is a quote inside the value), or JSON in a JSON string (`\"` ends it)
         r"(?:\"((?:[^\"\\\n]|\\[^\n]){1,1000})\"|\\\"((?:[^\"\\\n]|\\[^\"\n]){1,1000})\\\")",
         r"sensitive\\?\"[ \t]*:[ \t]*true"),
    # Redis ACLs: `ACL SETUSER name on >v ~keys`, a users.acl line `user name on >v ...`
    _command("redis-acl-password", "password",
         r"(?im)(?:\bACL[ \t]+SETUSER[ \t]+\S+|^[ \t]*user[ \t]+\S+[ \t]+(?:on|off|reset)\b)(?:[ \t]+[^\s>]\S*)*?[ \t]+>([^\s]{1,200})",
         r"(?im)setuser|^[ \t]*user[ \t]", bare=True),
    # Postfix's sasl_passwd: `[smtp.example.com]:587 user@example.com:v` (a Gmail app password has
    # spaces; a dotted host, a port and a mail user: `[uvicorn.error] INFO: ...` is a log line)
    _command("postfix-sasl-password", "password",
         r"(?m)^\[[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+\]:\d{1,5}[ \t]+[^\s:@]+@[^\s:]+:([^\n]{1,200}?)[ \t]*\r?$",
         r"(?m)^\[[A-Za-z0-9\-]+\.", bare=True),
    # strongSwan's ipsec.secrets: `: PSK "v"`, `user : EAP "v"`, XAUTH, NTLM, a smartcard's PIN
    # (quoted: `Security: PSK authentication enabled` is a status line)
    _command("ipsec-secret", "password",
         r"(?m)^[^\n:]{0,200}:[ \t]*(?:PSK|EAP|XAUTH|NTLM|PIN)[ \t]+" + QUOTED_VALUE,
         r"(?:PSK|EAP|XAUTH|NTLM|PIN)[ \t]"),
    # Oracle's unquoted `IDENTIFIED BY v` (upper case: `identified by` is also English)
    Rule("sql-password-bare", "password", r"\bIDENTIFIED[ \t]+BY[ \t]+([A-Za-z0-9_#$!@%^*+\-]{8,128})", "prose"),
    # an expect script's answer to a password prompt: `expect "password:"` (or `"*assword*"`)
    # then `send "v\r"`
    _command("expect-send-password", "password",
         r"\bexpect[ \t]+(?:-re[ \t]+)?[\"{][^\"}\n]*(?i:assword|passphrase)[^\"}\n]*[\"}][ \t]*(?:\r?\n|;|\{)[ \t]*"
         r"send[ \t]+(?:--[ \t]+)?\"([^\"\n\\]{1,200})(?:\\r|\\n)?\""
         # pexpect: `child.expect('Password:')`, then `child.sendline('v')`
         r"|\.expect\([ \t]*[rb]?[\"'][^\"'\n]*(?i:assword|passphrase)[^\"'\n]*[\"'][^)\n]*\)[ \t]*(?:\r?\n[ \t]*|;[ \t]*)"
         r"\w+\.send(?:line)?\([ \t]*[rb]?" + QUOTED_VALUE,
         r"\bexpect[ \t]+(?:-re[ \t]+)?[\"{]|\.expect\("),
    # --- secrets code passes by position (redact.arguments) ---------------------------------
    Rule("env-default", "secret", ENV_DEFAULT, "envdefault"),
    # (at most 500 calls read per text: past it, no real file has that many, and crafted text,
    # `login("` repeated, stays linear with a small factor; the calls after it are not read)
    Rule("credential-call", "password", CREDENTIAL_CALL, "call", options={"max_matches": 500}),
    # what an end-to-end test types into a password field: Playwright's `getByLabel('Password').fill('v')`,
    # Cypress' `cy.get('#password').type('v')`, Selenium's `find_element(By.ID, "password").send_keys("v")`,
    # Puppeteer's `page.type('#password', 'v')`, Capybara's `fill_in 'Password', with: 'v'`
    Rule("form-fill", "password",
         r"""(?i)(?:\b(?:getBy\w+|locator|querySelector|find_element\w*|find|get|\$)\([^()\n]{0,120}?\bpass(?:word|wd|phrase)?\b"""
         r"""[^()\n]{0,60}\)(?:[ \t]*\.[A-Za-z_]+\([^()\n]{0,40}\))*[ \t]*\.(?:fill|type|send_keys|sendKeys|setValue"""
         r"""|pressSequentially|press_sequentially)\([ \t]*(?:"([^"\n]{4,200})"|'([^'\n]{4,200})')"""
         r"""|\.(?:fill|type|setValue)\([ \t]*(?:'[^'\n]*\bpass(?:word|wd|phrase)?\b[^'\n]*'|"[^"\n]*\bpass(?:word|wd|phrase)?\b[^"\n]*")[ \t]*,[ \t]*(?:"([^"\n]{4,200})"|'([^'\n]{4,200})')"""
         r"""|\bfill_in[ \t(]+(?:'[^'\n]*\bpass(?:word|wd|phrase)?\b[^'\n]*'|"[^"\n]*\bpass(?:word|wd|phrase)?\b[^"\n]*")[ \t]*,[ \t]*with:[ \t]*(?:"([^"\n]{4,200})"|'([^'\n]{4,200})'))""",
         "form_fill", options={"set_pattern": r"(?i)\.(?:fill|type|send_keys|sendKeys|setValue|pressSequentially"
                                              r"|press_sequentially)\(|\bfill_in[ \t(]"}),
    # a setter or a builder's method named for a secret, its one argument a string literal:
    # `ds.setPassword("v")`, `.withApiKey("v")`, PHP's `->apiKey('v')`, `setPassword("v".toCharArray())`
    # (`arguments.h_setter`; up to 5000 calls a text: getters of the same names count too)
    Rule("credential-setter", "secret",
         r"""(\.|->)?\b([A-Za-z0-9_]*""" + _SETTER_WORD + r""")[ \t]*\([ \t]*@?"""
         r"""(?:"((?:[^"\\\n]|\\.){6,400})"|'([^'\n]{6,400})'|`([^`\n]{6,400})`)"""
         r"""(?:\.(?:toCharArray|getBytes|encode|as_bytes|to_string)\(\))?[ \t]*\)""", "setter",
         options={"set_pattern": _SETTER_WORD + r"""[ \t]*\([ \t]*@?["'`]""", "max_matches": 5000}),
    Rule("name-value", "secret", NAME_VALUE, "namevalue", options={"set_pattern": NAME_VALUE_HEAD}),
    Rule("type-value", "secret", TYPE_VALUE, "namevalue",
         options={"set_pattern": r"(?i)\btype\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[A-Za-z0-9_.%\-]{0,40}"
                                 r"(?:password|passwd|secret|token|api_?key|credential|securestring)", "shaped": True}),
    Rule("xml-name-value", "secret", XML_NAME_VALUE, "namevalue",
         options={"set_pattern": r"</(?:name|key)>[ \t\r\n]*<(?:description|value|defaultValue)[>/]"}),
    Rule("xml-entry-key", "secret", XML_ENTRY_KEY, "namevalue", options={"set_pattern": r"<entry[ \t]+key="}),
    # a Pulumi secret in a stack export: its documented signature key, then `plaintext`
    _tok("pulumi-plaintext-secret", "secret",
         r'"4dabf18193072939515e22adb298388d"[ \t]*:[ \t]*"1b47061264138c4ac30d75fd1eb44270"[ \t]*,[ \t\r\n]*'
         r'"plaintext"[ \t]*:[ \t]*"(?:\\")?((?:[^"\\\n]|\\[^"\n]){1,400}?)(?:\\")?"',
         set_pattern=r'"4dabf18193072939515e22adb298388d"'),
    # CloudFormation's key/value pairs: `"OutputKey": "MasterUserPassword", "OutputValue": "v"`, and the
    # CLI's `ParameterKey=DBPassword,ParameterValue=v`
    Rule("cfn-key-value", "secret",
         r"""\b(?:Output|Parameter)Key\\?["']?[ \t]*[:=][ \t]*\\?["']?([A-Za-z0-9_.\-]{1,100})\\?["']?[ \t]*,[ \t\r\n]*"""
         r"""\\?["']?(?:Output|Parameter)Value\\?["']?[ \t]*[:=][ \t]*"""
         r"""(?:\\?"((?:[^"\\\n]|\\[^"\n]){1,400})\\?"|'([^'\n]{1,400})'|([^\s"',;{}\[\]]{1,400}))""", "namevalue",
         options={"set_pattern": r"\b(?:Output|Parameter)Key\b"}),
    # a default a setting's declaration gives it (`redact.defaults`)
    Rule("declared-default", "secret", DECLARED_DEFAULT, "declared_default",
         options={"set_pattern": r"""(?i)default(?:value|_value)?\\?["']?[ \t]*[:=]"""}),
    Rule("option-default", "secret", OPTION_DEFAULT, "option_default",
         options={"set_pattern": r"\b(?:add_argument|add_option|option|Option|argument|addOption)\("}),
    # a value a plan changes (`terraform plan`: `~ "API_KEY" = "old" -> "new"`): the new one is the key's too
    Rule("plan-change", "secret",
         r"""(?m)^[ \t]*[~+\-]?[ \t]*"?([A-Za-z0-9_.\-]{1,100})"?[ \t]*=[ \t]*(?:"[^"\n]*"|\(sensitive value\)|null)"""
         r"""[ \t]*->[ \t]*("[^"\n]+")""", "jprop", options={"set_pattern": r"[ \t]->[ \t]*\""}),
    Rule("go-flag-default", "secret", GO_FLAG_DEFAULT, "option_default",
         options={"name_group": True, "set_pattern": r"\b(?:String|StringP|StringVar|StringVarP)\("}),
    # --- KEY = value, in every syntax -------------------------------------------------------
    Rule("assignment", "secret",
         r"(?i)" + KEY_RE + r"""(?:(?:\\\\){0,3}\\?["']\]?|\]|\[\])?(?:[ \t]+(?:string|str|int|var|const|char\*?|\[\]byte|secret|password))?(?:,[ \t]*(?:_|err))?[ \t]*""" + ASSIGN_SEP_RE + r"[ \t]*(?:new[ \t]+)?" + VALUE_RE, "assign"),
    # ... and a quoted passphrase after one (`contraseña = "mi perro come 0cpn68 los martes"`)
    Rule("passphrase-i18n", "password",
         FOREIGN_KEY_RE + r"""[\"'\]]?[ \t]*(?:""" + FOREIGN_SEP_RE[1:] + r"""[ \t]*[\"']"""
         r"""([^\s\"'\\${}%<>;,|&()][^\"'\\\n${}%<>]{0,60}[ \t][^\"'\\\n${}%<>]{0,60})[\"']""", "phrase",
         options={"set_pattern": FOREIGN_WORDS_RE, "set_group": "screens", "max_words": 12}),
    # the same with a key word of another language (`senha = "v"`, `пароль: v`, `源数据库密码＝v`)
    Rule("assignment-i18n", "secret",
         FOREIGN_KEY_RE + r"""(?:(?:\\\\){0,3}\\?["']\]?)?[ \t]*""" + FOREIGN_SEP_RE + r"[ \t]*" + VALUE_RE, "assign",
         options={"set_pattern": FOREIGN_WORDS_RE, "set_group": "screens"}),
    # Android's Gradle fields: `buildConfigField "String", "API_KEY", "\"v\""` (a Java literal
    # inside a Groovy/Kotlin one), `resValue("string", "maps_api_key", "v")`
    Rule("gradle-field", "secret",
         r"\b(?:buildConfigField|resValue)[ \t]*\(?[ \t]*[\"'][\w.<>]+[\"'][ \t]*,[ \t]*[\"']([A-Za-z0-9_.]+)[\"'][ \t]*,"
         r"[ \t]*[\"'](?:\\[\"'])?([^\"'\\\n]{6,300})(?:\\[\"'])?[\"']", "gradle",
         options={"set_pattern": r"\b(?:buildConfigField|resValue)\b"}),
    # a key whose quoted value a formatter moved to the next line (Prettier, dart format: `authToken:`
    # then `"v"` indented below it)
    Rule("next-line-value", "secret",
         r"(?i)" + KEY_RE + r"""[\"']?[ \t]*[:=][ \t]*\r?\n[ \t]+(?:"([^"\\\n]{6,})"|'([^'\n]{6,})'|`([^`\n]{6,})`)""",
         "nextline", options={"set_pattern": r"""[:=][ \t]*\r?\n[ \t]+["'`][^"'`\n]"""}),
    # a key whose value is split over string literals, one a line (`KEY = (` then `"part"` lines:
    # Python's implicit concatenation; `"part" +` in Java, JS, C#; Lua's `..`, PHP's `.`, VB's `&`)
    Rule("concat-value", "secret",
         r"(?i)" + KEY_RE + r"""[\"']?\]?[ \t]*(?::[^=\n]{0,40})?=[ \t]*\(?[ \t]*(?:\r?\n[ \t]*)?[bB]?["']([^"'\\\s]{4,200})["']"""
         r"""[ \t]*(?:\+|\.\.?|&)?[ \t]*(?:#[^\n]*)?\\?\r?\n[ \t]*(?:\+|\.\.?|&)?[ \t]*[bB]?["']([^"'\\\s]{1,200})["']""",
         "concat", options={"set_pattern": r"""=[ \t]*\(?[ \t]*(?:\r?\n[ \t]*)?[bB]?["'][^"'\\\s]{4,}["']"""
                                           r"""[ \t]*(?:\+|\.\.?|&)?[ \t]*(?:#[^\n]*)?\\?\r?\n"""}),
    # an ARM template's or a parameters file's value object: `"adminPassword": {"value": "v"}`
    # (JSON-escaped too, in an activity log's request body)
    Rule("arm-parameter", "secret",
         r"(?i)" + KEY_RE + r"""\\?["'][ \t]*:[ \t]*\{[ \t\r\n]*\\?["']value\\?["'][ \t]*:[ \t]*"""
         r"""(?:\\?"((?:[^"\\\n]|\\[^"\n]){1,400}?)\\?"|'([^'\n]{1,400})')""", "nextline",
         options={"set_pattern": r"""\{[ \t\r\n]*\\?["']value\\?["'][ \t]*:"""}),
    # a key and its value with no operator: C's `#define KEY "v"`, a Dockerfile's `ENV KEY v` / `ARG`,
    # Tcl's and a game server config's `set KEY "v"`,
    # Windows' `setx KEY "v"`, PowerShell's `Set-Item Env:KEY -Value "v"`, Erlang's `-define(KEY, "v")`
    Rule("declaration", "secret",
         r"(?im)(?:^[ \t]*(?:#[ \t]*define|ENV|ARG|set)[ \t]+|(?:^[ \t]*|>[ \t]*)setx(?:[ \t]+/M)?[ \t]+"
         r"|\b(?:Set|New)-Item[ \t]+(?:-Path[ \t]+)?Env:|^[ \t]*-define\()" + KEY_RE
         + r"([ \t]+(?:-Value[ \t]+)?|,[ \t]*)" + VALUE_RE,
         "assign",
         options={"set_pattern": r"(?im)^[ \t]*(?:#[ \t]*define|ENV|ARG|set)[ \t]+[A-Za-z0-9_.$\-]+[ \t]+[^\s]"
                                 r"|\bsetx[ \t]|\b(?:Set|New)-Item[ \t]|^[ \t]*-define\("}),
    # an Erlang / Elixir term: `{password, "v"}`, `{api_key, <<"v">>}`
    Rule("erlang-tuple", "secret",
         r"(?i)\{[ \t]*" + KEY_RE + r"[ \t]*,[ \t]*(?:<<)?\"([^\"\n]{6,400})\"(?:>>)?[ \t]*\}", "xml",
         options={"set_pattern": r"\{[ \t]*[A-Za-z0-9_.$\-]+[ \t]*,[ \t]*(?:<<)?\""}),
    Rule("xml-element", "secret",
         r"(?i)<(?:[A-Za-z][\w.\-]{0,30}:)?" + KEY_RE + r"(?:[ \t][^<>\n]{0,200})?>[ \t\r\n]*([^<>\s]{6,})[ \t\r\n]*</", "xml"),
    # ... and a password element holding words with spaces (Maven's `<passphrase>w x y z</passphrase>`)
    Rule("xml-passphrase", "password",
         r"(?i)<((?:[A-Za-z][\w.\-]{0,30}:)?[\w.\-]{0,40}(?:password|passphrase|passwd))(?:[ \t][^<>\n]{0,200})?>"
         r"([^<>\n]{6,120}?)</", "xml_phrase",
         options={"set_pattern": r"(?i)(?:password|passphrase|passwd)(?:[ \t][^<>\n]*)?>"}),
    Rule("add-key-value", "secret",
         r"""(?i)<add\s+key=["']([^"'<>]{1,100})["']\s+value=["']([^"'<>]{1,400})["']""", "xml"),
    Rule("k8s-secret-data", "secret",
         r"(?m)^[ \t]+[\w.\-]+:[ \t]*(?:[|>][\-+]?[ \t]*\r?\n[ \t]+)?[\"']?([A-Za-z0-9+/]{12,}={0,2})[\"']?[ \t]*\r?$",
         "k8s"),
    Rule("cli-flag", "secret",
         r"(?i)(?:^|[ \t])--?" + KEY_RE + r"""(?:=|[ \t]+)("[^"\n]+"|'[^'\n]+'|[^\s"'\-][^\s"']*)""",
         "cli"),
    Rule("reverse-compare", "secret",
         r"""(?i)(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')[ \t]*[!=]==?[ \t]*""" + KEY_RE, "reverse"),
    Rule("keyword-quoted", "secret",
         r"""(?i)\b([A-Za-z0-9_]*(?:passw|pwd|secret)[A-Za-z0-9_]*)[ \t]+(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'"""
         r"""|\\"([^"\\\n]*)\\")""",   # ... or JSON-escaped (`password \"v\"` in a JSON string)
         "kwquoted"),
    # a password told in prose, in the other languages users write to agents in (`told.h_prose`):
    # a credential word, up to four words, a link (is, ist, est, es, é, は, 是, :, ...), the value
    Rule("prose-password", "password", PROSE_PASSWORD, "prose",
         options={"set_pattern": r"(?:" + PROSE_WORDS + r")", "fallback": True}),
    # `I reset the admin password to V`, `set the grafana password to V`: a verb that sets it, then `to`
    Rule("password-set-to", "password",
         r"(?i)\b(?:set|reset|changed?|update[ds]?|rotated?)\b[^\n]{0,60}?\b(password|passwd|passphrase|pwd)[ \t]+to[ \t]+"
         + VALUE_RE, "is", options={"set_pattern": r"(?i)(?:password|passwd|passphrase|pwd)[ \t]+to[ \t]"}),
    Rule("prose-is", "secret",
         r"(?i)\b([A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd|pw|pass|secret|token"
         r"|(?:api|secret|access|routing|integration|license|signing|encryption|master|deploy|webhook)[ _\-]?key|key))"
         r"[ \t]+(?:is|was|(?:is[ \t]+)?(?:now|set[ \t]+to|changed[ \t]+to))[ \t]*:?[ \t]+" + VALUE_RE, "is"),
)
