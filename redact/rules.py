"""The detection rules: general patterns per provider and per credential shape.

Every rule has lower-case keywords (for the Aho-Corasick prefilter: a rule's regex runs only on a
text that contains one of its keywords) and an RE2 pattern (linear time, compiled as Latin-1 bytes).
A rule without keywords (a short or punctuation-only prefix would hit almost every text) runs on
every text that reached the scanner. Rules are written per provider or per shape, never per test case; gitleaks' and detect-secrets'
public rule sets were the source of the provider prefixes and lengths.

Kinds (how `redact.scanner` turns a match into a span to redact):
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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    name: str
    label: str
    keywords: tuple[str, ...]
    pattern: str
    kind: str = "token"
    min_entropy: float = 0.0
    options: dict = field(default_factory=dict, hash=False, compare=False)


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

# The key part of an assignment; the key must contain a secret word or a provider name.
_KEYWORD_ALT = "pass|pwd|secret|token|cred|key|salt|auth|" + "|".join(
    sorted({re.escape(p) for p in PROVIDERS if len(p) >= 4}, key=len, reverse=True)
)
KEY_RE = r"([A-Za-z0-9_.$\-]*(?:" + _KEYWORD_ALT + r")[A-Za-z0-9_.\-]*)"
ASSIGN_KEYWORDS = tuple(
    sorted({"pass", "pwd", "secret", "token", "cred", "key", "salt", "auth"}
           | {p for p in PROVIDERS if len(p) >= 4})
)

# Value alternatives shared by the assignment-like rules: "double", 'single', `backtick`, bare.
VALUE_RE = (
    r"""(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'|`([^`\n]*)`|([^\s"'`,;]+))"""
)
SEP_RE = r"""(=>|:{1,3}=|[?.+|!]?={1,3}|:|,)"""

_END = r"(?:[^A-Za-z0-9_]|$)"


def _tok(name: str, label: str, keywords, pattern: str, min_entropy: float = 0.0, **options) -> Rule:
    return Rule(name, label, tuple(k.lower() for k in keywords), pattern, "token", min_entropy, options)


RULES: tuple[Rule, ...] = (
    # --- private keys -----------------------------------------------------------------------
    Rule(
        "private-key", "private_key", ("-----begin", "begin pgp private", "private key"),
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}(?:PRIVATE KEY(?: BLOCK)?)?-----"
        r"|(?:[A-Za-z0-9+/=:,.\- \t\r\n]|\\[nrt])*)",
        "pem",
    ),
    Rule(
        "putty-private-key", "private_key", ("putty-user-key-file",),
        r"PuTTY-User-Key-File-\d: [\s\S]*?Private-MAC: [0-9a-fA-F]+", "pem",
    ),
    # --- cloud and provider tokens with distinctive prefixes --------------------------------
    _tok("aws-access-key-id", "aws_access_key", ("akia", "asia", "abia", "acca", "a3t"),
         r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b", exclude_suffix="EXAMPLE",
         allow_filler=True),
    _tok("aws-bedrock-key", "aws_bedrock_key", ("absk", "bedrock-api-key-"),
         r"\b(ABSK[A-Za-z0-9+/]{100,}={0,2}|bedrock-api-key-[A-Za-z0-9+/]{20,}={0,2})"),
    _tok("github-token", "github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
         r"\b((?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,})"),
    _tok("github-fine-grained-pat", "github_token", ("github_pat_",),
         r"\b(github_pat_[0-9A-Za-z_]{70,})"),
    _tok("gitlab-token", "gitlab_token",
         ("glpat-", "glptt-", "glrt-", "gldt-", "glcbt-", "glffct-", "glft-", "glimt-", "glagent-",
          "gloas-", "glsoat-"),
         r"\b(gl(?:pat|ptt|rt|dt|ffct|ft|imt|agent|oas|soat)-[0-9A-Za-z_\-.]{20,}"
         r"|glcbt-[0-9A-Za-z]{1,5}_[0-9A-Za-z_\-]{20,})"),
    _tok("gitlab-runner-registration", "gitlab_token", ("gr1348941",), r"\b(GR1348941[\w\-]{20,})", min_entropy=3.0),
    _tok("gitlab-session", "gitlab_token", ("_gitlab_session=",), r"_gitlab_session=([0-9a-z]{32})"),
    _tok("slack-token", "slack_token", ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxo-", "xoxs-", "xoxe"),
         r"\b(xoxb-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9\-]*|xoxb-[0-9]{8,14}-[A-Za-z0-9]{18,26}"
         r"|xox[pe](?:-[0-9]{6,13}){3}-[A-Za-z0-9\-]{16,34}|xox[os]-\d+-\d+-\d+-[A-Fa-f\d]+"
         r"|xox[ar]-(?:\d-)?[0-9A-Za-z]{8,48}|xox[abposr]-(?:\d+-)+[a-z0-9]{8,}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{140,}|xoxe-\d-[A-Za-z0-9]{120,})",
         min_entropy=2.5),
    _tok("slack-app-token", "slack_token", ("xapp-",), r"\b(xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)"),
    _tok("slack-webhook", "webhook", ("hooks.slack.com",),
         r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_\-]{20,120})"),
    _tok("discord-webhook", "webhook", ("/api/webhooks/",),
         r"discord(?:app)?\.com/api/webhooks/(\d{5,30}/[A-Za-z0-9_\-]{30,120})"),
    _tok("teams-webhook", "webhook", ("webhook.office.com", "webhookb2"),
         r"\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/\-]{40,})"),
    _tok("stripe-key", "stripe_key", ("sk_live", "sk_test", "sk_prod", "rk_live", "rk_test", "rk_prod", "whsec_"),
         r"\b((?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{24,100})"),
    _tok("anthropic-key", "anthropic_key", ("sk-ant-",), r"\b(sk-ant-(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{93}AA)"),
    _tok("openai-key", "openai_key", ("sk-proj-", "sk-svcacct-", "sk-admin-", "t3blbkfj"),
         r"\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|sk-[A-Za-z0-9]{16,64}T3BlbkFJ[A-Za-z0-9]{16,64})"),
    _tok("google-api-key", "google_api_key", ("aiza",), r"\b(AIza[0-9A-Za-z_\-]{35})"),
    _tok("google-oauth", "google_oauth", ("gocspx-", "ya29."),
         r"\b(GOCSPX-[0-9A-Za-z_\-]{20,40}|ya29\.[0-9A-Za-z_\-]{20,})"),
    _tok("twilio-key", "twilio_key", (), r"\b((?:SK|AC)[0-9a-fA-F]{32})\b", min_entropy=2.5),
    _tok("sendgrid-key", "sendgrid_key", ("sg.",), r"\b(SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})"),
    _tok("mailgun-key", "mailgun_key", ("key-", "pubkey-"), r"\b((?:pub)?key-[0-9a-zA-Z]{32})\b"),
    _tok("mailchimp-key", "mailchimp_key", ("-us",), r"\b([0-9a-f]{32}-us\d{1,2})\b"),
    _tok("npm-token", "npm_token", ("npm_",), r"\b(npm_[A-Za-z0-9]{36})\b"),
    _tok("pypi-token", "pypi_token", ("pypi-age",), r"\b(pypi-AgE[A-Za-z0-9_\-]{50,})"),
    _tok("rubygems-token", "rubygems_token", ("rubygems_",), r"\b(rubygems_[a-f0-9]{48})"),
    _tok("huggingface-token", "huggingface_token", ("hf_", "api_org_"),
         r"\b((?:hf|api_org)_[A-Za-z0-9]{30,40})\b", min_entropy=3.0),
    _tok("shopify-token", "shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"),
         r"\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})"),
    _tok("digitalocean-token", "digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"),
         r"\b(do[opr]_v1_[a-f0-9]{64})"),
    _tok("heroku-key", "heroku_key", ("hrku-",), r"\b(HRKU-[0-9A-Za-z_\-]{20,100})"),
    _tok("databricks-token", "databricks_token", ("dapi",), r"\b(dapi[a-f0-9]{32}(?:-\d)?)\b", min_entropy=3.0),
    _tok("jwt", "jwt", ("eyj",),
         r"\b(ey[A-Za-z0-9_\-]{10,}\.ey[A-Za-z0-9_\-/\\]{10,}(?:\.[A-Za-z0-9_\-/\\+]*={0,2})?)",
         min_entropy=3.0),
    _tok("jwt-base64", "jwt", ("zxlk",), r"\b(ZXlK[A-Za-z0-9+/_\-]{40,}={0,2})"),
    _tok("onepassword-service-token", "onepassword_token", ("ops_eyj",), r"\b(ops_eyJ[A-Za-z0-9+/]{100,}={0,3})"),
    _tok("onepassword-secret-key", "onepassword_key", ("a3-",),
         r"\b(A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})\b",
         min_entropy=3.0),
    _tok("age-secret-key", "age_key", ("age-secret-key-1",), r"(AGE-SECRET-KEY-1[0-9A-Z]{58})", allow_filler=True),
    _tok("artifactory-key", "artifactory_key", ("akcp", "cmvmd"),
         r"\b(AKCp[A-Za-z0-9]{60,80}|cmVmd[A-Za-z0-9]{55,70})\b", min_entropy=3.0),
    _tok("atlassian-token", "atlassian_token", ("atatt3", "atctt3"), r"\b(AT[AC]TT3[A-Za-z0-9_\-=]{100,})"),
    _tok("azure-ad-client-secret", "azure_secret", ("q~",),
         r"(?:^|[\\'\"`\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34})(?:$|[\\'\"`\s<),])",
         min_entropy=3.0),
    _tok("azure-storage-sas", "azure_sas", ("sig=",), r"[?&]sig=([A-Za-z0-9%+/=]{20,})"),
    _tok("clickhouse-key", "clickhouse_key", ("4b1d",), r"\b(4b1d[A-Za-z0-9]{38})\b", min_entropy=3.0),
    _tok("clojars-token", "clojars_token", ("clojars_",), r"\b(CLOJARS_[a-zA-Z0-9]{60})"),
    _tok("cloudflare-origin-ca", "cloudflare_key", ("v1.0-",), r"\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{100,})"),
    _tok("defined-networking", "token", ("dnkey-",), r"\b(dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52})"),
    _tok("doppler-token", "doppler_token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct."),
         r"\b(dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44})"),
    _tok("duffel-token", "token", ("duffel_",), r"\b(duffel_(?:test|live)_[A-Za-z0-9_\-=]{43})"),
    _tok("dynatrace-token", "token", ("dt0c01.",), r"\b(dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})"),
    _tok("easypost-token", "token", ("ezak", "eztk"), r"\b(EZ[AT]K[A-Za-z0-9]{54})\b", min_entropy=3.0),
    _tok("facebook-page-token", "facebook_token", ("eaam", "eaac"), r"\b(EAA[MC][A-Za-z0-9]{60,})", min_entropy=3.5),
    _tok("facebook-access-token", "facebook_token", (),
         r"\b(\d{15,16}(?:\||%7[Cc])[0-9A-Za-z\-_]{27,40})" + _END, min_entropy=3.0),
    _tok("flutterwave-key", "token", ("flwseck_test", "flwpubk_test", "flwseck-", "flwpubk-"),
         r"\b(FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?)"),
    _tok("flyio-token", "flyio_token", ("fo1_", "fm1", "fm2_"),
         r"\b(fo1_[\w\-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3})",
         min_entropy=3.5),
    _tok("frameio-token", "token", ("fio-u-",), r"\b(fio-u-[A-Za-z0-9\-_=]{64})"),
    _tok("grafana-token", "grafana_token", ("glc_", "glsa_", "eyjrijoi"),
         r"\b(glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}={0,3})"),
    _tok("harness-token", "token", ("pat.", "sat."),
         r"\b((?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})"),
    _tok("terraform-token", "terraform_token", ("atlasv1",), r"\b([A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70})"),
    _tok("infracost-token", "token", ("ico-",), r"(?:^|[^.\w])(ico-[A-Za-z0-9]{32})" + _END, min_entropy=3.0),
    _tok("intra42-secret", "token", ("s-s4t2",), r"\b(s-s4t2(?:ud|af)-[A-Fa-f0-9]{64})"),
    _tok("linear-key", "linear_key", ("lin_api_", "lin_oauth_"), r"\b(lin_(?:api|oauth)_[A-Za-z0-9]{40})"),
    _tok("mapbox-token", "mapbox_token", ("pk.", "sk.", "tk."),
         r"\b([pst]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,40}|[ps]k\.[a-z0-9]{60}\.[a-z0-9]{22})"),
    _tok("maxmind-key", "token", ("_mmk",), r"\b([A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)", min_entropy=3.5),
    _tok("newrelic-key", "newrelic_key", ("nrjs-", "nrii-", "nrak-", "nral-"),
         r"\b(NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}|NRAK-[A-Za-z0-9]{27}|NRAL-[A-Za-z0-9]{27,40})"),
    _tok("notion-token", "notion_token", ("ntn_", "secret_"),
         r"\b(ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})\b", min_entropy=3.5),
    _tok("octopus-key", "token", ("api-",), r"\b(API-[A-Z0-9]{26})\b", min_entropy=3.0),
    _tok("openshift-token", "token", ("sha256~",), r"\b(sha256~[\w\-]{43})"),
    _tok("perplexity-key", "token", ("pplx-",), r"\b(pplx-[A-Za-z0-9]{48})"),
    _tok("planetscale-token", "planetscale_token", ("pscale_",), r"\b(pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64})"),
    _tok("postman-key", "token", ("pmak-",), r"\b(PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34})"),
    _tok("prefect-key", "token", ("pnu_",), r"\b(pnu_[A-Za-z0-9]{36})"),
    _tok("pulumi-token", "token", ("pul-",), r"\b(pul-[a-f0-9]{40})"),
    _tok("readme-key", "token", ("rdme_",), r"\b(rdme_[a-z0-9]{70})"),
    _tok("scalingo-token", "token", ("tk-us-",), r"\b(tk-us-[\w\-]{48})"),
    _tok("sendinblue-key", "token", ("xkeysib-", "xsmtpsib-"), r"\b(x(?:keys|smtps)ib-[a-f0-9]{64}-[A-Za-z0-9]{16})"),
    _tok("sentry-token", "sentry_token", ("sntrys_", "sntryu_"),
         r"\b(sntrys_eyJ[A-Za-z0-9+/=_]{50,}|sntryu_[a-f0-9]{64})\b"),
    _tok("settlemint-token", "token", ("sm_aat_", "sm_pat_", "sm_sat_"), r"\b(sm_(?:aat|pat|sat)_[A-Za-z0-9]{16})"),
    _tok("shippo-token", "token", ("shippo_",), r"\b(shippo_(?:live|test)_[A-Fa-f0-9]{40})"),
    _tok("sourcegraph-token", "token", ("sgp_",), r"\b(sgp_(?:[A-Fa-f0-9]{16}|local)_[A-Fa-f0-9]{40}|sgp_[A-Fa-f0-9]{40})", min_entropy=3.0),
    _tok("square-token", "square_token", ("sq0atp-", "sq0csp-", "eaaa"),
         r"\b(sq0atp-[\w\-]{22,60}|sq0csp-[\w\-]{40,50}|EAAA[\w\-]{40,70})", min_entropy=3.0),
    _tok("telegram-bot-token-ctx", "telegram_token", ("telegr",),
         r"(?i)telegr[\s\S]{0,80}?(\d{5,16}:A[A-Za-z0-9_\-]{34})", min_entropy=3.0),
    _tok("telegram-bot-token", "telegram_token", (":aa",),
         r"(?:^|[^\w])(\d{5,16}:AA[A-Za-z0-9_\-]{33})" + r"(?:[^\w\-]|$)"),
    _tok("typeform-token", "token", ("tfp_",), r"\b(tfp_[A-Za-z0-9\-_.=]{59})"),
    _tok("vault-token", "vault_token", (),
         r"\b(hv[sb]\.[\w\-]{90,}|s\.[A-Za-z0-9]{24})\b", min_entropy=3.0, needs_digit=True),
    _tok("yandex-token", "token", ("t1.", "aqvn"),
         r"\b(t1\.[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}|AQVN[A-Za-z0-9_\-]{35,38})"),
    _tok("alibaba-key-id", "alibaba_key", ("ltai",), r"\b(LTAI[A-Za-z0-9]{20})\b", min_entropy=3.0),
    _tok("adobe-secret", "token", ("p8e-",), r"\b(p8e-[A-Za-z0-9]{32})\b"),
    _tok("authress-key", "token", ("sc_", "ext_", "scauth_", "authress_"),
         r"\b((?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_\-][a-z0-9\-]{10,32}\.[a-z0-9+/_=\-]{30,120})"),
    _tok("discord-bot-token", "discord_token", (),
         r"\b([MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38})\b", min_entropy=3.5),
    _tok("softlayer-url", "softlayer_key", ("api.softlayer.com",),
         r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})"),
    _tok("plaid-token", "plaid_token", ("access-sandbox-", "access-development-", "access-production-"),
         r"\b(access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"),
    # --- credentials in URLs, connection strings, headers, commands ----------------------------
    Rule("url-userinfo", "password", ("://",),
         r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://([^\s:@/\"'<>\\]*):([^\s@/\"'<>\\]+)@", "userinfo"),
    Rule("url-query-secret", "password", ("pass", "pwd", "secret", "token", "key", "sig"),
         r"(?i)[?&;]((?:[a-z0-9_]*(?:password|passwd|pwd|secret|token)|api[_\-]?key|apikey|access[_\-]?key|client[_\-]?secret|signature|sig))"
         r"=([^&\s\"'<>#;]{4,})", "query"),
    Rule("authorization-header", "authorization", ("authorization",),
         r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
         r"((?:bearer|basic|token|digest|api-token|apikey|sso-key|ssws|negotiate|ntlm|hmac)[ \t]+)?"
         r"([A-Za-z0-9._~+/=:@!$%^&*\-]{8,})", "header"),
    Rule("bearer-token", "bearer", ("bearer",),
         r"\b[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+([A-Za-z0-9._~+/=\-]{16,})", "bearer"),
    Rule("api-key-header", "api_key", ("x-api-key", "api-key", "apikey", "x-auth-token", "private-token", "api-token", "x-octopus-apikey", "-token:", "token:", "x-jfrog-art-api"),
         r"(?i)\b((?:x-)?(?:[a-z]+-)?(?:api-?key|auth-token|private-token|api-token|access-token|token|apikey|art-api))"
         r"[\"']?[ \t]*:[ \t]*[\"']?([A-Za-z0-9._~+/=\-]{8,})", "header_kv"),
    Rule("curl-user", "password", ("-u", "--user"),
         r"(?:^|[ \t])(?:-u|--user)(?:=|[ \t]+)((?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'])+)", "curl_user"),
    # --- KEY = value, in every syntax -------------------------------------------------------
    Rule("assignment", "secret", ASSIGN_KEYWORDS,
         r"(?i)" + KEY_RE + r"""["'\]]?(?:[ \t]+(?:string|str|int|var|const|char\*?|\[\]byte|secret|password))?[ \t]*""" + SEP_RE + r"[ \t]*" + VALUE_RE, "assign"),
    Rule("xml-element", "secret", ASSIGN_KEYWORDS,
         r"(?i)<" + KEY_RE + r">[ \t\r\n]*([^<>\s]{6,})[ \t\r\n]*</", "xml"),
    Rule("add-key-value", "secret", ("<add",),
         r"""(?i)<add\s+key=["']([^"'<>]{1,100})["']\s+value=["']([^"'<>]{1,400})["']""", "xml"),
    Rule("k8s-secret-data", "secret", ("secret",),
         r"(?m)^[ \t]+[\w.\-]+:[ \t]*(?:[|>][\-+]?[ \t]*\r?\n[ \t]+)?[\"']?([A-Za-z0-9+/]{12,}={0,2})[\"']?[ \t]*\r?$",
         "k8s"),
    Rule("cli-flag", "secret", ASSIGN_KEYWORDS,
         r"(?i)(?:^|[ \t])--?" + KEY_RE + r"""(?:=|[ \t]+)("[^"\n]+"|'[^'\n]+'|[^\s"'\-][^\s"']*)""",
         "cli"),
    Rule("reverse-compare", "secret", ("pass", "pwd", "secret", "token", "key"),
         r"""(?i)(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')[ \t]*[!=]==?[ \t]*""" + KEY_RE, "reverse"),
    Rule("keyword-quoted", "secret", ("pass", "pwd", "secret"),
         r"""(?i)\b([A-Za-z0-9_]*(?:passw|pwd|secret)[A-Za-z0-9_]*)[ \t]+(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)')""",
         "kwquoted"),
    Rule("prose-is", "secret", ("pass", "pwd", "secret", "token", "key"),
         r"(?i)\b(password|passwd|passphrase|pwd|secret|token|api[ _\-]?key|secret[ _\-]?key|access[ _\-]?key)"
         r"[ \t]+(?:is|was)[ \t]*:?[ \t]+" + VALUE_RE, "is"),
)
