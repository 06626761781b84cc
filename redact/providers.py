"""Token rules of current providers, each from the provider's own documentation of its keys
(issue 14): prefixes as documented, lengths loose where the docs give none. Part of
`redact.rules.RULES`, in this order."""

from __future__ import annotations

from .rule import Rule, token_rule as _tok

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
