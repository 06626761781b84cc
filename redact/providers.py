"""Token rules of providers, each a token with the provider's own prefix: those of the gitleaks
rule set (`PREFIXED_TOKENS`), and current providers' (`CURRENT_PROVIDERS`, issue 14), each from
the provider's own documentation of its keys: prefixes as documented, lengths loose where the
docs give none. Part of `redact.rules.RULES`, in this order."""

from __future__ import annotations

from .patterns import END
from .rule import Rule, token_rule as _tok

#: Cloud and provider tokens with distinctive prefixes (the gitleaks rule set's providers).
PREFIXED_TOKENS: tuple[Rule, ...] = (
    _tok("aws-access-key-id", "aws_access_key",
         r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b", exclude_suffix="EXAMPLE",
         allow_filler=True),
    # the secret half of an AWS key pair: exactly 40 base64 characters right after an AWS secret or
    # access key name; AWS's documented examples (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, as
    # `AKIAIOSFODNN7EXAMPLE` for the id) are public
    _tok("aws-secret-key", "aws_secret_key",
         r"(?i:aws)[A-Za-z0-9_.\-]{0,30}(?i:secret|access)[A-Za-z0-9_.\-]{0,30}[\"'\]]?[ \t]*"
         r"(?::=|=>|=|:)[ \t]*[\"'`]?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
         min_entropy=3.0, placeholder_ok=True, exclude_suffix="EXAMPLEKEY"),
    # the secret half printed right after its key id, with no name of its own: the CSV of `aws iam
    # create-access-key`, a pair pasted on two lines, `AKIA... / secret`
    _tok("aws-secret-after-id", "aws_secret_key",
         r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b[^\n]{0,40}?(?:\r?\n[^\n]{0,40}?)?"
         r"[^A-Za-z0-9/+]([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
         min_entropy=4.0, needs_digit=True, needs_mixed_case=True),
    # Razorpay's key secret (24 letters and digits) passed or printed right after its key id
    # (`rzp_live_`/`rzp_test_` + 14, the public half used by checkout pages, which stays):
    # `new RazorpayClient("rzp_live_...", "...")`, the dashboard's two lines
    _tok("razorpay-secret-after-id", "razorpay_key_secret",
         r"\brzp_(?:live|test)_[A-Za-z0-9]{14}\b[^\n]{0,40}?(?:\r?\n[^\n]{0,40}?)?"
         r"[^A-Za-z0-9]([A-Za-z0-9]{24})(?:[^A-Za-z0-9]|$)",
         min_entropy=3.5, needs_digit=True, needs_mixed_case=True),
    # short-lived keys are a presigned URL in base64: it starts with base64("bedrock.amazonaws.com")
    _tok("aws-bedrock-key", "aws_bedrock_key",
         r"\b(ABSK[A-Za-z0-9+/]{100,}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/]{20,}={0,2})"),
    _tok("github-token", "github_token",
         r"\b((?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,})"),
    _tok("github-fine-grained-pat", "github_token",
         r"\b(github_pat_[0-9A-Za-z_]{70,})"),
    # GitLab's token prefixes, each with its documented length, and the whole token must end
    # there: pipeline trigger 40, incoming mail 25, OAuth app secret 64, agent >= 50, SCIM,
    # CI job and runner registration 20-50; personal, deploy, runner, feed and feature-flag
    # tokens >= 20 (their newer formats are longer).
    _tok("gitlab-token", "gitlab_token",
         r"\b(gl(?:pat|rt|dt|ffct|ft)-[0-9A-Za-z_\-.]{20,}"
         r"|glcbt-(?:[0-9A-Za-z]{1,5}_)?[0-9A-Za-z_\-]{20,50}|glsoat-[0-9A-Za-z_\-]{20,50}"
         r"|glptt-[0-9A-Za-z_\-]{40}|glimt-[0-9A-Za-z_\-]{25}|glagent-[0-9A-Za-z_\-]{50,}"
         r"|gloas-[0-9A-Za-z_\-]{64})(?:[^0-9A-Za-z_\-]|$)"),
    _tok("gitlab-runner-registration", "gitlab_token", r"\b(GR1348941[\w\-]{20,50})(?:[^\w\-]|$)",
         min_entropy=3.0),
    _tok("gitlab-session", "gitlab_token", r"_gitlab_session=([0-9a-z]{32})"),
    _tok("slack-token", "slack_token",
         r"\b(xoxb-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9\-]*|xoxb-[0-9]{8,14}-[A-Za-z0-9]{18,26}"
         r"|xox[pe](?:-[0-9]{6,13}){3}-[A-Za-z0-9\-]{16,34}|xox[os]-\d+-\d+-\d+-[A-Fa-f\d]+"
         # digit groups first: leftmost-first alternation would end the short xox[ar] form at the
         # first dash (`xoxa-511111111`); the id groups repeat digits, so no dominance check
         r"|xox[abposr]-(?:\d-)?(?:\d{6,}-)+[a-z0-9]{8,}|xox[ar]-(?:\d-)?[0-9A-Za-z]{8,48}"
         r"|xoxe\.xox[bp]-\d-[A-Za-z0-9]{140,}|xoxe-\d-[A-Za-z0-9]{120,})",
         min_entropy=2.5, allow_filler=True, placeholder_ok=True),
    _tok("slack-app-token", "slack_token", r"\b(xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)"),
    # the path after services/ (workflows/, triggers/) is the credential, and what is remembered:
    # found again alone (`T0.../B0.../xyz`), it goes too
    _tok("slack-webhook", "webhook",
         r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_\-]{20,120})",
         placeholder_ok=True),
    _tok("discord-webhook", "webhook",
         r"discord(?:app)?\.com/api/webhooks/(\d{5,30}/[A-Za-z0-9_\-]{30,120})"),
    _tok("teams-webhook", "webhook",
         r"\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/\-]{40,})"),
    _tok("stripe-key", "stripe_key",
         r"\b((?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{24,100})"),
    # Anthropic: api03 keys are 93 characters and "AA" after the prefix; admin, OAuth and session
    # tokens and older keys are other lengths: the prefix is distinctive enough for any of 20+
    _tok("anthropic-key", "anthropic_key",
         r"\b(sk-ant-(?:api|admin|oat|ort|sid)\d{2}-[A-Za-z0-9_\-]{20,})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.0),
    # an api03 or admin01 key in its whole documented form (93 characters, then "AA") is an
    # unmistakable slot: redacted whatever its body looks like (`abc123...`: a placeholder-like body
    # is still someone's key format, and redacting it costs nothing)
    _tok("anthropic-key-exact", "anthropic_key",
         r"\b(sk-ant-(?:api03|admin01)-[A-Za-z0-9_\-]{93}AA)(?:[^A-Za-z0-9_\-]|$)", placeholder_ok=True),
    _tok("openai-key", "openai_key",
         # every OpenAI key holds "T3BlbkFJ" (base64 of "OpenAI") between two random halves
         r"\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}"
         r"|sk-[A-Za-z0-9]{16,64}T3BlbkFJ[A-Za-z0-9]{16,64})"),
    # OpenAI's older user keys: `sk-` and 48 letters and digits, no marker
    _tok("openai-legacy-key", "openai_key", r"\b(sk-[A-Za-z0-9]{48})\b", min_entropy=4.0, needs_digit=True,
         needs_mixed_case=True),
    _tok("google-api-key", "google_api_key", r"\b(AIza[0-9A-Za-z_\-]{35})"),
    # a Google OAuth refresh token (`1//0g...`: gsutil's `.boto`, gcloud's credentials)
    _tok("google-refresh-token", "google_oauth", r"(?:^|[^A-Za-z0-9/])(1//[0-9A-Za-z_\-]{40,})", min_entropy=3.5,
         needs_digit=True),
    _tok("google-oauth", "google_oauth",
         r"\b(GOCSPX-[0-9A-Za-z_\-]{20,40}|ya29\.(?:[0-9A-Za-z_\-]{1,8}\.)?[0-9A-Za-z_\-]{20,})"),   # `ya29.c.`: impersonation
    # API key SID (SK) and account SID (AC): 32 hex; `ACxxxx...` is the documentation's own form
    _tok("twilio-key", "twilio_key", r"\b((?:SK|AC)[0-9a-fA-FxX]{32})\b", min_entropy=2.5,
         placeholder_ok=True),
    _tok("sendgrid-key", "sendgrid_key", r"\b(SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})"),
    _tok("mailgun-key", "mailgun_key", r"\b((?:pub)?key-[0-9a-zA-Z]{32})\b"),
    _tok("mailchimp-key", "mailchimp_key", r"\b([0-9a-f]{32}-us\d{1,2})\b"),
    _tok("npm-token", "npm_token", r"\b(npm_(?:[A-Za-z0-9]{36}|[xX]{8,36}))\b", placeholder_ok=True),
    _tok("pypi-token", "pypi_token", r"\b(pypi-AgE[A-Za-z0-9_\-]{50,})"),
    _tok("rubygems-token", "rubygems_token", r"\b(rubygems_[a-f0-9]{48})"),
    _tok("huggingface-token", "huggingface_token",
         r"\b((?:hf|api_org)_[A-Za-z0-9]{30,40})\b", min_entropy=3.0),
    _tok("shopify-token", "shopify_token",
         r"\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})"),
    _tok("digitalocean-token", "digitalocean_token",
         r"\b(do[opr]_v1_[a-f0-9]{64})"),
    _tok("heroku-key", "heroku_key", r"\b(HRKU-[0-9A-Za-z_\-]{20,100})"),
    _tok("databricks-token", "databricks_token", r"\b(dapi[a-f0-9]{32}(?:-\d)?)\b", min_entropy=3.0),
    _tok("jwt", "jwt",
         r"\b(ey[A-Za-z0-9_\-]{10,}\.ey[A-Za-z0-9_\-/\\]{10,}(?:\.[A-Za-z0-9_\-/\\+]*={0,2})?)",
         min_entropy=3.0, jwt_header=True),
    # a JWS or JWE whose header starts as a JOSE header does (`{"alg":`, `{"typ":`, `{"kid":`, `{"enc":`),
    # then segments that are no JSON: an encrypted token (RFC 7516: key, IV, ciphertext, tag;
    # the key segment empty with `dir`), an opaque or cut payload
    _tok("jose-token", "jwt",
         # (a second segment of JSON, `.eyJ`, is a JWS the rule above reads, its header checked)
         r"\b((?:eyJhbGciOi|eyJ0eXAiOi|eyJraWQiOi|eyJlbmMiOi)[A-Za-z0-9_\-]{8,}\.(?:(?:[A-Za-df-z0-9_\-]|e[A-Za-xz0-9_\-])"
         r"[A-Za-z0-9_\-]{31,}(?:\.[A-Za-z0-9_\-]*){0,3}|(?:\.[A-Za-z0-9_\-]*)?\.[A-Za-z0-9_\-]{32,}(?:\.[A-Za-z0-9_\-]*){0,2}))",
         min_entropy=3.5),
    _tok("jwt-base64", "jwt", r"\b(ZXlK[A-Za-z0-9+/_\-]{40,}={0,2})"),
    _tok("onepassword-service-token", "onepassword_token", r"\b(ops_eyJ[A-Za-z0-9+/]{100,}={0,3})"),
    _tok("onepassword-secret-key", "onepassword_key",
         r"\b(A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})\b",
         min_entropy=3.0),
    _tok("age-secret-key", "age_key", r"(AGE-SECRET-KEY-1[0-9A-Z]{58})", allow_filler=True),
    _tok("artifactory-key", "artifactory_key",
         r"\b(AKCp[A-Za-z0-9]{60,80}|cmVmd[A-Za-z0-9]{55,70})\b", min_entropy=3.0),
    # JFrog's other prefixes: API keys `AKC...`, encrypted passwords `AP` + a hex digit, standing
    # alone (not after a base64 character: inside a blob `/APx...` is chance). The body is long and
    # random (part numbers such as `AP1234567890` are not), or the filler of a documentation
    # placeholder at the lengths detect-secrets gives (`AKC` + 10, `AP6` + 8).
    _tok("artifactory-token", "artifactory_key",
         r"(?:^|[^A-Za-z0-9_+/])(AKC(?:[A-Za-z0-9]{20,}|[xX]{10,})|AP[0-9A-F](?:[A-Za-z0-9]{20,}|[xX]{8,}))"
         r"(?:[^A-Za-z0-9_+/=]|$)",
         min_entropy=3.5, needs_digit=True, placeholder_ok=True),
    _tok("atlassian-token", "atlassian_token", r"\b(AT[AC]TT3[A-Za-z0-9_\-=]{100,})"),
    _tok("azure-ad-client-secret", "azure_secret",
         r"(?:^|[\\'\"`\s>=:(,)])([a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.\-]{31,34})(?:$|[\\'\"`\s<),])",
         min_entropy=3.0),
    _tok("azure-storage-sas", "azure_sas", r"[?&]sig=([A-Za-z0-9%+/=]{20,})"),
    _tok("clickhouse-key", "clickhouse_key", r"\b(4b1d[A-Za-z0-9]{38})\b", min_entropy=3.0),
    _tok("clojars-token", "clojars_token", r"\b(CLOJARS_[a-zA-Z0-9]{60})"),
    _tok("cloudflare-origin-ca", "cloudflare_key", r"\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{100,})"),
    _tok("defined-networking", "token", r"\b(dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52})"),
    _tok("doppler-token", "doppler_token",
         r"\b(dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44})"),
    _tok("duffel-token", "token", r"\b(duffel_(?:test|live)_[A-Za-z0-9_\-=]{43})"),
    _tok("dynatrace-token", "token", r"\b(dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})"),
    _tok("easypost-token", "token", r"\b(EZ[AT]K[A-Za-z0-9]{54})\b", min_entropy=3.0),
    _tok("facebook-page-token", "facebook_token", r"\b(EAA[MC][A-Za-z0-9]{60,})", min_entropy=3.5),
    _tok("facebook-access-token", "facebook_token",
         r"\b(\d{15,16}(?:\||%7[Cc])[0-9A-Za-z\-_]{27,40})" + END, min_entropy=3.0),
    _tok("flutterwave-key", "token",
         r"\b(FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?)"),
    _tok("flyio-token", "flyio_token",
         # (a token as `fly tokens create` prints it: `FlyV1 ` and macaroons joined by commas)
         r"\b(fo1_[\w\-]{43}|(?:FlyV1 )?fm[12][ar]?_[A-Za-z0-9+/_\-]{100,}={0,3}(?:,fm[12][ar]?_[A-Za-z0-9+/_\-]{20,}={0,3})*)",
         min_entropy=3.5),
    _tok("frameio-token", "token", r"\b(fio-u-[A-Za-z0-9\-_=]{64})"),
    _tok("grafana-token", "grafana_token",
         r"\b(glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,}={0,3})"),
    _tok("harness-token", "token",
         r"\b((?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20})"),
    _tok("terraform-token", "terraform_token", r"\b([A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70})"),
    _tok("infracost-token", "token", r"(?:^|[^.\w])(ico-[A-Za-z0-9]{32})" + END, min_entropy=3.0),
    _tok("intra42-secret", "token", r"\b(s-s4t2(?:ud|af)-[A-Fa-f0-9]{64})"),
    _tok("linear-key", "linear_key", r"\b(lin_(?:api|oauth)_[A-Za-z0-9]{40})"),
    _tok("mapbox-token", "mapbox_token",
         r"\b([pst]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,40}|[ps]k\.[a-z0-9]{60}\.[a-z0-9]{22})",
         public_prefix="pk."),   # a public token (`pk.`) under a key named public stays
    _tok("maxmind-key", "token", r"\b([A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)", min_entropy=3.5),
    _tok("newrelic-key", "newrelic_key",
         r"\b(NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}|NRAK-[A-Za-z0-9]{27}|NRAL-[A-Za-z0-9]{27,40})"),
    _tok("notion-token", "notion_token",
         r"\b(ntn_[0-9A-Za-z]{46}|secret_[A-Za-z0-9]{43})\b", min_entropy=3.5),
    _tok("octopus-key", "token", r"\b(API-[A-Z0-9]{26})\b", min_entropy=3.0),
    _tok("openshift-token", "token", r"\b(sha256~[\w\-]{43})"),
    _tok("perplexity-key", "perplexity_key", r"\b(pplx-[A-Za-z0-9]{40,64})\b", min_entropy=3.5),
    _tok("planetscale-token", "planetscale_token", r"\b(pscale_(?:tkn|oauth|pw)_[\w=.\-]{32,64})"),
    _tok("postman-key", "token", r"\b(PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34})"),
    _tok("prefect-key", "token", r"\b(pnu_[A-Za-z0-9]{36})"),
    _tok("pulumi-token", "token", r"\b(pul-[a-f0-9]{40})"),
    _tok("readme-key", "token", r"\b(rdme_[a-z0-9]{70})"),
    _tok("scalingo-token", "token", r"\b(tk-us-[\w\-]{48})"),
    _tok("sendinblue-key", "token", r"\b(x(?:keys|smtps)ib-[a-f0-9]{64}-[A-Za-z0-9]{16})"),
    _tok("sentry-token", "sentry_token",
         # org tokens: base64 JSON claims, "_", a 43-character secret; the prefix and the claims'
         # `eyJ` are enough (a token cut or copied without its secret part still holds the org's claims)
         r"\b(sntrys_eyJ[A-Za-z0-9+/=_\-]{40,}|sntryu_[a-f0-9]{64})(?:[^A-Za-z0-9+/=_\-]|$)", min_entropy=3.5),
    # Sidekiq Pro/Enterprise gem credentials: bundler's BUNDLE_<HOST> variable, "user:password" of 8 hex each
    _tok("sidekiq-secret", "sidekiq_secret",
         r"(?i)\bBUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM(?:_?TOKEN)?[\"'\]]{0,2}[ \t]*(?::{1,3}=|\?=|=>|=|:|,)"
         r"[ \t\"'`]*([0-9a-f]{8}:[0-9a-f]{8})(?:[^0-9a-z]|$)"),
    _tok("settlemint-token", "token", r"\b(sm_(?:aat|pat|sat)_[A-Za-z0-9]{16})"),
    _tok("shippo-token", "token", r"\b(shippo_(?:live|test)_[A-Fa-f0-9]{40})"),
    _tok("sourcegraph-token", "token", r"\b(sgp_(?:[A-Fa-f0-9]{16}|local)_[A-Fa-f0-9]{40}|sgp_[A-Fa-f0-9]{40})", min_entropy=3.0),
    _tok("square-token", "square_token",
         r"\b(sq0atp-[\w\-]{22,60}|sq0csp-[\w\-]{40,50}|EAAA[\w\-]{40,70})", min_entropy=3.0),
    _tok("telegram-bot-token-ctx", "telegram_token",
         r"(?i)telegr[\s\S]{0,80}?(?:^|[^0-9A-Za-z_])(\d{5,16}:A[A-Za-z0-9_\-]{34})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.0, needs_digit_after=":"),
    _tok("telegram-bot-token", "telegram_token",
         r"(?:^|[^\w]|/bot)(\d{5,16}:AA[A-Za-z0-9_\-]{33})" + r"(?:[^\w\-]|$)"),   # `/bot<token>/sendMessage`: the API's URL
    _tok("typeform-token", "token", r"\b(tfp_[A-Za-z0-9\-_.=]{59})"),
    _tok("vault-token", "vault_token",
         r"\b(hv[sbr]\.[\w\-]{24,}|s\.[A-Za-z0-9]{24})\b", min_entropy=3.0, needs_digit=True),
    _tok("yandex-token", "token",
         r"\b(t1\.[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}|AQVN[A-Za-z0-9_\-]{35,38})"),
    _tok("alibaba-key-id", "alibaba_key", r"\b(LTAI[A-Za-z0-9]{20})\b", min_entropy=3.0),
    _tok("adobe-secret", "token", r"\b(p8e-[A-Za-z0-9]{32})\b"),
    _tok("authress-key", "token",
         r"\b((?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_\-][a-z0-9\-]{10,32}\.[a-z0-9+/_=\-]{30,120})"),
    _tok("discord-bot-token", "discord_token",
         r"\b([MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38})\b", min_entropy=3.5),
    # Cloudant legacy API keys: 24 lower-case letters right after a Cloudant key name
    _tok("cloudant-key", "cloudant_key",
         r"(?i:cloudant)[A-Za-z0-9_.\-]{0,20}(?i:key|api)[\"'\]]?[ \t]*(?::=|=>|=|:)[ \t]*[\"'`]?"
         r"([a-z]{24})(?:[^A-Za-z0-9]|$)",
         min_entropy=3.0, placeholder_ok=True),
    _tok("softlayer-url", "softlayer_key",
         r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})"),
    _tok("plaid-token", "plaid_token",
         r"\b(access-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"),
)

