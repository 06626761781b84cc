"""Secrets with no key beside them (redact/arguments.py and the rules around it): the default of a
secret-named environment variable, the argument a credential call takes by its API, what a
command prints when asked for one secret, a literal piped into a secret store; and the shapes
found with them (a token as a URL's user, SMTP AUTH, a glued environment name, a Redis password,
a value inside a quoted value that is no secret). Each is tested in context, and with the code or
text around it that must stay."""

from __future__ import annotations

import base64

import random
import string

import pytest

from reverie.redact.engine import Redactor

_rng = random.Random(1414)
ALNUM = string.ascii_letters + string.digits


def g(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


PW = "Xk29-pq!mR7" + g(4)
TOKEN = g(32)

# (text with {} where the secret goes, the secret, its label, the rule that finds it)
FOUND = [
    # env-default: a secret-named variable's default
    ('DB_PASSWORD = os.getenv("DB_PASSWORD", "{}")', PW, "password", "env-default"),
    ("SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', '{}')", TOKEN, "secret", "env-default"),
    ('password: <%= ENV.fetch("SHOP_DATABASE_PASSWORD") {{ "{}" }} %>', PW, "password", "env-default"),
    ("const key = process.env.STRIPE_SECRET_KEY || '{}'", TOKEN, "secret", "env-default"),
    ("const key = process.env['API_TOKEN'] ?? \"{}\"", TOKEN, "token", "env-default"),
    ("'password' => env('DB_PASSWORD', '{}'),", PW, "password", "env-default"),
    ("psql -h db -U app -W ${{PGPASSWORD:-{}}}", PW, "password", "env-default"),
    ("spring.datasource.password=${{DB_PASSWORD:{}}}", PW, "password", "env-default"),
    ('token = ENV["GITHUB_TOKEN"] || "{}"', TOKEN, "token", "env-default"),
    ('os.getenv(\n    "DB_PASSWORD",\n    "{}",\n)', PW, "password", "env-default"),
    ("    environment:\n      DB_PASSWORD: ${{DB_PASSWORD:-{}}}", "Pa$$w0rd2024x", "password", "env-default"),
    ('redis: ${{REDIS_PASSWORD:-"{}"}}', PW, "password", "env-default"),
    # credential-call: the argument a call takes as its secret
    ('server.login("alerts@acme.dev", "{}")', "y3u1 tmv6 919x mazc", "password", "credential-call"),
    ("await login(page, 'admin', '{}')", PW, "password", "credential-call"),
    ('requests.get(url, auth=HTTPBasicAuth("deploy", "{}"))', PW, "password", "credential-call"),
    ('String c = Credentials.basic("AC123", "{}");', TOKEN, "password", "credential-call"),
    ('    .bearer_auth("{}")', TOKEN, "bearer", "credential-call"),
    ('{{"command": "s.login(\\"me@x.com\\", \\"{}\\")"}}', PW, "password", "credential-call"),  # JSON-escaped
    ("return jwt.sign({{ sub: user.id }}, '{}', {{\n  expiresIn: '1h',\n}});", "purple-monkey-dishwasher-42", "secret", "credential-call"),
    ("$pdo = new PDO('mysql:host=db;dbname=shop', 'shop', '{}');", PW, "password", "credential-call"),
    ("$db = mysqli_connect('localhost', 'shop', '{}', 'shop');", PW, "password", "credential-call"),
    # printed-secret: a command asked for one secret, and its output line
    ("$ kubectl get secret api -o jsonpath='{{.data.DB_PASSWORD}}'\n{}\n$ ls", g(24, ALNUM + "+/") + "==", "secret", "printed-secret"),
    ("$ vault kv get -field=password secret/db\n{}", PW, "secret", "printed-secret"),
    ("$ kubectl get secret tls -o jsonpath='{{.data.tls\\.key}}'\n{}\n", g(900, ALNUM + "+/"), "secret", "printed-secret"),
    ("$ aws secretsmanager get-secret-value --secret-id prod/db --query SecretString --output text\n{}", PW, "secret", "printed-secret"),
    ("$ cat config/master.key\n{}\n$ git status", g(32, "0123456789abcdef"), "secret", "printed-secret"),
    # piped-secret: a literal piped into a secret store
    ('echo "{}" | npx wrangler secret put SIGNING_KEY', g(64, "0123456789abcdef"), "secret", "piped-secret"),
    ("printf '%s' '{}' | gh secret set NPM_TOKEN", g(36), "secret", "piped-secret"),
    ("echo {} | docker login -u me --password-stdin ghcr.io", g(36), "secret", "piped-secret"),
    # the shapes found with them
    ("sentry_sdk.init(dsn='https://{}@o871254.ingest.us.sentry.io/57036')", g(32, "0123456789abcdef"), "token", "url-user-token"),
    ("git clone https://{}@git.example.com/acme/app.git", g(24), "token", "url-user-token"),
    ("send: 'AUTH PLAIN {}\\r\\n'", g(44, ALNUM + "+/"), "password", "smtp-auth"),
    ("$ PGPASSWORD='{}' psql -h pg.internal -U reporting", "my cat is named 7am3ivx", "password", "passphrase"),
    ("1036:requirepass {}", g(20), "password", "redis-conf-password"),
    ("and the openai one is {} (old style)", "sk-" + g(48), "openai_key", "openai-legacy-key"),
    # name-value: a name field, then its value field
    ("        env:\n        - name: DB_PASSWORD\n          value: \"{}\"\n", PW, "password", "name-value"),
    ('  + set {{\n      + name  = "adminPassword"\n      + value = "{}"\n    }}', PW, "password", "name-value"),
    ('{{ "name": "api_key", "value": "{}" }}', TOKEN, "api_key", "name-value"),
    # declarations with no operator, terms, other tools' password slots
    ('#define OTA_HMAC_KEY   "{}"', g(64, "0123456789abcdef"), "api_key", "declaration"),
    ("ENV SECRET_KEY_BASE {}", g(128, "0123456789abcdef"), "secret", "declaration"),
    ('static constexpr const char kDatadogApiKey[] = "{}";', g(32, "0123456789abcdef"), "api_key", "assignment"),
    ('   {{password, "{}"}},', PW, "password", "erlang-tuple"),
    ("-name acme@10.0.4.7\n-setcookie {}\n", g(20, string.ascii_uppercase + string.digits), "password", "erlang-cookie"),
    ("    user ops insecure-password {}", g(16), "password", "haproxy-password"),
    ("    stats auth admin:{}", g(18), "password", "haproxy-password"),
    ("$pw = ConvertTo-SecureString '{}' -AsPlainText -Force", g(16), "password", "securestring-plaintext"),
    ("user> creds for the grafana box: admin / {}", "1QFlJJQ57I3f", "password", "chat-credentials"),
    ("gs_oauth2_refresh_token = {}", "1//0" + g(90, ALNUM + "_-"), "google_oauth", "google-refresh-token"),
    ("30 2 * * * /usr/bin/mysqldump -u root -p{} --all-databases", g(16), "password", "mysql-dash-p"),
    ("$ cat ~/.ansible/vault_pass.txt\n{}\n", g(32), "secret", "printed-secret"),
    ("$ sudo elasticsearch-keystore show s3.client.default.secret_key\n{}", g(40, ALNUM + "/"), "secret", "printed-secret"),
    ("the redis pass is {}", g(24), "password", "prose-is"),
    ("[09:12] priya: new routing key is {} after the rotation", "R0" + g(30), "api_key", "prose-is"),
    ("header_up X-Internal-Auth {}", g(32), "token", "keyword-value"),
    # a key-named variable set from a call that turns a literal into the key
    ('var jwtKey = []byte("{}")', TOKEN, "api_key", "assignment"),
    ("aesKey, _ := hex.DecodeString(\"{}\")", g(64, "0123456789abcdef"), "api_key", "assignment"),
    ("SECRET_KEY = base64.b64decode('{}')", g(40, ALNUM + "+/") + "==", "secret", "assignment"),
    ('const signingKey = Buffer.from("{}", "hex");', g(64, "0123456789abcdef"), "api_key", "assignment"),
    ('var key = new SymmetricSecurityKey(Encoding.UTF8.GetBytes("{}"));', PW + g(12), "api_key", "assignment"),
    ('const secretKey = new TextEncoder().encode("{}");', PW + g(12), "secret", "assignment"),
    ('AES_KEY = binascii.unhexlify(b"{}")', g(32, "0123456789abcdef"), "api_key", "assignment"),
    ('SecretKey key = Keys.hmacShaKeyFor(Decoders.BASE64.decode("{}"));', g(44, ALNUM + "+/") + "==", "api_key", "assignment"),
    ('{{"content":"aesKey, _ := hex.DecodeString(\\"{}\\")\\n"}}', g(64, "0123456789abcdef"), "api_key", "assignment"),
    ('settings.api_key = SecretStr("{}")', TOKEN, "api_key", "assignment"),
    # Android's Gradle fields
    ('buildConfigField("String", "REVENUECAT_SECRET", "\\"{}\\"")', "sk_" + g(28), "secret", "gradle-field"),
    ('resValue("string", "maps_api_key", "{}")', TOKEN, "api_key", "assignment"),   # a quoted key, then a comma
    # a Cookie header's long cookies, whatever their names; a HAR file's Cookie header
    ('curl ^"https://x.example/^" -H ^"cookie: .AspNetCore.Cookies={}^" ^', g(120, ALNUM + "_-"), "token", "cookie-header"),
    ('{{ "name": "Cookie", "value": "auth0={}" }}', g(64, ALNUM + "_-"), "token", "cookie-header"),
    ('curl -H "Cookie:auth0={}" https://x.example', g(40, ALNUM + "_-"), "token", "cookie-header"),
    # commands and outputs that carry one password
    ("    tcp-check send AUTH\\ {}\\r\\n", g(24), "password", "redis-auth"),
    ("127.0.0.1:6379> AUTH default {}", PW, "password", "redis-auth"),
    ("127.0.0.1:6379> auth {}", PW, "password", "redis-auth"),
    ("Password for the [elastic] user successfully reset.\nNew value: {}\n", g(20, ALNUM + "_*=+"), "password", "generated-password"),
    ('{{"content":"Password for the [elastic] user successfully reset.\\nNew value: {}\\n"}}', PW, "password", "generated-password"),
    ("[Server] A temporary password is generated for root@localhost: {}", PW, "password", "generated-password"),
    ('$ cat /etc/pgbouncer/userlist.txt\n"app"\t"{}"\n"reporting" "md5a1b2c3d4e5f60718293a4b5c6d7e8f90"', PW, "password", "pgbouncer-userlist"),
    # commands that take a password as an argument, SQL, expect scripts
    ("zip -r -P {} backup.zip ./data", PW, "password", "archive-password"),
    ("7z a -p{} -mhe=on backup.7z dir", g(16), "password", "archive-password"),
    ("rabbitmqctl add_user admin '{}'", PW, "password", "command-password"),
    ("mc alias set minio http://minio:9000 admin {}", g(32), "password", "command-password"),
    ("htpasswd -b -c /etc/nginx/.htpasswd admin {}", PW, "password", "htpasswd-batch"),
    ("htpasswd -nb admin {}", PW, "password", "htpasswd-batch"),
    ("mysql> CREATE USER 'app'@'%' IDENTIFIED BY '{}';", PW, "password", "sql-password"),
    ("ALTER USER u IDENTIFIED WITH caching_sha2_password BY '{}';", PW, "password", "sql-password"),
    ("SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('{}');", PW, "password", "sql-password"),
    ('spawn ssh root@10.0.0.9\nexpect "*assword*"\nsend "{}\\r"\ninteract', PW, "password", "expect-send-password"),
    ("echo '{}' | sudo -S systemctl restart app", PW, "secret", "piped-secret"),
    ('echo "deploy:{}" | sudo chpasswd', PW, "secret", "piped-secret"),
    # string prefixes, triple quotes, R's `<-`, Windows and PowerShell, Spring's dotted defaults
    ('api_key = f"{}"', TOKEN, "api_key", "assignment"),
    ('NSString *const kSecret = @"{}";', TOKEN, "secret", "assignment"),
    ('val apiKey = """{}"""', TOKEN, "api_key", "assignment"),
    ('password = """{}"""', "x521Qdhmu;TWSDv#ztO6", "password", "assignment"),
    ('db_password <- "{}"', PW, "password", "assignment"),
    ('setx OPENAI_API_KEY "{}"', TOKEN, "api_key", "declaration"),
    ('Set-Item -Path Env:API_TOKEN -Value "{}"', TOKEN, "token", "declaration"),
    ('@Value("${{jwt.secret:{}}}")', TOKEN, "secret", "env-default"),
    # typed declarations (a type annotation between the key and its `=`)
    ('    api_key: str = "{}"', TOKEN, "api_key", "assignment"),
    ('    val password: String = "{}",', PW, "password", "assignment"),
    ('const API_KEY: &str = "{}";', TOKEN, "api_key", "assignment"),
    ('private readonly token: string = "{}";', TOKEN, "token", "assignment"),
    # credential calls by position: JDBC, Groovy, .NET, ftplib, PyMySQL, Go's smtp, `.auth(user, pw)`
    ('DriverManager.getConnection("jdbc:postgresql://db/shop", "app", "{}");', PW, "password", "credential-call"),
    ('Sql.newInstance("jdbc:mysql://x:3306/r", "ci", "{}", "com.mysql.cj.jdbc.Driver")', PW, "password", "credential-call"),
    ('var cred = new NetworkCredential("svc", "{}");', PW, "password", "credential-call"),
    ('ftp = ftplib.FTP("ftp.example.com", "bob", "{}")', PW, "password", "credential-call"),
    ('conn = pymysql.connect("localhost", "root", "{}", "shop")', PW, "password", "credential-call"),
    ('auth := smtp.PlainAuth("", "alerts@example.com", "{}", "smtp.example.com")', PW, "password", "credential-call"),
    ("$smtp->auth('monitoring@example.de', '{}')", PW, "password", "credential-call"),
    # config and protocol shapes
    ('    .psk  = "{}",', "lange-nacht-im-labor-42", "password", "assignment"),
    ('curl_easy_setopt(h, CURLOPT_USERPWD, "deploy:{}");', PW, "password", "curl-option-password"),
    ('-define(DB_PASSWORD, "{}").', PW, "password", "declaration"),
    ('db, err := sql.Open("mysql", "app:{}@tcp(127.0.0.1:3306)/shop")', PW, "password", "go-mysql-dsn"),
    ('{{"type": "random_password", "instances": [{{"attributes": {{"length": 24, "result": "{}"}}}}]}}', PW, "password",
     "terraform-random-password"),
    ("user worker on >{} ~jobs:* +@list", PW, "password", "redis-acl-password"),
    ("[smtp.gmail.com]:587 alerts@gmail.com:{}", "mvhl sr8n 9zs4 lhk7", "password", "postfix-sasl-password"),
    ('vpnuser : EAP "{}"', PW, "password", "ipsec-secret"),
    ('<Pass encoding="base64">{}</Pass>', g(24, ALNUM + "+/"), "password", "xml-element"),
    # a password told in prose, in other languages too
    ("user: Zugang zum Jenkins: Benutzer deploy / Passwort {} (gilt bis Freitag)", PW, "password", "prose-password"),
    ("Le mot de passe du compte SMTP est « {} » et l'identifiant noreply@exemple.fr", PW, "password", "prose-password"),
    ("La contraseña del servidor es {} y el usuario es root.", PW, "password", "prose-password"),
    ("本番DBのパスワードは「{}」です。", PW, "password", "prose-password"),
    ("数据库密码：{}，用户名是admin", PW, "password", "assignment-i18n"),
    ("Voici la clé API Mistral : {} (prod)", TOKEN, "password", "prose-password"),
    # session shapes: a printed value glued to the next prompt, netlify, cargo, HTTPie, Postman
    ("$ terraform output -raw db_password\n{}$ terraform output -json", TOKEN, "secret", "printed-secret"),
    ("$ netlify env:get RESEND_API_KEY --context production\n{}", "re_" + TOKEN, "secret", "printed-secret"),
    ("$ cargo login {}", "cio" + TOKEN, "token", "login-argument"),
    ("$ http -a admin:{} GET :8080/actuator/env", PW, "password", "httpie-auth"),
    ('{{"key": "x-api-key", "value": "{}", "type": "text"}}', TOKEN, "api_key", "name-value"),
    # the second review's leaks
    ('{{"command": "zip -P \\"{}\\" a.zip b"}}', PW, "password", "archive-password"),
    ('{{"sql": "CREATE USER app IDENTIFIED BY \\"{}\\""}}', PW, "password", "sql-password"),
    ("CREATE USER app IDENTIFIED BY {};", g(16), "password", "sql-password-bare"),
    ('{{"cmd": "echo \\"{}\\" | sudo -S ls"}}', PW, "secret", "piped-secret"),
    ('{{"cmd": "htpasswd -b -c /etc/nginx/.htpasswd admin {}"}}', PW, "password", "htpasswd-batch"),
    ('{{"type": "random_password", "instances": [{{"attributes": {{"override_special": "!#[]{{}}", "result": "{}"}}}}]}}',
     PW, "password", "terraform-random-password"),
    ("root:{}@tcp(127.0.0.1:3306)/app", "p@ssw0rd/x9", "password", "go-mysql-dsn"),
    ("zip -rP {} a.zip b", PW, "password", "archive-password"),
    ('api_key: str | None = "{}"', TOKEN, "api_key", "assignment"),
    ('expect "password:" {{ send "{}\\r" }}', PW, "password", "expect-send-password"),
    ("child.expect('Password:')\nchild.sendline('{}')", PW, "password", "expect-send-password"),
    ("Le mot de passe est « {} »", "Azerty123!", "password", "prose-password"),
    ("Ключ: {}", PW, "api_key", "assignment-i18n"),
    ('setx /M API_KEY "{}"', TOKEN, "api_key", "declaration"),
    ('new System.Net.NetworkCredential("user", "{}")', PW, "password", "credential-call"),
    # round i's shapes: signed URLs, webhooks, first-start banners, auth tuples, calls, prose
    ("https://b.s3.amazonaws.com/r.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={}", g(64, "0123456789abcdef"),
     "token", "url-query-secret"),
    ("curl -X POST https://chat.acme.dev/hooks/{}", g(26, "abcdefghijklmnopqrstuvwxyz0123456789"), "webhook",
     "mattermost-webhook"),
    ("Please use the following password to proceed to installation:\n\n{}\n\nThis may also be found at: /var/x",
     g(32, "0123456789abcdef"), "password", "generated-password"),
    ("Password for the elastic user (reset with `bin/elasticsearch-reset-password -u elastic`):\n  {}\n", PW,
     "password", "generated-password"),
    ("$ argocd admin initial-password -n argocd\n{}\n This password must be only used for first time login.", g(16),
     "secret", "printed-secret"),
    ('AUTH = ("neo4j", "{}")  # Aura generated password', g(43, ALNUM + "_"), "password", "auth-tuple"),
    ('Credential = MongoCredential.CreateCredential("admin", "orders_svc", "{}"),', PW, "password", "credential-call"),
    ('QA_TOTP = pyotp.TOTP("{}")', g(32, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "secret", "credential-call"),
    ('$session.Cookies.Add((New-Object System.Net.Cookie("__Secure-app.session", "{}", "/", ".app.io")))', g(80, ALNUM + "_-"),
     "token", "credential-call"),
    ("> document.cookie\n'_ga=GA1.1.347081392.3001882817; _shop_state={}'", g(120, ALNUM + "_-"), "token", "cookie-header"),
    ("otpauth-migration://offline?data={}", g(80, ALNUM + "%"), "secret", "otpauth-migration"),
    ("Gästnätet heter Kontoret och lösenordet är {}.", "Kanelbulle#2024", "password", "prose-password"),
    ("user: deploy, kata sandinya {} (sementara)", "Bakso-Malang_2025", "password", "prose-password"),
    ("uživatel app_rw, heslo {} – a ještě", "Švestka.9Knedlík", "password", "prose-password"),
    # a passphrase told in prose between quotes: spaces and all
    ("la phrase de passe c'est « {} ». Tu peux l'ouvrir ?", "ruisseau fromage plume 42 nuages", "password", "prose-password"),
    ('Das Passwort ist „{}“ für alle', "Sonne Mond Sterne Regen", "password", "prose-password"),
    ("La contraseña de la base de datos de pruebas es «{}» (con espacios)", "cielo azul de marzo 42",
     "password", "prose-password"),
    ("uživatel app_rw, heslo {} – a ještě jedna věc pro tým: zítra", "Švestka.9Knedlík", "password", "prose-password"),
    # what an interpreter printed for a secret-named expression
    ("(Pdb) p settings.EMAIL_HOST_PASSWORD\n'{}'\n(Pdb) c", g(32, "0123456789abcdef"), "password", "repl-echo"),
    ('>>> os.environ["STRIPE_WEBHOOK_SECRET"]\n\'{}\'', PW, "secret", "repl-echo"),
    ("In [3]: config.get('db_password')\nOut[3]: '{}'", PW, "password", "repl-echo"),
    ('irb(main):001:0> ENV["API_TOKEN"]\n=> "{}"', TOKEN, "token", "repl-echo"),
    # `terraform output -json`: a sensitive output's value (a `(` in a password is no call)
    ('"db_master_password": {{\n  "sensitive": true,\n  "type": "string",\n  "value": "{}"\n}},',
     "Xk29dLmQ(7pZ3vN8_sT4w", "secret", "terraform-sensitive-output"),
    ('{{\\"sensitive\\": true, \\"type\\": \\"string\\", \\"value\\": \\"{}\\"}}', PW, "secret",
     "terraform-sensitive-output"),
    # a generated password behind a compose service's log prefix, a blank prefixed line between
    ("jenkins  | Please use the following password to proceed to installation:\njenkins  |\njenkins  | {}\n"
     "jenkins  |", g(32, "0123456789abcdef"), "password", "generated-password"),
    # .pgpass escapes `:` in a password; .properties values run to the line's end
    ("db-primary.prod:5432:*:migrator:{}", "Xk29dLmQ\\:7pZ3vN8s", "password", "pgpass-line"),
    ("spring.mail.username=alerts@acme.io\nspring.mail.password={}\nspring.mail.port=587",
     "abcd efgh ijkl mnop", "password", "passphrase-line"),
    ("MAIL_PASSWORD={}\nMAIL_PORT=587", "qwer tyui opas dfgh", "password", "passphrase-line"),
    ('db01 ansible_host=10.0.3.10 ansible_ssh_pass="{}"', "autumn leaves fall 2024", "password", "passphrase"),
    ("DB_PASSWORD={} docker compose up -d", "hunter2-Xq9", "password", "assignment"),   # then a command
    # JSON in a string in a JSON string: escaped twice
    ('"{{\\"settings\\":\\"{{\\\\\\"api_key\\\\\\":\\\\\\"{}\\\\\\"}}\\"}}"', g(32, "0123456789abcdef"),
     "api_key", "assignment"),
    # a provider's name in a list, then a pair: the name is no key of the pair after it
    ('{{\\"provider\\":\\"mailgun\\",\\"api_key\\":\\"{}\\"}}', g(32, "0123456789abcdef"), "api_key", "assignment"),
    # a passphrase after an upper-case key and spaces, to the line's end
    ("DB_PASSWORD = {}\nDB_HOST=db", "correct horse battery staple", "password", "passphrase-line"),
    # a base64 seed phrase is no encoded content (words and spaces only)
    ('WALLET_KEY = "{}"', base64.b64encode(b"abandon ability able about above absent absorb abstract").decode(),
     "api_key", "assignment"),
    # a password shaped like a word and a number in brackets is no call
    ('password: "{}"', "Spring(2024)", "password", "assignment"),
    # a generated password behind `kubectl logs --prefix` and `docker compose logs -t`
    ("[pod/jenkins-0/jenkins] Please use the following password to proceed to installation:\n"
     "[pod/jenkins-0/jenkins]\n[pod/jenkins-0/jenkins] {}\n", g(32, "0123456789abcdef"), "password", "generated-password"),
    ("jenkins  | 2025-02-01T09:12:44.201Z Please use the following password to proceed to installation:\n"
     "jenkins  | 2025-02-01T09:12:44.201Z\njenkins  | 2025-02-01T09:12:44.201Z {}\n", g(32, "0123456789abcdef"),
     "password", "generated-password"),
    # REPL output stored JSON-escaped, Rails' console, gdb
    ("{{\"content\":\"(Pdb) p settings.EMAIL_HOST_PASSWORD\\n'{}'\\n(Pdb) c\"}}", PW, "password", "repl-echo"),
    ("store(dev)> ENV['MAILGUN_SECRET']\n=> \"{}\"", TOKEN, "secret", "repl-echo"),
    ('(gdb) p api_key\n$1 = "{}"', TOKEN, "api_key", "repl-echo"),
    # a Polish passphrase in „...”
    ("Hasło to „{}” – zapisz", "jesienny deszcz nad Wisłą 42", "password", "prose-password"),
    # a PHP stack trace's frame of a credential call; sbt's and AWS SDKs' Credentials
    ("#0 /var/www/lib/Db.php(18): PDO->__construct('mysql:host=10.0...', 'shop_rw', '{}', Array)", PW, "password",
     "credential-call"),
    ('credentials += Credentials(\n  "Sonatype Nexus Repository Manager",\n  "nexus.corp.example.com",\n'
     '  "sbt-publisher",\n  "{}"\n)', PW, "password", "credential-call"),
    # a space-separated config's password line, a graph shell's -p
    ("remote_username edge-gw-07\nremote_password {}\ncleansession true", PW, "password", "spaced-config-password"),
    ('$ cypher-shell -a neo4j+s://x.databases.neo4j.io -u neo4j -p {} "MATCH (n) RETURN count(n);"', TOKEN,
     "password", "cli-password-flag"),
    # a .properties line's passphrase runs to the line's end
    ("db.password={}\ndb.pool=10", "Blue Canary Sings 42", "password", "passphrase-line"),
    # more interpreters: Scala's unquoted echo, Node's bare `>` before code, a passphrase echoed,
    # an echo ending a JSON string
    ("scala> apiToken\nval res0: String = {}", TOKEN, "token", "repl-echo"),
    ("> process.env.API_KEY\n'{}'", TOKEN, "api_key", "repl-echo"),
    (">>> os.environ['DB_PASSWORD']\n'{}'", "correct horse battery staple", "password", "repl-echo"),
    ('{{"content":">>> settings.SECRET_KEY\\n\'{}\'"}}', TOKEN, "secret", "repl-echo"),
    # Consul's tokens on one line of JSON, upper-case; Postmark's login after many mentions
    ('{{"acl": {{"enabled": true, "tokens": {{"initial_management": "{}"}}}}}}', "3F2B8C1E-9D4A-4E6F-8B7A-1C2D3E4F5A6B",
     "token", "consul-acl-tokens"),
    ("".join(f"./config/mail{i}.php:3: 'host' => 'smtp.postmarkapp.com',\n" for i in range(25)) + "x" * 4000
     + "\nMAIL_HOST=smtp.postmarkapp.com\nsmtp_login: {}\n", "3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b", "token",
     "postmark-smtp-token"),
    # a diff's removed line keeps its secret out, and the added line is read on its own
    ('-    "password": "{}"\n+    "password_file": "/run/secrets/db"', PW, "password", "assignment"),
    # one-case test passwords; PHP's cut arguments; AWS SDKs' two-argument Credentials
    ('TEST_USERS = [("qa-admin@acme.io", "{}")]', "k7x9m2p4q8w1", "password", "login-pair"),
    ("#0 /var/www/lib/Db.php(18): PDO->__construct('mysql:host=10.0...', 'shop_rw', '{}...', Array)",
     "Xk29dLmQ7pZ3vN8", "password", "credential-call"),
    # Postmark's token before its host; a JWK's thumbprint far from its `kty`
    ("MAIL_USERNAME={}\nMAIL_HOST=smtp.postmarkapp.com", "3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b", "token",
     "postmark-smtp-token"),
    # a word in prose written JSON-escaped (a Codex rollout's `\u00e9`)
    ('{{"message":"Voici ma cl\\u00e9 API Mistral pour les tests : {} \\u2014 mets-la"}}', TOKEN, "password",
     "prose-password"),
    # Algolia's clients take (app id, api key); OpenWeather's key is `appid`; Elasticsearch's first install
    ('client = SearchClient.create("ABCDEFGHIJ", "{}")', g(32, "0123456789abcdef"), "api_key", "credential-call"),
    ("const client = algoliasearch('ABCDEFGHIJ', '{}');", g(32, "0123456789abcdef"), "api_key", "credential-call"),
    ('"GET /data/2.5/forecast?lat=52.52&appid={} HTTP/1.1" 200', g(32, "0123456789abcdef"), "token",
     "openweather-appid"),
    ("The generated password for the elastic built-in superuser is : {}\n\nIf this node", PW, "password",
     "generated-password"),
    # next to a Helm `existingSecret` that is empty, a `*Key` value is the secret itself
    ('auth:\n  existingSecret: ""\n  encryptionKey: {}\n', g(32, "0123456789abcdef"), "api_key", "assignment"),
    # an English passphrase with a digit, told between quotes; a common test password in a pair
    ('the wifi password is "{}", ask Sam', "purple monkey dishwasher 7", "password", "prose-is"),
    ('TEST_USERS = [("qa-admin@acme.io", "{}")]', "Welcome2024!", "password", "login-pair"),
    # a word in prose escaped by a JSON writer that uses upper-case hex (.NET, Jackson)
    ('{{"m": "Voici ma cl\\u00E9 API : {} merci"}}', TOKEN, "password", "prose-password"),
    # a one-word key of a space-separated config
    ("rpcpassword {}\nrpcport 8332", PW, "password", "spaced-config-password"),
    # test accounts as (e-mail, password) pairs
    ('STAGING_USERS = [\n    ("qa-admin@acme.io", "{}"),\n]', "Xk29dLmQ7p12", "password", "login-pair"),
    # Consul's ACL tokens block: every value a token, whatever its name
    ('acl {{\n  tokens {{\n    initial_management = "{}"\n  }}\n}}\nnode_id = "5b2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6d"',
     "3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b", "token", "consul-acl-tokens"),
    ('encrypt = "{}"\nencrypt_verify_incoming = true', g(43, ALNUM + "+/") + "=", "secret", "quoted-high-entropy"),
    # Postmark's SMTP login is its server token, user and password alike
    ("MAIL_HOST=smtp.postmarkapp.com\nMAIL_PORT=587\nMAIL_USERNAME={}\n", "3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b",
     "token", "postmark-smtp-token"),
    # a password that starts with `$` is no variable
    ("psql -W ${{PGPASSWORD:-{}}}", "$9xKq!pw77Zr", "password", "env-default"),
    ("        - name: DB_PASSWORD\n          value: \"{}\"\n", "$9xKq!pw77Zr", "password", "name-value"),
    # a value a formatter moved to the next line
    ('  dbCredentials: {{\n    authToken:\n      "{}",\n  }},', TOKEN, "token", "next-line-value"),
    # JSON-escaped env files: every line of it
    ('"text":"NEXT_PUBLIC_STRIPE_KEY=pk_live_4P23OqRQYVJ9h7ela8mJg6yR\\nJWT_SECRET={}\\nLOG=info\\n"', g(48), "secret", "assignment"),
    # a credential told in a sentence: words between the secret word and its link, the value on
    # the next line, an arrow (`told.h_told`)
    ("the API key we use in the integration is\n{}\nWe already tried regenerating it.", "bcl_live_" + g(40), "api_key",
     "told-credential"),
    ("* Pre-shared key (only for the L2TP fallback on Linux): {}", "Fa2x4cev4btYXCAMZ7DyDnij", "api_key", "told-credential"),
    # the links of other languages (è, ye hai, ist), and a password's value right after its word
    ("ciao, la password di root del server nuovo è {}", "wTUEdbJ9CweWsJ", "password", "told-credential"),
    ("bhai staging ka password ye hai {} , user admin hi hai.", "FaVXt2Yvj7@16", "password", "told-credential"),
    ("Created local account vendor_tmp on JUMP-02, password {}, expires 2024-09-30.", "5yRU9U-jpDKXZ", "password",
     "told-password"),
    ("Or enter this key manually: {}", "H5W4 WRWD LPER T2TR SEFE A76U WR2G VZCL", "secret", "totp-setup-key"),
    ("// FIXME: Kasia's admin token for the import script (expires end of sprint) -> {}", "skm" + g(77), "token",
     "told-credential"),
    # a key name before `is` (`registration_shared_secret is v`)
    ("@sven: registration_shared_secret is {}", g(48, ALNUM + "_"), "secret", "prose-is"),
    # login words, a user, then the password: `login admin / v`, `logging in as u with v`, other languages
    ("the staging admin panel: login admin / {} (the DB has another one)", "Winter2687", "password", "chat-credentials"),
    ("try logging in as marta.vieira with {} she said it's fine", "blueOcean176", "password", "chat-credentials"),
    ("Routern loggar man in på med admin / {} – byt gärna det efteråt.", "Fikarast-77", "password", "chat-credentials"),
    # a verb that sets a password, then `to` (`password-set-to`); a user and a password after a login
    # word joined by `/` in lower case, or by `and`
    ("I reset the admin password to {} and restarted grafana", "Xk9#mP2vLq", "password", "password-set-to"),
    ("log in: jenkins / {}", "jenkins-2024", "password", "chat-credentials"),
    ("login: admin and {}", "Xk9#mP2vLq", "password", "chat-credentials"),
    # tables: a password manager's CSV export (quoted names with spaces), a quoted markdown table,
    # a `#` column, Portuguese
    ('"Group","Title","Username","Password","Web Site"\n"Root","AWS","admin","{}","https://a.example"', "Xk9#mP2vLq",
     "password", "credential-table"),
    ("> | User | Password |\n> |---|---|\n> | admin | {} |", "Xk9#mP2vLq", "password", "credential-table"),
    ("| # | User | Password |\n|---|---|---|\n| 1 | admin | {} |", "Xk9#mP2vLq", "password", "credential-table"),
    ("| Usuário | Senha |\n|---|---|\n| admin | {} |", "Xk9#mP2vLq", "password", "credential-table"),
    # SQL: two words with a digit
    ("ALTER USER app PASSWORD '{}';", "Summer 2024!", "password", "keyword-quoted"),
    # a `__Secure-` session cookie whose value holds `/`
    ("__Secure-3PAPISID={}", "Zk3Qp9Lm2Xv7Rt4W/n8Bc1DjZk3Qp9Lm2X", "token", "prefixed-cookie"),
    # a password manager's TOTP seed
    ('      "totp": "{}"', g(32, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "secret", "assignment"),
    # SQL's role password, a passphrase with spaces
    ("CREATE ROLE reporting LOGIN PASSWORD '{}';", "maple Harbor sixteen lanterns", "password", "keyword-quoted"),
    # a table with a password column: CSV, TSV, markdown (`arguments.h_table`)
    ("id,username,email,role,password,created_at\n1041,jv,jv@example.nl,admin,{},2023-11-02\n", g(12), "password",
     "credential-table"),
    ("site\tmodel\tadmin_user\tadmin_pw\nLyon\tMikroTik hAP\tadmin\t{}\n", g(12), "password", "credential-table"),
    ("| Vendor | Login | Password | Notes |\n|---|---|---|---|\n| Hetzner | ops@x.de | {} | 2FA on |\n", g(14), "password",
     "credential-table"),
    # Confluence's wiki markup heads a table with `||`
    ("|| System || Username || Password || Owner ||\n| Jira test | svc-jira | {} | @mh |\n", g(14), "password",
     "credential-table"),
    # a passphrase told between quotes, words between its word and the link; given to a password flag
    ("The signing key passphrase for the release builds is `{}`, all lowercase.", "maple river qbu7whw lantern 37",
     "password", "told-phrase"),
    ('gpg --batch --passphrase "{}" --decrypt secrets.tar.gz.gpg', "velvet otter climbs nine ladders", "password",
     "cli-flag"),
    # told in backquotes; on the next line of a quoted reply; `pw is`
    ("the password for the staging db is `{}`", "Xk9mPq2vLr7", "password", "told-credential"),
    ("> > the Grafana admin, with the password you sent:\n> > {}\n> > but it fails.", "Y0ZRIbXWMzK5177", "password",
     "told-credential"),
    ("[10:44] Tom: pw is {}", "7aXsyoXOPe044LcGfU", "password", "prose-is"),
    # words that name a thing of a password's before a value of a person's password's shape
    ("The password for the test user is {}", "Welcome#2024", "password", "told-credential"),
    ("my new password after the reset is {}", "Xk9#mPq2vLr7", "password", "told-credential"),
    # a password in backquotes after `pw` or `with`
    ("login: admin pw `{}`", "Tr0ub4dor3x", "password", "chat-credentials"),
    ("The exposed key was `{}` (API key, org prod-eu).", "29017ffadd18c3012b5b51fc76ac4f06", "api_key", "prose-is"),
    # a passphrase told with no quotes, up to a bracket or the line's end, in other languages too
    ("user: passphrase is: {} (no quotes, all lower case)", "correct horse battery staple 1987", "password",
     "told-bare-phrase"),
    ("The passphrase for the backup key is\n{}\n(yes, with spaces).", "tangerine wolves debate slowly at noon",
     "password", "told-bare-phrase"),
    ("User „deploy“, Passwort ist {} (mit Leerzeichen). Danach bitte", "Sommerregen im Hafen 1987", "password",
     "told-bare-phrase"),
    # single and curly quotes, a colon for a link, a name in backquotes, a bold word
    ("The passphrase for the backup key is '{}'", "maple river 7 lantern", "password", "told-phrase"),
    ("The passphrase for the backup key is “{}”", "maple river 7 lantern", "password", "told-phrase"),
    ('Passphrase for the backup key: "{}"', "maple river 7 lantern", "password", "told-phrase"),
    ('The password for `deploy` on staging is "{}"', "maple river 7 lantern", "password", "told-phrase"),
    ('The **passphrase** for the release key is "{}"', "maple river 7 lantern", "password", "told-phrase"),
    # Oracle's: RMAN's target, SQL*Plus' `as sysdba`; a user flag, a quoted word, then `-P`
    ("rman target sys/{}@PROD", "Xk9mPq2vLr7Tz", "password", "oracle-connect"),
    ("conn sys/{} as sysdba", "Xk9mPq2vLr7Tz", "password", "sqlplus-connect"),
    ('mosquitto_pub -u plc -t plant/line7 -m "hello world from the plc" -q 1 -P {}', "WETmzLc2xC0YyAKn",
     "password", "cli-user-password"),
    # a CLI's login token, a secret store's value, macOS' keychain import, Maven's passphrase
    (": 1718291040:0;wandb login {}", "4466a62289d991c1aed96d76f1369aea7872dc7f", "token", "cli-login-token"),
    ("$ databricks secrets put-secret ml-prod svc-password --string-value '{}'", "of7egjKM9QEaS0!wot6", "secret",
     "secret-store-value"),
    ("security import dist.p12 -k build.keychain -P {} -T /usr/bin/codesign", "3i2fKYFBNLtR", "password",
     "cli-password-flag"),
    ("    <server>\n      <passphrase>{}</passphrase>\n", "f9wy3 ku9sbe ieb6 0kr0y77", "password", "xml-passphrase"),
    # Azure's key credential; a database URL its parser could not read (no `:` after the scheme)
    ('    new AzureKeyCredential("{}"));', "96ff0fa415cd616690d1035e6d0e48e7", "api_key", "credential-call"),
    ("Could not parse rfc1738 URL from string 'postgresql//etl_user:{}@warehouse.internal:5432/marts'",
     "AVjt9EtVlz0FN4FzD7", "password", "url-userinfo"),
    ("Das Passwort für den Service-User SVC_TABLEAU ist jetzt {} – bitte aktualisieren", "hOfRy6CU7YmQ?bn6",
     "password", "prose-password"),
    ("La contraseña es {} (sí, con espacios).", "cdts56 r14h2rd 53", "password", "told-bare-phrase"),
    # a password hashed from a literal (a seed, a migration): Django's, Laravel's, bcrypt's
    ('            "password": make_password("{}"),', "YGHOSmaC0Vci7Lm9", "password", "credential-call"),
    ("                'password' => Hash::make('{}'),", "IJSJMCS7-frLF300R", "password", "credential-call"),
    ('hashed = bcrypt.hashpw(b"{}", bcrypt.gensalt())', "Tr0ub4dor&3x", "password", "credential-call"),
    # what an end-to-end test types into a password field
    ("  await page.getByLabel('Password').fill('{}');", "mLk49mSdzegK#758", "password", "form-fill"),
    ("cy.get('#password').type('{}{{enter}}')", "Tr0ub4dor&3x", "password", "form-fill"),
    ('driver.find_element(By.ID, "password").send_keys("{}")', "Tr0ub4dor&3x", "password", "form-fill"),
    ("fill_in 'Password', with: '{}'", "Tr0ub4dor&3x", "password", "form-fill"),
    # Kickstart's and Windows' unattended installs; a password piped into a password store
    ("network --bootproto=dhcp\nrootpw --plaintext {}\nfirewall --enabled", "R3dH4t-lab-root!", "password",
     "kickstart-rootpw"),
    ("    <AdministratorPassword>\n      <Value>{}</Value>\n      <PlainText>true</PlainText>", "Vagrant!Win2022",
     "password", "unattend-password"),
    ("  503  echo '{}' | pass insert --echo work/jumphost-admin", "Kestrel!Harbor#2024", "secret", "piped-secret"),
    # what offensive-security tools print: a cracked hash's plaintext, a login found, an LSA secret
    ("$ hashcat -m 1000 ntds.ntlm rockyou.txt --show --username\nAdministrator:c5bc42508006c1c60ce4a9272cedc115:{}",
     "Welcome97!", "password", "cracked-hash"),
    ("[+] 10.0.2.15:445 - Success: '.\\svc_sql:{}' Administrator", "Wj902r9017", "password", "found-login"),
    ("SMB  10.0.0.5  445  DC01  [+] corp.local\\jdoe:{} (Pwn3d!)", "Autumn5377!", "password", "found-login"),
    ("48212:dana.k@northwind-labs.io:{}", "Ab5x3638!", "password", "found-login"),
    ("USER ftp_sync\n34\n331 Please specify the password.\n\t17\nPASS {}\n23", "B8JBBOZZut", "password",
     "protocol-pass"),
    ("[*] DefaultPassword\n(Unknown User):{}\n[*] Cleaning up...", "D4e3esd149!", "password", "lsa-secret"),
    # a SQL client's table (`+---+` rules), a passphrase in a password column
    ("+----+----------+----------------+\n| id | username | password       |\n+----+----------+----------------+\n"
     "| 1  | admin    | {}   |\n+----+----------+----------------+", "Uvb9WOa0jGbZ", "password", "credential-table"),
    # an ARM parameters file's value object, JSON-escaped in an activity log
    ('"requestbody": "{{\\"adminUsername\\":{{\\"value\\":\\"azureadmin\\"}},\\"adminPassword\\":{{\\"value\\":\\"{}\\"}}}}"',
     "osna82o8Se6741#20", "password", "arm-parameter"),
    # a password word and a JSON-escaped literal; Ansible's `become_pass` with spaces
    ('{{"text": "replica: user \\"analyst\\", password \\"{}\\" (read only)."}}', "QL5ckUPU1KIVhms2Z6lI", "password",
     "keyword-quoted"),
    ("ansible_become_pass: {}\n", "purple monkey dishwasher 77", "password", "passphrase-line"),
    # a user flag, then a password flag; Oracle's connect strings; a login pair in backquotes
    ("$ cqlsh cassandra-1.prod 9042 -u telemetry_rw -p {} --ssl", "N7IZJhilpXQ5M9EZkWvB", "password", "cli-user-password"),
    ("mosquitto_pub -h mqtt.local -u line7-plc -P '{}' -t plant3/line7", "WETmzLc2xC0YyAKn", "password",
     "cli-user-password"),
    ("$ sqlplus -s system/{}@//ora-prd-scan.corp:1521/FINPRD <<'EOF'", "AkT7NlrIxitX", "password", "oracle-connect"),
    ("SQL> conn app_owner/{}@FINPRD", "Xk9mPq2vLr7", "password", "sqlplus-connect"),
    ("2. Log in as the seeded QA admin — `qa-admin@acme.dev` / `{}`", "Harbor-Tulip-5969!", "password", "chat-credentials"),
]


@pytest.mark.parametrize("template,secret,label,rule", FOUND, ids=[f"{i}-{t[0][:30]}" for i, t in enumerate(FOUND)])
def test_a_secret_passed_by_position_goes(redactor, template, secret, label, rule):
    out = redactor.redact(template.format(secret))
    assert (out.text, [f.rule for f in out.findings]) == (template.format(f"[REDACTED:{label}]"), [rule])


KEPT = [
    # a word after `password` or `key` with no link, the documentation's TOTP key, hex words
    "the password reset flow sends a link\nprimary key idx_Users2024\ntoken 5yRU9U-jpDKXZ\n",
    "your key: jbsw y3dp ehpk 3pxp jbsw y3dp ehpk 3pxp\nDEAD BEEF CAFE BABE FACE FEED ABBA 2345\n",
    'DEBUG = os.getenv("DEBUG", "false")',                                    # no secret name
    'x = os.getenv("DB_PASSWORD", "changeme")',                               # a placeholder
    'x = os.getenv("API_TOKEN", "")',                                         # empty
    'url = os.getenv("DATABASE_URL", "sqlite:///local.db")',                  # not a secret name
    "psql -U app ${PGPASSWORD:-$FALLBACK_PW}",                                # another variable
    "      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}",           # an error message
    "      DB_PASSWORD: ${DB_PASSWORD:+was-set-already}",                       # an alternative
    "await login(page, user.email, user.password)",                           # names, not literals
    'login("admin")',                                                         # one literal: a user
    "jwt.decode(token, SECRET_KEY, algorithms=['HS256'])",                     # a name
    'smtp.login(user, password)',
    "$ kubectl get secret api -o jsonpath='{.data.DB_PASSWORD}' | wc -c\n42 bytes counted",
    "$ cat README.md\n# Acme",
    'echo "$TOKEN" | gh secret set NPM_TOKEN',                                # a reference
    "echo hello-world | tee out.txt",                                         # no secret store
    "ssh://git@github.com/acme/app.git",                                      # a short user
    "https://build-artifacts-reader-2024@ci.example.com/x",                   # a user made of words
    "https://john.doe@example.com/calendar",
    'login("Sign in", "Welcome back")',                                       # labels, not a password
    "passport.authenticate('local', 'failureRedirect')",
    'i18n.login("button.label", "submit-form")',
    'login(user, "abc" + suffix)',                                            # no literal alone
    "$ heroku config:get APP_NAME -a foo\nmy-heroku-application",            # asked for no secret
    "$ vault kv get -field=username secret/x\nreporting-svc-01",
    "$ op read op://Private/GitHub/username\noctocat-dev-2",
    "$ aws secretsmanager get-secret-value --secret-id x --query Name --output text\nprod/db-credentials",
    "$ az keyvault secret show --vault-name v -n x --query attributes.expires -o tsv\n2025-01-01T00:00:00",
    'echo production | vercel env add NODE_ENV production && echo "deployed to production"',
    "$ kubectl get secret a -o jsonpath='{.data.key}'\n$ROTATED_VALUE_REF",       # a reference printed
    "{\"existing_secret_name\": \"grafana-admin\"}",
    "the Authorization 'required-for-admin-endpoints' note",                   # words after the header name
    "the " + "sk-" + "proj" + " settings page",
    "requirepass\n",
    "API_KEY=my-api-key",                                                     # a stand-in
    "client_secret: your_client_secret",
    "admin:\n  existingSecret: grafana-admin\n",                              # names a secret
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
    "- name: API_TOKEN\n  value: $(TOKEN)",                                 # a Kubernetes reference
    "- name: LOG_LEVEL\n  value: debug",
    "GITHUB_SHA=95e8ed208464615c2eb2ec84c3ba22c76c25ef7f",                   # a commit, named so
    "$ cat /etc/passwd\nroot:x:0:0:root:/root:/bin/bash",
    "user> the login page: GET / POST only",
    'secret := []byte(os.Getenv("JWT_SECRET"))',                            # a call, not a literal
    "hmacKey := []byte(secretFromVault)",
    'token, _ := jwt.Parse(tokenString, keyFunc)',
    'x := []byte("hello-world-2024")',                                        # no secret name
    "Set-Cookie: id=a3fWa; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Secure; HttpOnly",
    "Cookie: theme=dark; did=098c4f7b-0f80-bfea-b75b-2caf0f00e03b",         # a device id
    "(error) NOAUTH Authentication required.",
    "The AUTH command failed: WRONGPASS invalid username-password pair",
    "New value: production",
    '"app" "SCRAM-SHA-256$4096:c2FsdA==$abc=:def="',                          # a stored hash
    '"AppID"\t\t"730"',
    '"buildid" "a1b2c3d4e5"\n"SFUI_Map_de_dust2" "Dust2Map_v1"',                # Valve KeyValues, no PgBouncer
    'buildConfigField "String", "BASE_URL", "\\"https://api.example.com\\""',   # no secret name
    'buildConfigField("String", "API_KEY", "\\"${apiKey}\\"")',                 # a reference
    "ENV DB_USER=app-admin-2 \\\n    DB_NAME=shop",                           # Dockerfile pairs
    'headers = {"Authorization": f"Bearer {token}"}',                           # an f-string's fields
    'api_key = f"sk-{prefix}-{suffix}-v2"',
    "token <- getToken config",                                                # Haskell: a call
    '{"password": pw, "username": "alice"}',                                   # a name, then another key
    'password: str = Field(..., env="DB_PASSWORD")',                            # a call
    "token: Optional[str] = None",
    "conn = DriverManager.getConnection(url, user, password)",
    'app.use(auth("local", "failureRedirect"))',                                # words, not a password
    "[DEBUG]\t\torg.slf4j.slf4j-api:jar:1.7.8:compile",                      # a Maven log line
    ": RSA /etc/ipsec.d/private/gw.key",                                       # a key file
    "user default off",
    '      MasterUserPassword: "{{resolve:secretsmanager:prod/db:SecretString:password}}"',
    '"SecretKey": "@Microsoft.KeyVault(VaultName=kv-prod;SecretName=stripe-secret-key)"',
    '_TOKEN_RE = re.compile(r"(?i)(authorization:\\s*bearer\\s+|api[_-]?key=|password=)[^\\s&]+")',
    "creds := aws.Credentials{",
    "  login(email: String!, password: String!): AuthPayload!",
    "The password is required for login2 and must be 12 characters.",          # prose about passwords
    "Das Passwort ist falsch. Bitte versuchen Sie es erneut.",
    "La contraseña debe tener al menos 8 caracteres.",
    "密码错误，请重试。",
    "3. Verify username and password are correct\\n4. Retry",
    "aws bedrock api-key-YmVkcm9jay5hbWF6b25hd3MuY29t is short lived",        # a compound word
    "$ netlify env:get SITE_NAME\nmy-site-name-2024",                         # asked for no secret
    '{"key": "baseUrl", "value": "https://billing.acme.dev"}',
    "file:/home/dev/.gitconfig    credential.https://github.com.helper=!/usr/bin/gh auth git-credential",
    # the second review's false positives
    "パスワードは英数字8文字以上で設定してください",                              # CJK prose, no value
    "// 检查密码是否包含数字0-9",
    "トークンはOAuth2で取得します",
    "# the mdp is FrozenLake8x8",
    "Each resource is identified by resourceId.",
    "This vulnerability, identified by CVE-2024-3094, affects xz.",
    "[uvicorn.error] INFO: Started server process [1234]",
    "[mail.example.com]:25 relay:temporarily deferred",
    '[{"key": "login.password", "value": "Mot de passe"}, {"key": "login.forgot", "value": "Mot de passe oublié ?"}]',
    '{"password": "Passwort", "login.password": "Mot de passe"}',
    "Remove-Item Env:GITHUB_TOKEN -ErrorAction SilentlyContinue",
    "7z a -p$env:ZIP_PASS backup.7z",
    "  token <- liftIO $ getToken manager",
    "select { case token <- tokenCh: }",
    "Security: PSK authentication enabled",
    "cargo login --help",
    'check.auth("users", "roles_v2")',
    "aws ecr get-login-password | docker login --username AWS --password-stdin 4815.dkr.ecr.eu-west-1.amazonaws.com",
    "1. Terraform creates `arn:aws:secretsmanager:eu-west-1:966446012267:secret:ledger/prod/stripe-F1iThL`",
    'password("env.NPM_TOKEN", "credentialsJSON:f00c4cec-eafb-d11f-85fe-e61d27aee471")',   # TeamCity's reference
    'env = { api_key = "cmd:op read op://Private/Anthropic/credential --no-newline" },',   # 1Password's
    '"SignedEntryTimestamp":"LHOCtnBcQN8YszDBoBGXeG03CRYosiImpVUVacujQB996+hz6KvZr17Yp6dS"',
    'token:\n  "{{ vault_token }}"',                                              # next line: a reference
    "password:\n  - name: x",
    "zip -r -P $BACKUP_PASS backup.zip .",                                     # a reference
    "htpasswd -c /etc/nginx/.htpasswd admin",                                  # prompts: no -b
    "mc alias set minio http://minio:9000 $MINIO_ACCESS $MINIO_SECRET",
    "ALTER USER x IDENTIFIED BY :new_pw;",                                     # a bind parameter
    "IDENTIFIED BY PASSWORD '*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9'",       # MySQL's stored hash
    "hash = PASSWORD(user_input)",
    'echo "$SUDO_PASS" | sudo -S ls',
    'expect "Password:"\nsend "$env(PW)\\r"',
    "Old value: 1\nNew value: 2024-11-06T10:00:00Z",                         # not a reset's output
    "# AUTH required8 for all clients",                                        # prose
    'Das Passwort ist "nicht gesetzt", siehe README',                          # two words: no passphrase
    "The signing key is rotated daily; the license key is printed on the box",  # prose about keys
    ">>> settings.EMAIL_HOST_USER\n'postmaster@mg.acme.io'\n>>> os.getcwd()\n'/home/me/app'",  # no secret's name
    '"vpc_id": {\n  "sensitive": false,\n  "type": "string",\n  "value": "vpc-0a1b2c3d4e5f67890"\n},',
    "MAIL_HOST=smtp.mailgun.org\nMAIL_USERNAME=3f2b8c1e-9d4a-4e6f-8b7a-1c2d3e4f5a6b\n",  # a UUID, no Postmark
    '  val GitHubPat  = """ghp_[A-Za-z0-9]{36}""".r',                           # a scanner's pattern
    "error.password=Password is too short\nuser.password.mismatch=Passwords do not match",  # an i18n bundle
    'send_mail("noreply@acme.io", "Welcome")\n("alice@example.com", "2024-01-01")',   # no password in the pair
    '<div class="g-recaptcha" data-sitekey="6L' + g(38, ALNUM + "_-") + '"></div>',  # public by design
    "RECAPTCHA_SITE_KEY=6L" + g(38, ALNUM + "_-"),
    "kind: SealedSecret\nspec:\n  encryptedData:\n    JWT_SECRET: AgC" + g(500, ALNUM + "+/") + "==",  # ciphertext
    'msg = "token expired: " + reason',
    '"grant_types_supported": ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code"]',
    'commits = [("alice@acme.io", "3f9a1c2b"), ("bob@acme.io", "7d8e9f0a")]\n{"alice@acme.io", "0x1F2E3D4C"}\n'
    '[("alice@acme.io", "u_8f3a2c91")]\n[("alice@acme.io", "+1-415-555-0123x9")]',       # hashes, ids, phones
    "last_password_change: 2025-02-01 09:12:44",                                         # a date
    'the root password is "empty by default" on MariaDB 10\nthe password is "in the .env file"',  # English prose
    '   "db": {\n+    "password_file": "/run/secrets/db"\n   }\nRead password_file at startup.',  # a diff's line
    'ROLES = [("alice@acme.io", "SuperAdmin"), ("bob@acme.io", "Editor01")]',             # roles, not passwords
    '> see settings.DATABASE_PASSWORD\n"Ask the ops team for the current one"',           # a quote, not a REPL
    ">>> tokenizer.decode(ids).token\n'Hello there, friend'",                            # a sentence
    'creds = Credentials("profile-default", "us-east-1-region")',                        # no AWS SDK call
    "https://open.weixin.qq.com/connect/oauth2/authorize?appid=wx8f3a2c91b7d4e6f0&redirect_uri=x",  # an app id
    'SLACK = [("alice@acme.io", "U04ABCD1234"), ("bob@acme.io", "U05EFGH5678")]',        # user ids
    "token_expires_on: 2025-12-31\nsecret_generated: 2025-02-01",                        # dates
    "algoliasearch('latency', 'docsearch-2024-index')",                                  # no Algolia key
    "docker build --secret type=env,id=GH_TOKEN,env=GH_TOKEN --secret src=./token.txt,id=api_token .\n"
    "docker build --secret id=npm_token,env=NPM_TOKEN -t svc:dev .\n"
    "RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci",                        # a secret's mount spec
    "admin:\n  existingSecret: grafana-admin\n  userKey: admin-user\n  passwordKey: admin-password\n",  # key names
    '{"content":"access_key     ****************ABCD shared-credentials-file    \\nsecret_key     '
    '****************ab12 shared\\n","timestamp":"2025-08-01T08:12:56.327Z"}',            # masked, then JSON
    "secret santa2024\nsecret_santa draw2024",                                            # prose
    '{"tokens": {"prompt": 120, "completion": 40, "request_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}}',
    "$ az storage account keys list -n x\nsha512 of backup: " + g(86, "0123456789abcdef") + "==",
    "The password is \"at least 12 characters long\"\nThe password is \"not set\"",
    "Password protected\nsecret handshake\ndb_password changeme",           # prose, a placeholder
    "val c = Credentials(file)",
    '  STRIPE_PRICE_ID_PRO: "price_' + g(24) + '"',                         # a provider object's id
    '"password_hash": "' + g(44, ALNUM + "+/") + '",',                          # what a password hashes to
    # an interpreter printing what is no secret: a quote, a lexer's token kinds, messages, paths
    '> please reset the admin password\n"Done, I reset it and sent the new one over Signal"',
    "(Pdb) p token\n'function'\n(Pdb) p self.token\n'IDENTIFIER'\niex(1)> token\n\"defmodule\"",
    ">>> form.errors['password'][0]\n'This password is too common'",
    ">>> settings.PASSWORD_HASHERS[0]\n'django.contrib.auth.hashers.PBKDF2PasswordHasher'",
    # a UUID under a key that is no credential's, next to Postmark
    'host: smtp.postmarkapp.com\n{"MessageID":"7c9e6679-7425-40de-944b-e07fc1f90ae7"}\n{"user_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"}',
    # a password's rules or where it is kept, told between quotes
    "Le mot de passe est « trop court et trop simple »",
    "Das Passwort ist „mindestens 12 Zeichen lang“",
    'Das Passwort ist "in 1Password unter Staging DB"',
    # prose: the value is a word and a colon; a message after `=`; a timestamp is no password
    "the master key is missing: ActiveSupport::MessageEncryptor::InvalidMessage",
    "validation.password=Must be at least 8 characters",
    "jenkins  | 2025-02-01T09:12:44.201Z Please use the following password to proceed to installation:\n"
    "jenkins  | 2025-02-01T09:12:44.201Z\n",
    # no credential word: `bypass`, `compass`; a key that says its value is not real
    'bypass = "skip all checks here"\ncompass = "north by north west"',
    'config_fake_token = "Xk29dLmQ7pZ3vN8sT4wYb6Rc"\nconst configFakeApiKey = "Xk29dLmQ7pZ3vN8sT4wYb6Rc";',
    ">>> AUTH DIGEST-MD5 dXNlcm5hbWU9ImFsaWNlIixyZWFs",                        # a SASL message
    "sort -b -t, -k2 data.csv | awk '{print $1, checksum=ABCdef1234567890ghijKLMN}'",   # -b of another tool
    '{"content":"HTTP/1.1 200 OK\\nSet-Cookie: theme=dark; Path=/\\nnext: cursor=eyJwYWdlIjoyLCJzaXplIjo1MH0xNzEy\\n"}',
    # a sentence about a credential whose "value" is its id, its hash, a path, a ticket, code
    "the token id for the deploy bot is tok_8f3a2c91e4b7d6a5",
    "the deploy key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
    "the password for the db lives in /etc/app/secrets/db_password.txt",
    "rotated the leaked api key, see SEC-1428 for the timeline",
    "        `${TAG} USING V1 TOKEN LOGIC: refreshRefreshTokenV1: tgId: ${tgId}`,",
    'DATABASE_URL: "postgres://{{ .Values.db.user }}:{{ .Values.db.password }}@{{ .Values.db.host }}:5432/billing"',
    "the cache key for this page is 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c",
    "3. Verify username and password are correct\n4. Retry",
    # a role's password statement in SQL, about the password
    "ALTER ROLE app WITH PASSWORD 'see the vault entry';",
    # login words and pairs that are no credentials
    "log in with GitHub / GitLab and pick the org",
    "totp_enabled: true\nconst totp = generateTotp(secret);\ntotp: null\ntotp: \"123456\"",
    "log in to the VM as root and ubuntu-2204 should be the image",
    "Hash the password to SHA256, then set the cache key to abc123def456",
    # a password column that documents, or signs in another way; codes no words introduce
    "| Field | Password | Notes |\n|---|---|---|\n| admin | `see vault` | rotated monthly |\n| ci | SSO | - |",
    "| Setting | Token | Meaning |\n|---|---|---|\n| auth | Short-lived auth token | Yes |",
    "name,password_policy\nstrict,min12_upper_digit",
    "commit 4e294-1d0f3 merged\nbuild 2084859d7c424271 passed",
    "login page / dashboard redesign for Q3",
    # review probes (eleventh stop): sentences, tables, codes and SQL that hold no secret
    "The USDC token contract on mainnet is 0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
    "The key exchange algorithm negotiated is X25519Kyber768",
    "Token usage for this request: prompt_tokens=1234",
    "INFO token refresh ok for user: alice2024",
    "Generated new API key for project: proj_8f3k2m9x",
    "The password on db-prod-02 expired yesterday; the password to vault-prod-2 is in the runbook",
    "log in to the VM as root and ubuntu-2204 should be the image",
    "Hash the password to SHA256 and bind the token to tenant42",
    "the resume_token was 8263A1B2C3D4E5F60718293A4B5C6D7E",
    "Required: email, password\nOptional: phone, address2",
    "ts,user,method,result\n2024-05-01T10:00,alice,password,ok\n2024-05-01T10:01,bob,sess-7f3a9c21,ok",
    "| Setting | Password requirement |\n|---|---|\n| min | 8+chars |\n| hashing | argon2id-v19 |",
    "## Recovery codes\n\nSee the following pages:\n\n- self-host\n- real-time\n- dark-mode",
    "backup codes support in these releases:\n2023-2024\n4bf92f3577b34da6",
    'stmt.execute("ALTER USER " + user + " WITH PASSWORD \'" + newPassword + "\'");',
    "ALTER ROLE app WITH PASSWORD 'REPLACE ME';",
    'the password for the form is "at least 12 characters long"\nthe password hash for alice is "$2b$12$abc def"',
    'mytool --password "your password here" run\nthe pw is too short',
    # a `-p` after a `-u` that is a port, a pid, a port mapping; prose with a slash; psql's variable
    "psql -U app -p 5432 -h db\nps -u www-data -p 12345,12346\ndocker run -u app -p localhost:8080:80 nginx",
    "mysqldump -u root -p wordpress > wp.sql\nmysql -u root -p --database=shop\njournalctl -u kubelet -p notice\n"
    "python -u train.py -p configs/base.yaml\nsudo -u deploy ./bin/release -p production",
    "connect client/server pieces first\nALTER ROLE orders_app WITH PASSWORD :'new_pw';",
    "See the RMAN backup/restore runbook.\nCompare expdp full/schema modes.\nsqlplus client/server mode is old\n"
    "Connect frontend/backend",
    # a thing of a password's named before its link; a key binding, a job's name in backquotes
    'The password strength label on the signup page is "Very Strong 4".\nOur password rotation cadence is '
    '"every 90 days"\nThe password reset commit was "bump deps 2024 q3" last week.',
    "The key binding to switch to tty2 is `Ctrl+Alt+F2`\nThe API key rotation job is `RotateKeys-2024Q3`",
    # keys that end in `_pass` and name a pass of a process; a long localized message; names in backquotes
    "first_pass: collect files then parse\nrender_pass: shadow depth bloom\n",
    'passwort_vergessen = "Wir senden Ihnen einen Link zum Zurücksetzen per E-Mail"',
    "logging in via `okta` and `Okta-Verify-2024` on the phone",
    # sentences that describe a password, no remark on how to type it
    "// The password is validated server side (see #123)\nThe one-time password is valid for 30 seconds "
    "(TOTP default).\nDas Passwort ist immer noch falsch (siehe Log)",
    # ids after a login word, a tenant's id; git log lines whose author is John; e2e fields not for a password
    "2024-05-02T10:11:12Z WARN auth: failed login 550e8400-e29b-41d4-a716-446655440000 from 10.0.0.5\n"
    "audit: user login 9f86d081884c7d659a2feaa0c55ad015 ok\naz login --tenant 72f988bf-86f1-41af-91ab-2d7cd011db47",
    "$ git log --format='%H:%an' -3\n3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c:John Smith\n"
    "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678:Maria Lopez",
    "await page.getByPlaceholder('Search passengers').fill('John Smith');\nawait page.fill('#passport', 'P12345678');\n"
    "await page.locator('#password-hint').fill('first pet name');",
    # another program's -p after sudo's -u; a parameter whose path says secrets; ids after e-mail addresses
    "sudo -u deploy mkdir -p releases2024\ndocker exec -u root web1 mkdir -p uploads2024",
    "aws ssm put-parameter --name /app/secrets/region --value eu-west-1 --type String",
    "alice@example.com:U02ABCD1234\n[+] x - Success: 'build:release42'",
    # an alphabet split over literals; a password column's notes
    'PASSWORD_CHARS = (\n    "abcdefghijklmnopqrstuvwxyz"\n    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"\n    "0123456789"\n)',
    "| Account | Username | Password |\n|---|---|---|\n| Staging DB | app | rotates every 90 days |\n"
    "| Grafana | admin | SSO since v10 |",
    # an image's digest after a key word, a CLI's login to a registry, a password element's prose
    "$ cosign verify --key cosign.pub ghcr.io/acme/edge-proxy@sha256:" + "0dccabd49c0f52de9bb4d2228cd5bb75e9f8c7109fea5e9c1908b7621e7b",
    "docker login registry.example.com\nnpm login --registry=https://npm.example.com\n<password>see vault entry</password>",
    "the key was invalid, the key is 2048 bits\nthe primary key is user_id and the sort key is created_at_timestamp_v2",
    "the password is stored in the vault (see docs)\nthe passphrase is required for signing (see below)\n"
    "the password is too weak (zxcvbn score 1)\nel password es el de siempre (pregunta a Juan)\n"
    "The root password is whatever you set during install (step 3)\nthe password is admin admin (default)",
    # a hash of a variable, an e2e test's password from the environment, a hashed Kickstart password
    "'password' => Hash::make($request->password),\nawait page.getByLabel('Password').fill(process.env.E2E_PW!);\n"
    "rootpw --iscrypted $6$abcdefgh$Xyz0123456789",
    # a scanner's hash of a secret, a key's fingerprint, Vault's HMACs, hydra's word-list slots
    '"hashed_secret": "09e0d824340ca03c51c9205ed90b46510de06b82",\n'
    "- Old deploy key: SHA256:slF11kNDAKChPKw9EENA60nQCVUOhmuUcxyKbhfKaY6 (ED25519)\n"
    '"accessor":"hmac-sha256:07d34f2bbe33365dfaed37b044c42bb92dc357c339d44e270fe630278765108a"\n'
    'hydra -l admin -P top500.txt 10.0.0.5 http-post-form "/login.php:user=^USER^&pass=^PASS^:F=Invalid"',
    # a hash and a field with no cracking tool named; scp's and git's user@host:path; shadow's fields
    "3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c:release-2024\ndeploy@web01.example.com:/var/www\n"
    "git@github.com:acme/repo.git\nroot:$6$abcdefgh$Xyz0123456789abcdef:19000:0:99999:7:::",
    # git's signing key's id, a Go module's hashes
    "[user]\n\tsigningkey = 5C2BB0BAB198BAE9\n",
    "github.com/aws/aws-sdk-go-v2/credentials v1.17.47 h1:Q8ON16Unbff01NiY+NCVNgC/h5DAr5/s2s11WobtveZ=\n"
    "github.com/aws/aws-sdk-go-v2/credentials v1.17.47/go.mod h1:WESkRmtG60dW6SZYEArad4K+NioQx4zuPceyY53TGc9=",
]


@pytest.mark.parametrize("text", KEPT, ids=[t[:30] for t in KEPT])
def test_code_and_text_around_them_stay(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


def test_a_pair_inside_a_quoted_value_that_is_no_secret_is_found():
    """`"AzureWebJobsStorage": "...;AccountKey=..."`: the outer value is no secret, the pair in it is."""
    key = g(86, ALNUM + "+/") + "=="
    text = ('"AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=stfunc01;AccountKey='
            + key + ';EndpointSuffix=core.windows.net"')
    assert Redactor(None).redact(text).text == text.replace(key, "[REDACTED:api_key]")


def test_an_existing_password_is_a_password(redactor):
    """Only `existingSecret` names a secret; `existing_password` (a change-password form) holds one."""
    out = redactor.redact('{"existing_password": "OldPassw0rd!23", "existingSecret": "grafana-admin"}')
    assert out.text == '{"existing_password": "[REDACTED:password]", "existingSecret": "grafana-admin"}'


def test_a_properties_value_continued_on_the_next_line_goes_whole(redactor):
    """A `.properties` value whose line ends in a glued `\\` goes on the next, indented line; a flag
    or a path there is a shell command's next argument, and stays."""
    head, rest = g(20), g(40, ALNUM + "_")
    text = f"paypal.client.secret={head}\\\n    {rest}\nnext=1\nexport TOKEN={head}\\\n    --verbose\n"
    out = redactor.redact(text)
    assert out.text == ("paypal.client.secret=[REDACTED:secret]\\\n    [REDACTED:secret]\nnext=1\n"
                        "export TOKEN=[REDACTED:token]\\\n    --verbose\n")


def test_the_call_budget_is_per_scan():
    """`credential-call` reads at most 500 calls per text (`max_matches`), counted per scan: the same
    bytes scanned again find the same secrets."""
    from reverie.redact.scanner import Scanner

    text = "".join(f'smtp.login(user, "Xq9{i:04d}Zpw!")\n' for i in range(400))
    data = text.encode()
    scanner = Scanner.shared()
    first, again = scanner.scan(text, None, data), scanner.scan(text, None, data)
    assert (len(first), again) == (400, first)


def test_recovery_codes_in_a_list_go_and_one_code_alone_stays(redactor):
    codes = [g(5, "0123456789abcdef") + "-" + g(5, "0123456789abcdef") for _ in range(3)]
    out = redactor.redact("github-recovery-codes.txt\n" + "\n".join(codes) + "\n")
    assert (out.text, [f.rule for f in out.findings]) == (
        "github-recovery-codes.txt\n" + "\n".join(["[REDACTED:secret]"] * 3) + "\n", ["recovery-codes"] * 3)
    one = "your backup codes:\n" + codes[0] + "\n"
    assert (redactor.redact(one).text, redactor.redact(one).findings) == (one, [])


def test_a_value_cut_inside_a_character_raises_nothing_and_redacts_no_sentence(redactor, caplog):
    """A group's bound can fall inside a multi-byte character (64 bytes of a value, then `é`): the
    handler reads the value without the cut character, and no rule falls back to its whole match."""
    text = "login: admin / " + "a" * 63 + "é"
    out = redactor.redact(text)
    assert (out.text, [r.message for r in caplog.records if "failed on a match" in r.message]) == (text, [])
