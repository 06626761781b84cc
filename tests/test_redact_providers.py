"""Provider formats added for issue 14, each from the provider's own documentation of its keys:
every rule is tested in a realistic context (a config line, a command, a tool output) and next to
near-misses that must survive (a git SHA, a UUID, a lockfile hash, a name with the same prefix).
Token bodies are generated at run time from a seeded RNG: no credential literal in the repository."""

from __future__ import annotations

import base64
import random
import string

import pytest


RNG = random.Random(90210)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
LOWER = string.ascii_lowercase + string.digits


def g(n: int, alphabet: str = ALNUM) -> str:
    while True:
        v = "".join(RNG.choice(alphabet) for _ in range(n))
        if alphabet.isdigit() or (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
            return v


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


PEM = b64(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + g(300).encode() + b"\n-----END RSA PRIVATE KEY-----\n")
CERT = b64(b"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE" + g(300).encode() + b"\n-----END CERTIFICATE-----\n")

# (rule, label, text with {} where the secret goes, the secret)
CASES = [
    ("xai-key", "xai_key", "export XAI_API_KEY={}", "xai-" + g(80)),
    ("xai-key", "xai_key", "{}", "xai-" + g(80)),                                  # alone on a line
    ("groq-key", "groq_key", "client = Groq(api_key=\"{}\")", "gsk_" + g(52)),
    ("replicate-token", "replicate_token", "REPLICATE_API_TOKEN={}", "r8_" + g(37)),
    ("openrouter-key", "openrouter_key", "Authorization header set from {}", "sk-or-v1-" + g(64, HEX)),
    ("openai-scoped-key", "openai_key", "OPENAI_API_KEY={}", "sk-proj-" + g(156, ALNUM + "_-")),
    ("openai-scoped-key", "openai_key", "admin key: {}", "sk-admin-" + g(140, ALNUM + "_-")),
    ("openai-scoped-key", "openai_key", "{}", "sk-svcacct-" + g(150, ALNUM + "_-")),
    ("anthropic-key", "anthropic_key", "ANTHROPIC_API_KEY={}", "sk-ant-api03-" + g(93, ALNUM + "_-") + "AA"),
    ("anthropic-key", "anthropic_key", "{}", "sk-ant-admin01-" + g(90, ALNUM + "_-")),
    ("anthropic-key", "anthropic_key", "CLAUDE_CODE_OAUTH_TOKEN={}", "sk-ant-oat01-" + g(95, ALNUM + "_-")),
    ("anthropic-key", "anthropic_key", "refresh: {}", "sk-ant-ort01-" + g(95, ALNUM + "_-")),
    ("google-api-key", "google_api_key", "GEMINI_API_KEY={}", "AIza" + g(35, ALNUM + "_-")),
    ("huggingface-token", "huggingface_token", "huggingface-cli login --token {}", "hf_" + g(34)),
    ("perplexity-key", "perplexity_key", "PPLX_KEY {}", "pplx-" + g(48)),
    ("pinecone-key", "pinecone_key", "pc = Pinecone(api_key='{}')", "pcsk_" + g(6) + "_" + g(64)),
    ("tavily-key", "tavily_key", "TAVILY_API_KEY={}", "tvly-dev-" + g(32)),
    ("dockerhub-token", "dockerhub_token", "{}", "dckr_pat_" + g(27, ALNUM + "_-")),
    ("dependency-track-key", "dependency_track_key", "X-Api-Key for DT: {}", "odt_" + g(32)),
    ("segment-token", "segment_token", "{}", "sgp_" + g(64)),
    ("circleci-token", "circleci_token", "export CIRCLECI_CLI_TOKEN={}", "CCIPAT_" + g(22) + "_" + g(40, HEX)),
    ("mongodb-atlas-sa", "mongodb_key", "client secret {}", "mdb_sa_sk_" + g(40)),
    ("sourcegraph-license", "token", "{}", "slk_" + g(48)),
    ("dropbox-token", "dropbox_token", "dbx = dropbox.Dropbox(\"{}\")", "sl." + g(140, ALNUM + "_-")),
    ("twitch-oauth", "twitch_token", "PASS oauth:{}", g(30, LOWER)),
    ("salesforce-token", "salesforce_token", "sf org display: Access Token {}", "00D" + g(15) + "!" + g(96, ALNUM + ".")),
    ("teamwork-token", "teamwork_token", "{}", "tkn.v1_" + g(60)),
    ("resend-key", "resend_key", "RESEND_API_KEY={}", "re_" + g(8) + "_" + g(24)),
    ("flyio-token", "flyio_token", 'FLY_API_TOKEN: "{}"', "FlyV1 fm2_" + g(180, ALNUM + "_-") + ",fm2_" + g(60)),
    ("telegram-bot-token", "telegram_token", 'DEBUG urllib3 https://api.telegram.org:443 "POST /bot{}/sendMessage HTTP/1.1"',
     g(10, "0123456789") + ":AA" + g(33, ALNUM + "_-")),
    ("resend-key", "resend_key", "here's the staging key for Resend, don't commit it: {}", "re_" + g(8) + "_" + g(24)),
    ("google-oauth", "google_oauth", "$ gcloud auth print-access-token --impersonate-service-account=x\n{}",
     "ya29.c." + g(200, ALNUM + "_-")),
    ("sonar-token", "sonar_token", "SONAR_TOKEN={}", "squ_" + g(40, HEX)),
    ("aws-session-token", "aws_session_token", "aws_session_token = {}", "IQoJb3JpZ2luX2Vj" + g(400, ALNUM + "+/")),
    ("aws-session-token", "aws_session_token", "{}", "FwoGZXIvYXdzE" + g(300, ALNUM + "+/")),
    ("private-key-base64", "private_key", "PRIVATE_KEY_B64={}", PEM),
    ("jenkins-secret", "jenkins_secret", "<secret>{{{}}}</secret>", "AQAAABAAAAAQ" + g(60, ALNUM + "+/") + "="),
    ("keyword-value", "api_key", "curl -H pdfshift-KEY {}", g(32, HEX)),
    ("slack-webhook", "webhook", "https://hooks.slack.com/services/{}", "T0" + g(8).upper() + "/B0" + g(8).upper() + "/" + g(24)),
    ("discord-webhook", "webhook", "https://discord.com/api/webhooks/{}", "1" + g(17, "0123456789") + "/" + g(68, ALNUM + "_-")),
    ("teams-webhook", "webhook", "https://contoso.webhook.office.com/webhookb2/{}",
     "%s-%s@%s/IncomingWebhook/%s/%s" % (g(8, HEX), g(12, HEX), g(8, HEX), g(32, HEX), g(8, HEX))),
    ("notion-token", "notion_token", "NOTION_TOKEN={}", "ntn_" + g(46)),
    ("notion-token", "notion_token", "notion = Client(auth=\"{}\")", "ntn_" + g(11, "0123456789") + g(35)),
    # current providers (redact.providers), each in a context and some alone on a line
    ("sk-hex-key", "api_key", "DashScope test key (Model Studio):\n{}", "sk-" + g(32, HEX)),
    ("tailscale-key", "tailscale_key", "tailscale up --authkey={}", "tskey-auth-k" + g(11) + "CNTRL-" + g(32)),
    ("langsmith-key", "langsmith_key", "LANGSMITH_API_KEY={}", "lsv2_pt_" + g(32, HEX) + "_" + g(10, HEX)),
    ("langfuse-secret-key", "langfuse_key", "{}",
     "sk-lf-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX))),
    ("honeycomb-key", "honeycomb_key", "OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team,{}", "hcaik_" + g(58, LOWER)),
    ("axiom-token", "axiom_token", "{}", "xaat-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX))),
    ("supabase-key", "supabase_key", "supabase login --token {}", "sbp_" + g(40, HEX)),
    ("supabase-key", "supabase_key", "SUPABASE_SECRET_KEY={}", "sb_secret_" + g(32, ALNUM + "_-")),
    ("neon-key", "neon_key", "neonctl projects list --api-key {}", "napi_" + g(64, LOWER)),
    ("render-key", "render_key", "Authorization header from {}", "rnd_" + g(32)),
    ("netlify-token", "netlify_token", "{}", "nfp_" + g(36)),
    ("deno-deploy-token", "deno_token", "deployctl deploy --token={}", "ddp_" + g(36)),
    ("buildkite-token", "buildkite_token", "{}", "bkua_" + g(40, HEX)),
    ("contentful-token", "contentful_token", "contentful login --management-token {}", "CFPAT-" + g(43, ALNUM + "_-")),
    ("figma-token", "figma_token", "FIGMA_TOKEN={}", "figd_" + g(40, ALNUM + "_-")),
    ("posthog-personal-key", "posthog_key", "{}", "phx_" + g(43)),
    ("bitbucket-token", "bitbucket_token", "app password {}", "ATBB" + g(32)),
    ("hubspot-token", "hubspot_token", "{}", "pat-na1-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX))),
    ("intercom-token", "intercom_token", "{}", "dG9rOj" + g(54, ALNUM + "+/") + "="),
    ("airtable-token", "airtable_token", "{}", "pat" + g(14) + "." + g(64, HEX)),
    ("firecrawl-key", "firecrawl_key", "app = FirecrawlApp(api_key='{}')", "fc-" + g(32, HEX)),
    ("cerebras-key", "cerebras_key", "{}", "csk-" + g(48, LOWER)),
    ("nvidia-key", "nvidia_key", "NVIDIA_API_KEY={}", "nvapi-" + g(64, ALNUM + "_-")),
    ("e2b-key", "e2b_key", "{}", "e2b_" + g(40, HEX)),
    ("elevenlabs-key", "elevenlabs_key", "client = ElevenLabs(api_key=\"{}\")", "sk_" + g(48, HEX)),
    ("paddle-key", "paddle_key", "{}", "pdl_live_apikey_" + g(26, LOWER) + "_" + g(22) + "_" + g(3)),
    ("pagerduty-user-token", "pagerduty_token", "pd = APISession('{}')", "u+" + g(9) + "aZ" + g(7)),
    # a JOSE header, then no JSON: an encrypted JWE, a payload cut or opaque
    ("jose-token", "jwt", "{}", "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0.." + g(16, ALNUM + "_-") + "." + g(80, ALNUM + "_-") + "."
     + g(22, ALNUM + "_-")),
    ("prefixed-cookie", "token", "copied from devtools:\n__Host-session={}", g(64, ALNUM + "_-")),
    # a session cookie set by a call, as a field, in a browser's stored cookies
    ("session-cookie", "token", 'req.Header.Set("Cookie", "connect.sid={}; theme=dark")', "s%3A" + g(32) + "." + g(43)),
    ("session-cookie-field", "token", 'requests.get(url, cookies={{"sessionid": "{}", "theme": "dark"}})', g(32, LOWER + "0123456789")),
    ("session-cookie-field", "token", '{{"cookies": [{{"name": "sessionid", "value": "{}", "domain": ".acme.example"}}]}}',
     g(32, LOWER + "0123456789")),
    # an Authorization header set by a call, by nginx or Apache
    ("authorization-header", "basic_auth", 'proxy_set_header Authorization "Basic {}";', "U1z" + g(25, ALNUM + "/+")),
    ("authorization-header", "bearer", 'conn.setRequestProperty("Authorization", "Bearer {}");', g(40, ALNUM + "_-")),
    # NuGet.org keys, Caddy's DNS challenge token, an Anaconda channel token
    ("nuget-api-key", "api_key", "{}", "oy2" + g(43, LOWER + "0123456789")),   # alone on a line
    ("nuget-api-key", "api_key", '<add key="https://www.nuget.org" value="{}" />', "oy2" + g(43, LOWER + "0123456789")),
    ("caddy-dns-token", "token", "{{\n\temail ops@example.com\n\tacme_dns cloudflare {}\n}}", g(40, ALNUM + "_")),
    ("caddy-dns-token", "token", "tls {{\n\tdns duckdns {}  # home\n}}", g(36, LOWER + "0123456789")),
    ("anaconda-channel-token", "token", "channels:\n  - https://conda.anaconda.org/t/{}/acme-private", "u2-" + g(36, LOWER + "0123456789")),
    # LaunchDarkly SDK and mobile keys, Mailgun's current private keys, a Sentry org token without
    # its secret part, a Vault token of the older length, an OpenAI project key shorter than issued
    ("launchdarkly-key", "api_key", 'return new LDClient("{}", config);',
     "sdk-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX))),
    ("launchdarkly-key", "api_key", "{}", "mob-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX))),
    ("mailgun-private-key", "mailgun_key", "Mailgun key if you need it: {}", "%s-%s-%s" % (g(32, HEX), g(8, HEX), g(8, HEX))),
    ("sentry-token", "sentry_token", "{}", "sntrys_eyJ" + g(50, ALNUM + "+/_-")),
    ("vault-token", "vault_token", "Initial root token:\n\n    {}", "hvs." + g(24)),
    ("openai-scoped-key", "openai_key", "{}", "sk-proj-" + g(56, ALNUM + "_-")),
    ("nats-nkey-seed", "private_key", "-----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------",
     "SU" + g(56, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
    ("keyword-value", "api_key", "- switched to the new org key `{}`; the old one was revoked", g(32, HEX)),
    ("confluent-api-key", "api_key", 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
     'username="{}" password="x";', g(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")),
    ("passphrase", "password", 'networking.wireless.networks."Home-5G" = {{ psk = "{}"; }};', "seven wooden ladders at dusk 75"),
]


@pytest.mark.parametrize("rule,label,template,secret", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_provider_rule_in_context(redactor, rule, label, template, secret):
    text = template.format(secret)
    out = redactor.redact(text)
    assert out.text == template.format(f"[REDACTED:{label}]")
    assert secret not in out.text
    assert rule in [f.rule for f in out.findings]


NEAR_MISSES = [
    "commit " + g(40, HEX) + " (HEAD -> main)",                                   # a git SHA
    "request id 550e8400-e29b-41d4-a716-446655440000",                           # a UUID
    "https://conda.anaconda.org/conda-forge/linux-64/repodata.json",             # a public channel
    "tls {\n  dns cloudflare {env.CF_API_TOKEN}\n}",                             # a Caddy placeholder
    "dns lookup 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",                        # no Caddy provider
    '"integrity": "sha512-' + g(86, ALNUM + "+/") + '=="',                        # a lockfile hash
    "resolved \"https://registry.yarnpkg.com/x/-/x-1.2.3.tgz#" + g(40, HEX) + "\"",
    "see sk-proj-settings-page-for-the-organisation-admins",                       # words after a prefix
    "xai-grok-2-vision-1212 is the model name",
    "gsk_setup.sh and tvly-search tool",
    "dckr_pat_ expects 27 characters",
    "re_validate_emailaddressesfromthelistnow(x)",                                 # words after a prefix
    "ya29.c.example",
    "tls.crt: " + CERT,                                                             # a base64 certificate
    "sl.bar.baz is a module path",
    "oauth:callback handler",
    "sha256:" + g(64, HEX),                                                         # an image digest
    "docker run -p 8080:80 nginx && mkdir -p build/out && ssh -p 2222 me@host",
    "the cache key " + g(12, HEX) + " was stale",
    'cookies={"theme": "dark-mode-solarized", "lang": "en-GB-oxford"}',          # no session cookie
    '{"name": "theme", "value": "dark-mode-solarized-x"}',
    '{"type": "user", "sessionId": "550e8400-e29b-41d4-a716-446655440000"}',     # a transcript's session
    'xhr.setRequestHeader("Authorization", authorizationHeaderValue);',           # a variable
    'proxy_set_header Authorization $http_authorization;',
    # public by design, by their documented form; ids named as ids; Django's stored hashes
    "STRIPE_PUBLISHABLE_KEY=pk_live_" + g(40),
    "posthog.init('phc_" + g(43) + "')",
    'clientToken: "pub' + g(32, HEX) + '",   // Datadog RUM',
    "const ALGOLIA_SEARCH_ONLY_KEY = \"" + g(32, HEX) + "\";",
    "anthropic-organization-id: %s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX)),
    "openai-organization: acme-inc-" + g(6, LOWER),
    '"password": "pbkdf2_sha256$870000$' + g(22) + '$' + g(43, ALNUM + "+/") + '=",',
    'body = self.fixtures.load("api_org_%s_%s_%s_%s_%s.xml")' % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX)),
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is the header every HS256 example starts with",
    "SESSION_COOKIE_NAME=__Host-session",
    "__Host-theme=dark-mode-preference-2024-v2; __Secure-tz=America/Los_Angeles_2024_05",
    "kubectl logs api-3fa85f64-5717-4562-b3fc-2c963f66afa6 -n prod",
    "az apim show --name contoso-platform-prod-APIM-westeu && pool: company-platform-shared-build-AZDO-agents01",
    '<script src="/static/js/fc-9f86d081884c7d659a2feaa0c55ad015.js"></script>',
    "bb_live_session_debug_2024_05 is the log file",
    "__Secure-next-auth.callback-url=https%3A%2F%2Fexample.com",
    "sdk-release-2024.11 and api-%s-%s-%s-%s-%s" % (g(8, HEX), g(4, HEX), g(4, HEX), g(4, HEX), g(12, HEX)),
    "artifact %s-%s" % (g(32, HEX), g(8, HEX)),                                    # one group, not a Mailgun key
    "hvs.example_placeholder_for_the_docs_here and hvs.your_vault_token_goes_here",   # no digit, words
]


@pytest.mark.parametrize("text", NEAR_MISSES, ids=[t[:24] for t in NEAR_MISSES])
def test_near_misses_survive(redactor, text):
    out = redactor.redact(text)
    assert (out.text, out.findings) == (text, [])


AWS_ID = "AKIA" + "QX7MZ2RT5KVW3NPA"


@pytest.mark.parametrize("before,after", [
    ("{id}\n", ""),                                                   # a pair pasted on two lines
    ("User name,Access key ID,Secret access key\nci,{id},", "\n"),     # `aws iam create-access-key` CSV
    ("key {id} / ", " (rotate it)"),
])
def test_the_secret_half_of_an_aws_pair_goes_with_its_id(redactor, before, after):
    secret = "Nk1" + g(37, ALNUM + "/+")
    out = redactor.redact(before.format(id=AWS_ID) + secret + after)
    assert out.text == before.format(id="[REDACTED:aws_access_key]") + "[REDACTED:aws_secret_key]" + after
    assert sorted(f.rule for f in out.findings) == ["aws-access-key-id", "aws-secret-after-id"]


AZ_KEY = g(86, ALNUM + "+/") + "=="


@pytest.mark.parametrize("output", [
    "CreationTime                      KeyName    Permissions    Value\n"
    "2024-06-12T08:01:44.512353+00:00  key1       FULL           {k}\n",
    '[\n  {{\n    "keyName": "key1",\n    "permissions": "FULL",\n    "value": "{k}"\n  }}\n]\n',
])
def test_the_keys_az_storage_prints_go(redactor, output):
    text = "$ az storage account keys list -g rg -n acmedata -o table\n" + output
    assert redactor.redact(text.format(k=AZ_KEY)).text == text.format(k="[REDACTED:azure_storage_key]")


def test_the_tokens_influx_auth_prints_go(redactor):
    token = g(86, ALNUM + "_-") + "=="
    text = ("$ influx auth create --org homelab --read-buckets\nID\tDescription\tToken\tUser Name\n"
            "0d1f\tgrafana-ro\t{t}\tadmin\n")
    assert redactor.redact(text.format(t=token)).text == text.format(t="[REDACTED:token]")


def test_a_long_influx_table_goes_whole_and_a_second_scan_finds_the_same():
    """The window after an anchor is read once per scan (`h_values_after`'s state), never skipped
    in a scan of its own: the same bytes scanned twice give the same spans."""
    from reverie.redact.scanner import Scanner

    rows = "".join(f"0d{i:014x}\tgrafana-ro-{i}\t{g(86, ALNUM + '_-')}==\tadmin\t[read:orgs/buckets]\n" for i in range(10))
    text = "$ influx auth list\nID\tDescription\tToken\tUser Name\tPermissions\n" + rows
    scanner = Scanner.shared()
    first, again = scanner.scan(text), scanner.scan(text)
    assert ([s.rule for s in first], again) == (["influx-token-output"] * 10, first)


def test_a_key_shaped_base64_without_the_command_stays(redactor):
    text = f"$ az storage account show -n acmedata\nchecksum {AZ_KEY}\n"
    assert redactor.redact(text).text == text


def test_a_public_mapbox_token_named_public_stays_and_no_other_does(redactor):
    public = "pk.eyJ1Ijoi" + g(40) + "." + g(22)
    secret = "sk.eyJ1Ijoi" + g(40) + "." + g(22)
    kept = f"NEXT_PUBLIC_MAPBOX_TOKEN={public}"
    assert redactor.redact(kept).text == kept
    assert redactor.redact(f"MAPBOX_TOKEN={public}").text == "MAPBOX_TOKEN=[REDACTED:mapbox_token]"
    assert redactor.redact(f"NEXT_PUBLIC_MAPBOX_TOKEN={secret}").text == "NEXT_PUBLIC_MAPBOX_TOKEN=[REDACTED:mapbox_token]"


RZP_ID = "rzp_live_" + g(14)


@pytest.mark.parametrize("template", [
    'return new RazorpayClient("{id}", "{secret}");',
    "Key Id: {id}\nKey Secret: {secret}\n",
    'client = razorpay.Client(auth=("{id}", "{secret}"))',
])
def test_a_razorpay_key_secret_goes_and_its_public_key_id_stays(redactor, template):
    secret = g(24)
    out = redactor.redact(template.format(id=RZP_ID, secret=secret))
    assert out.text == template.format(id=RZP_ID, secret="[REDACTED:razorpay_key_secret]")


@pytest.mark.parametrize("follower", [g(24, HEX), "order_" + g(14), "abcdefghijklmnopqrstuvwx"])
def test_after_a_razorpay_id_a_hash_or_an_order_id_stays(redactor, follower):
    text = f'checkout.open({{razorpay_key_id: "{RZP_ID}", order_id: "{follower}"}})'
    assert redactor.redact(text).text == text


@pytest.mark.parametrize("follower", [g(40, HEX), g(40, HEX).upper(), "ab" * 20, "x" * 40,
                                      g(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")])   # base32: one case
def test_after_an_aws_id_a_hash_or_filler_stays(redactor, follower):
    """A git SHA, a base32 string (one case each), a run of filler: no base64 key."""
    out = redactor.redact(f"{AWS_ID}\ncommit {follower}")
    assert out.text == f"[REDACTED:aws_access_key]\ncommit {follower}"