#: Current providers' tokens, each from the provider's own documentation.
CURRENT_PROVIDERS: tuple[Rule, ...] = (
    _tok("xai-key", "xai_key", r"\b(xai-[A-Za-z0-9]{70,90})\b", min_entropy=3.5),
    _tok("groq-key", "groq_key", r"\b(gsk_[A-Za-z0-9]{48,56})\b", min_entropy=3.5),
    _tok("replicate-token", "replicate_token", r"\b(r8_[A-Za-z0-9]{36,40})\b", min_entropy=3.5),
    _tok("openrouter-key", "openrouter_key", r"\b(sk-or-v1-[a-f0-9]{64})\b", min_entropy=3.0),
    # OpenAI project, service-account, admin and "None" (legacy user) keys: the prefix is enough
    # (their bodies run 100 to 160 characters, but the docs promise no length: 32 or more)
    _tok("openai-scoped-key", "openai_key",
         r"\b(sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{32,300})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.5,
         needs_digit=True, not_words=True),
    # LaunchDarkly's server-side SDK keys and mobile keys: `sdk-` / `mob-` and a UUID
    _tok("launchdarkly-key", "api_key", r"\b((?:sdk|mob)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"),
    # Mailgun's private API keys since 2023: 32 hex digits, then two groups of 8 (`key-...` is the older form)
    _tok("mailgun-private-key", "mailgun_key", r"\b([0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b", min_entropy=3.0),
    # NATS NKEY seeds (`.creds` files, `nsc`): `S`, the key's type, base32 of the Ed25519 seed
    _tok("nats-nkey-seed", "private_key", r"\b(S[UAONCX][A-Z2-7]{56})\b", min_entropy=3.5, needs_digit=True),
    _tok("pinecone-key", "pinecone_key", r"\b(pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,80})\b", min_entropy=3.5),
    _tok("tavily-key", "tavily_key", r"\b(tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,48})\b", min_entropy=3.5),
    _tok("dockerhub-token", "dockerhub_token", r"\b(dckr_(?:pat|oat)_[A-Za-z0-9_\-]{24,40})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.0),
    _tok("dependency-track-key", "dependency_track_key", r"\b(odt_[A-Za-z0-9]{8,12}_[A-Za-z0-9]{20,40}|odt_[A-Za-z0-9]{32,48})\b",
         min_entropy=3.5),
    _tok("segment-token", "segment_token", r"\b(sgp_[A-Za-z0-9]{64})\b", min_entropy=3.5),
    _tok("circleci-token", "circleci_token", r"\b(CCI(?:PAT|PRJ)_[A-Za-z0-9]{20,26}_[a-f0-9]{40})\b"),
    _tok("mongodb-atlas-sa", "mongodb_key", r"\b(mdb_sa_(?:sk|id)_[A-Za-z0-9_\-]{20,80})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.0),
    _tok("sourcegraph-license", "token", r"\b(slk_[A-Za-z0-9_]{32,})\b", min_entropy=3.5),
    _tok("dropbox-token", "dropbox_token", r"(?:^|[^A-Za-z0-9_.])(sl\.(?:u\.)?[A-Za-z0-9_\-]{120,})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=4.0),
    # FiveM (Cfx.re Keymaster) server license keys
    _tok("fivem-license-key", "api_key", r"\b(cfxk_[A-Za-z0-9]{16,32}_[A-Za-z0-9]{4,10})\b", min_entropy=3.0),
    _tok("twitch-oauth", "twitch_token", r"(?:^|[^A-Za-z0-9_])oauth:([a-z0-9]{30})\b", min_entropy=3.5, needs_digit=True),
    _tok("salesforce-token", "salesforce_token", r"\b(00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,})"),
    _tok("teamwork-token", "teamwork_token", r"\b(tkn\.v1_[A-Za-z0-9+/=_\-]{40,})", min_entropy=3.5),
    # Resend's API keys: `re_`, 8 letters and digits, `_`, 24 more
    _tok("resend-key", "resend_key", r"\b(re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24})\b", min_entropy=3.5, needs_digit=True),
    _tok("sonar-token", "sonar_token", r"\b(sq[upa]_[a-f0-9]{40})\b", min_entropy=3.0),
    _tok("fireworks-key", "token", r"\b(fw_[A-Za-z0-9]{24,40})\b", min_entropy=3.5, needs_digit=True),
    # DeepSeek and Alibaba DashScope (Model Studio) keys: `sk-` and 32 hex digits
    _tok("sk-hex-key", "api_key", r"\b(sk-[a-f0-9]{32})\b", min_entropy=3.0),
    # Tailscale auth, API, OAuth client, SCIM and webhook keys: `tskey-KIND-` an id `-` the secret
    _tok("tailscale-key", "tailscale_key",
         r"\b(tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,24}-[A-Za-z0-9]{20,64})\b", min_entropy=3.5),
    # LangSmith personal and service keys, Langfuse secret keys (its `pk-lf-` public key stays)
    _tok("langsmith-key", "langsmith_key", r"\b(lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b", min_entropy=3.0),
    _tok("langfuse-secret-key", "langfuse_key",
         r"\b(sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"),
    # Honeycomb ingest and configuration keys, Axiom API and personal tokens
    _tok("honeycomb-key", "honeycomb_key", r"\b(hc(?:aik|xik|xlk|amk|bik|blk)_[A-Za-z0-9]{20,80})\b",
         min_entropy=3.5, needs_digit=True),
    _tok("axiom-token", "axiom_token",
         r"\b(xa[ap]t-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"),
    # Supabase access tokens and secret API keys, Neon API keys, Render, Netlify, Deno Deploy tokens
    _tok("supabase-key", "supabase_key", r"\b(sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,80})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.0),
    _tok("neon-key", "neon_key", r"\b(napi_[a-z0-9]{60,72})\b", min_entropy=3.5),
    _tok("render-key", "render_key", r"\b(rnd_[A-Za-z0-9]{28,36})\b", min_entropy=3.5, needs_digit=True),
    _tok("netlify-token", "netlify_token", r"\b(nfp_[A-Za-z0-9]{36,40})\b", min_entropy=3.5),
    _tok("deno-deploy-token", "deno_token", r"\b(dd[pw]_[A-Za-z0-9]{36})\b", min_entropy=3.5),
    # Buildkite, Contentful, Figma, PostHog personal (its `phc_` project key is public), Bitbucket
    # app passwords and API tokens, HubSpot private apps, Intercom (base64 of `tok:`), Airtable
    _tok("buildkite-token", "buildkite_token", r"\b(bkua_[a-f0-9]{40})\b", min_entropy=3.0),
    _tok("contentful-token", "contentful_token", r"\b(CFPAT-[A-Za-z0-9_\-]{43})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.5),
    _tok("figma-token", "figma_token", r"\b(figd_[A-Za-z0-9_\-]{38,64})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.5),
    _tok("posthog-personal-key", "posthog_key", r"\b(phx_[A-Za-z0-9]{39,50})\b", min_entropy=3.5),
    _tok("bitbucket-token", "bitbucket_token", r"(?:^|[^A-Za-z0-9_+/=.\-])(ATBB[A-Za-z0-9_=.\-]{28,48})(?:[^A-Za-z0-9_=.\-]|$)",
         min_entropy=3.5, needs_digit=True, set_pattern=r"ATBB[A-Za-z0-9_=.\-]"),   # (not inside base64)
    _tok("hubspot-token", "hubspot_token",
         r"\b(pat-(?:na|eu|ap)[0-9]-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"),
    _tok("intercom-token", "intercom_token", r"\b(dG9rO[A-Za-z0-9+/]{40,}={0,2})"),
    _tok("airtable-token", "airtable_token", r"\b(pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b", min_entropy=3.5),
    # AI and agent platforms: Firecrawl, Cerebras, NVIDIA, Jina, E2B, Browserbase, Anyscale, ElevenLabs
    _tok("firecrawl-key", "firecrawl_key", r"(?:^|[^A-Za-z0-9_/.\-])(fc-[a-f0-9]{32})\b", min_entropy=3.0,
         set_pattern=r"fc-[a-f0-9]"),   # (not a bundle's name: `/static/js/fc-9f86d0....js`)
    _tok("cerebras-key", "cerebras_key", r"\b(csk-[a-z0-9]{40,56})\b", min_entropy=3.5, needs_digit=True),
    _tok("nvidia-key", "nvidia_key", r"\b(nvapi-[A-Za-z0-9_\-]{60,72})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.5),
    _tok("jina-key", "jina_key", r"\b(jina_[a-f0-9]{32}[A-Za-z0-9_\-]{20,40})(?:[^A-Za-z0-9_\-]|$)", min_entropy=3.5),
    _tok("e2b-key", "e2b_key", r"\b(e2b_[a-f0-9]{40})\b", min_entropy=3.0),
    _tok("browserbase-key", "browserbase_key", r"\b(bb_live_[A-Za-z0-9_\-]{20,40})(?:[^A-Za-z0-9_\-]|$)",
         min_entropy=3.5, needs_digit=True, not_words=True),
    _tok("anyscale-key", "anyscale_key", r"\b(esecret_[a-z0-9]{20,40})\b", min_entropy=3.5, needs_digit=True),
    _tok("elevenlabs-key", "elevenlabs_key", r"\b(sk_[a-f0-9]{48})\b", min_entropy=3.0),
    # Paddle Billing API keys; PagerDuty user API tokens (`u+` and 18 characters, both cases)
    _tok("paddle-key", "paddle_key", r"\b(pdl_(?:live|sdbx)_apikey_[A-Za-z0-9_]{40,80})\b", min_entropy=3.5),
    _tok("pagerduty-user-token", "pagerduty_token",
         r"(?:^|[^A-Za-z0-9+/\\])(u\+[A-Za-z0-9_\-]{18})(?:[^A-Za-z0-9_+\-=/]|$)",
         min_entropy=3.0, needs_mixed_case=True, set_pattern=r"u\+[A-Za-z0-9_\-]"),
)
