"""Detectors for hosted services: chat and webhooks, mail and SMS, payments, social, AI."""

from memmesh.policy._detector import BROAD, UUID, Detector, detector, token, token_value
from memmesh.policy._secret_values import random_looking, token_body

__all__ = ["SAAS_DETECTORS"]

_HEX32 = r"[0-9a-f]{32}"

SAAS_DETECTORS: tuple[Detector, ...] = (
    detector(
        "slack-token",
        r"(?:xox[abposre]|xoxe\.xox[bp]|xapp)-(?P<v>[A-Za-z0-9-]{10,255}+)",
        lambda m: any(c.isdigit() for c in m["v"]) and token_body(m["v"]),
        hints=("xox", "xapp-"),
        run_start=True,
    ),
    detector(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]{6,16}+/[AB][A-Z0-9]{6,16}+/"
        r"(?:[0-9]{6,24}+/)?(?P<v>[A-Za-z0-9]{20,64}+)",
        token_value,
        hints=("hooks.slack.com/",),
    ),
    detector(
        "discord-bot-token",
        r"[MNO][A-Za-z0-9_-]{23,27}+\.[A-Za-z0-9_-]{6}\.(?P<v>[A-Za-z0-9_-]{27,40}+)"
        r"(?![A-Za-z0-9_-])",
        token_value,
        hints=(".",),
        run_start=True,
    ),
    detector(
        "discord-webhook",
        r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}+/(?P<v>[A-Za-z0-9_-]{60,80}+)",
        token_value,
        hints=("/api/webhooks/",),
    ),
    # In an API URL the token follows ``/bot``.
    token(
        "telegram-bot-token",
        r"[0-9]{8,10}:AA",
        r"[A-Za-z0-9_-]{33}",
        before=r"(?<![0-9])",
        hints=(":AA",),
    ),
    detector(
        "teams-webhook",
        r"[a-z0-9-]{1,64}+\.webhook\.office\.com/webhookb2/"
        + UUID
        + "@"
        + UUID
        + r"/IncomingWebhook/(?P<v>[A-Za-z0-9]{32})/"
        + UUID
        + r"(?:/[A-Za-z0-9_-]{10,80}+)?",
        token_value,
        hints=(".webhook.office.com/",),
    ),
    detector(
        "zapier-webhook",
        r"hooks\.zapier\.com/hooks/catch/[0-9]{4,12}+/(?P<v>[a-z0-9]{5,12}+)/?",
        lambda m: any(c.isdigit() for c in m["v"]),
        hints=("hooks.zapier.com/",),
    ),
    token("twilio-api-key", "SK", _HEX32, after=r"(?![A-Za-z0-9])"),
    # An account SID alone names an account; with the auth token next to it, it is a login.
    detector(
        "twilio-credentials",
        r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])(?s:.{0,120}?)(?<![A-Za-z0-9])"
        r"(?P<v>[0-9a-f]{32})(?![A-Za-z0-9])",
        token_value,
        value_only=True,
        hints=("AC",),
    ),
    token("sendgrid-api-key", r"SG\.[A-Za-z0-9_-]{22}\.", r"[A-Za-z0-9_-]{43}"),
    # Base36, not hex: ``key-`` and an MD5 is a cache key.
    token(
        "mailgun-api-key",
        "key-",
        r"[0-9a-z]{32}",
        check=lambda body: token_body(body) and any("g" <= c <= "z" for c in body),
        rank=BROAD,
    ),
    detector(
        "mailchimp-api-key",
        r"(?<![A-Za-z0-9])(?P<v>[0-9a-f]{32})-us[0-9]{1,2}(?![0-9])",
        token_value,
        hints=("-us",),
    ),
    token(
        "brevo-api-key",
        r"x(?:keysib|smtpsib)-",
        r"[a-f0-9]{64}-[A-Za-z0-9]{16}",
        hints=("xkeysib-", "xsmtpsib-"),
    ),
    detector(
        "stripe-key",
        r"(?:(?:sk|rk|pk)_(?:live|test)|whsec)_(?P<v>[A-Za-z0-9]{16,255}+)(?![A-Za-z0-9])",
        token_value,
        hints=("sk_", "rk_", "pk_", "whsec_"),
        run_start=True,
    ),
    token("square-token", r"sq0(?:atp|csp)-", r"[A-Za-z0-9_-]{22,60}+"),
    token("square-access-token", "EAAA", r"[A-Za-z0-9_-]{60}"),
    token(
        "braintree-token",
        r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$",
        _HEX32,
    ),
    token("shopify-token", r"shp(?:at|ca|pa|ss)_", r"[a-fA-F0-9]{32}"),
    token("shippo-token", r"shippo_(?:live|test)_", r"[a-fA-F0-9]{40}"),
    token("duffel-token", r"duffel_(?:live|test)_", r"[A-Za-z0-9_=-]{43}"),
    token("easypost-token", r"EZ[AT]K", r"[A-Za-z0-9]{54}"),
    token("flutterwave-key", r"FLWSECK(?:_TEST)?-", r"[a-h0-9]{32}-X"),
    token("plaid-access-token", r"access-(?:sandbox|development|production)-", UUID),
    token("facebook-access-token", "EAA[A-Z]", r"[A-Za-z0-9]{100,1024}+"),
    token(
        "twitter-bearer-token", "A{22}", r"[A-Za-z0-9%]{80,120}+", hints=("AAAAAAAAAAAAAAAAAAAAAA",)
    ),
    token("mapbox-secret-token", r"sk\.eyJ", r"[A-Za-z0-9_-]{50,200}+\.[A-Za-z0-9_-]{20,30}+"),
    token("dropbox-token", r"sl\.(?:u\.)?", r"[A-Za-z0-9_-]{130,1500}+"),
    detector(
        "anthropic-api-key",
        r"sk-ant-[a-z]{2,10}+[0-9]{0,4}+-(?P<v>[A-Za-z0-9_-]{20,255}+)",
        token_value,
        hints=("sk-ant-",),
        run_start=True,
    ),
    token("openrouter-api-key", "sk-or-v1-", r"[a-f0-9]{64}"),
    detector(
        "openai-api-key",
        r"sk-(?!ant-|or-v1-)(?:proj-|svcacct-|admin-|None-)?(?P<v>[A-Za-z0-9_-]{20,255}+)",
        lambda m: random_looking(m["v"]),
        rank=BROAD,
        hints=("sk-",),
        run_start=True,
    ),
    token("huggingface-token", r"hf_|api_org_", r"[A-Za-z]{34}"),
    token("groq-api-key", "gsk_", r"[A-Za-z0-9]{52}"),
    token("replicate-token", "r8_", r"[A-Za-z0-9]{37}"),
    token("perplexity-api-key", "pplx-", r"[A-Za-z0-9]{48}"),
    token("xai-api-key", "xai-", r"[A-Za-z0-9]{80}"),
    token("pinecone-api-key", "pcsk_", r"[A-Za-z0-9]{5,6}_[A-Za-z0-9]{60,70}+"),
    token("elevenlabs-api-key", "sk_", r"[a-f0-9]{48}"),
)
