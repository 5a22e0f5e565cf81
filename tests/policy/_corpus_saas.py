"""Corpus: tokens of hosted services (chat, mail and SMS, payments, social, AI)."""

import base64
import random

from tests.policy._corpus import (
    ALNUM,
    B64URL,
    DIGITS,
    HEX,
    LETTERS,
    LOWER_ALNUM,
    UPPER_ALNUM,
    Secret,
    b64url_json,
    chars,
    examples,
    fake_uuid,
    provider,
    token,
)


def _discord_bot(rng: random.Random) -> str:
    user_id = base64.b64encode(chars(rng, DIGITS, 18).encode()).decode().rstrip("=")
    return user_id + "." + chars(rng, B64URL, 6) + "." + chars(rng, B64URL, 38)


def _teams(rng: random.Random) -> str:
    ids = "@".join(fake_uuid(rng) for _ in range(2))
    tail = chars(rng, LOWER_ALNUM, 32) + "/" + fake_uuid(rng) + "/V2" + chars(rng, B64URL, 44)
    return "https://acme.webhook.office.com/webhookb2/" + ids + "/IncomingWebhook/" + tail


def _mapbox(rng: random.Random) -> str:
    claims = b64url_json({"u": "acme-maps", "a": "cl" + chars(rng, LOWER_ALNUM, 23)})
    return "sk." + claims + "." + chars(rng, B64URL, 22)


SAAS: list[Secret] = [
    *provider(
        "slack-bot-token",
        "slack-token",
        lambda rng: (
            "xoxb-"
            + chars(rng, DIGITS, 12)
            + "-"
            + chars(rng, DIGITS, 13)
            + "-"
            + chars(rng, ALNUM, 24)
        ),
        "SLACK_BOT_TOKEN",
        "Slack bot token",
        "the deploy bot posts with {S}",
    ),
    *provider(
        "slack-user-token",
        "slack-token",
        lambda rng: (
            "xoxp-" + "-".join(chars(rng, DIGITS, 12) for _ in range(3)) + "-" + chars(rng, HEX, 32)
        ),
        "SLACK_USER_TOKEN",
        "Slack user token",
        "export script runs as me: {S}",
    ),
    *provider(
        "slack-incoming-webhook",
        "slack-webhook",
        lambda rng: (
            "https://hooks.slack.com/services/T"
            + chars(rng, UPPER_ALNUM, 10)
            + "/B"
            + chars(rng, UPPER_ALNUM, 10)
            + "/"
            + chars(rng, ALNUM, 24)
        ),
        "SLACK_WEBHOOK_URL",
        "Slack webhook",
        'curl -X POST -d \'{"text":"deployed"}\' {S}',
    ),
    *provider(
        "discord-bot-token",
        "discord-bot-token",
        _discord_bot,
        "DISCORD_TOKEN",
        "Discord bot token",
        "client.run('{S}')",
    ),
    *provider(
        "discord-webhook",
        "discord-webhook",
        lambda rng: (
            "https://discord.com/api/webhooks/"
            + chars(rng, DIGITS, 19)
            + "/"
            + chars(rng, B64URL, 68)
        ),
        "DISCORD_WEBHOOK",
        "Discord webhook",
        "release notes go to {S}",
    ),
    *provider(
        "telegram-bot-token",
        "telegram-bot-token",
        lambda rng: chars(rng, DIGITS, 10) + ":AA" + chars(rng, B64URL, 33),
        "TELEGRAM_BOT_TOKEN",
        "Telegram bot token",
        "curl https://api.telegram.org/bot{S}/sendMessage -d chat_id=-1001234",
        "BotFather gave the alerts bot {S}",
    ),
    *provider(
        "teams-incoming-webhook",
        "teams-webhook",
        _teams,
        "TEAMS_WEBHOOK_URL",
        "Teams webhook",
        "on-call channel connector: {S}",
    ),
    *provider(
        "zapier-webhook",
        "zapier-webhook",
        lambda rng: (
            "https://hooks.zapier.com/hooks/catch/"
            + chars(rng, DIGITS, 8)
            + "/"
            + chars(rng, "abcdefghij", 3)
            + chars(rng, DIGITS, 3)
            + "/"
        ),
        "ZAPIER_HOOK",
        "Zapier catch hook",
        "the signup form posts to {S}",
    ),
    *provider(
        "twilio-api-key",
        "twilio-api-key",
        token("SK", (HEX, 32)),
        "TWILIO_API_KEY",
        "Twilio API key",
        "twilio profiles:create --api-key {S} --api-secret from-1password",
        "Twilio API key SID {S} (standard key, created for the SMS worker)",
    ),
    *examples(
        "twilio-auth-token",
        "twilio-credentials",
        lambda rng: chars(rng, HEX, 32),
        [
            "Twilio: account AC" + "5f0e1d2c3b4a5968778695a4b3c2d1e0" + " auth token {S}",
            "curl -u AC" + "0a1b2c3d4e5f60718293a4b5c6d7e8f9" + ":{S} "
            "https://api.twilio.com/2010-04-01/Accounts.json",
            "TWILIO_ACCOUNT_SID=AC"
            + "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"
            + "\nTWILIO_AUTH_TOKEN={S}",
            "client = Client('AC" + "1234abcd5678ef901234abcd5678ef90" + "', '{S}')",
        ],
    ),
    *provider(
        "sendgrid-api-key",
        "sendgrid-api-key",
        token("SG.", (B64URL, 22), (".", 1), (B64URL, 43)),
        "SENDGRID_API_KEY",
        "SendGrid key",
        "SMTP relay: user apikey, password {S}",
    ),
    *provider(
        "mailgun-api-key",
        "mailgun-api-key",
        token("key-", (LOWER_ALNUM, 32)),
        "MAILGUN_API_KEY",
        "Mailgun key",
        "curl -s --user 'api:{S}' https://api.mailgun.net/v3/mg.acme.dev/messages",
    ),
    *provider(
        "mailchimp-api-key",
        "mailchimp-api-key",
        lambda rng: chars(rng, HEX, 32) + "-us" + chars(rng, DIGITS, 2),
        "MAILCHIMP_API_KEY",
        "Mailchimp key",
        "newsletter sync: mailchimp.setConfig({ apiKey: '{S}' })",
    ),
    *provider(
        "brevo-api-key",
        "brevo-api-key",
        token("xkeysib-", (HEX, 64), ("-", 1), (ALNUM, 16)),
        "BREVO_API_KEY",
        "Brevo key",
        "api-key: {S} header for transactional mail",
    ),
    *provider(
        "stripe-live-secret-key",
        "stripe-key",
        token("sk" + "_live_", (ALNUM, 99)),
        "STRIPE_SECRET_KEY",
        "Stripe live key",
        "stripe login --api-key {S}",
    ),
    *provider(
        "stripe-webhook-secret",
        "stripe-key",
        token("whsec" + "_", (ALNUM, 32)),
        "STRIPE_WEBHOOK_SECRET",
        "Stripe webhook signing secret",
        "stripe listen printed: Your webhook signing secret is {S}",
    ),
    *provider(
        "square-access-token",
        "square-access-token",
        token("EAAA", (B64URL, 60)),
        "SQUARE_ACCESS_TOKEN",
        "Square production token",
        "Square POS sync uses {S}",
    ),
    *provider(
        "square-oauth-secret",
        "square-token",
        token("sq0csp-", (B64URL, 43)),
        "SQUARE_APP_SECRET",
        "Square app secret",
        "Square application secret {S}",
    ),
    *provider(
        "braintree-access-token",
        "braintree-token",
        lambda rng: (
            "access_token$production$" + chars(rng, LOWER_ALNUM, 16) + "$" + chars(rng, HEX, 32)
        ),
        "BRAINTREE_ACCESS_TOKEN",
        "Braintree token",
        "gateway = braintree.BraintreeGateway(access_token='{S}')",
    ),
    *provider(
        "shopify-access-token",
        "shopify-token",
        token("shpat" + "_", (HEX, 32)),
        "SHOPIFY_ACCESS_TOKEN",
        "Shopify Admin token",
        "X-Shopify-Access-Token: {S}",
    ),
    *provider(
        "shopify-shared-secret",
        "shopify-token",
        token("shpss" + "_", (HEX, 32)),
        "SHOPIFY_API_SECRET",
        "Shopify app secret",
        "HMAC validation key {S}",
    ),
    *provider(
        "shippo-token",
        "shippo-token",
        token("shippo" + "_live_", (HEX, 40)),
        "SHIPPO_TOKEN",
        "Shippo token",
        "Authorization: ShippoToken {S}",
    ),
    *provider(
        "duffel-token",
        "duffel-token",
        token("duffel" + "_live_", (B64URL, 43)),
        "DUFFEL_ACCESS_TOKEN",
        "Duffel token",
        "flight search calls Duffel with {S}",
    ),
    *provider(
        "easypost-api-key",
        "easypost-token",
        token("EZAK", (ALNUM, 54)),
        "EASYPOST_API_KEY",
        "EasyPost production key",
        "EasyPost::Client.new(api_key: '{S}')",
    ),
    *provider(
        "flutterwave-secret-key",
        "flutterwave-key",
        lambda rng: "FLWSECK_TEST-" + chars(rng, "abcdefgh0123456789", 32) + "-X",
        "FLW_SECRET_KEY",
        "Flutterwave secret key",
        "Flutterwave sandbox secret key {S}",
    ),
    *provider(
        "plaid-access-token",
        "plaid-access-token",
        lambda rng: "access-production-" + fake_uuid(rng),
        "PLAID_ACCESS_TOKEN",
        "Plaid item access token",
        "item_id abc123 maps to access token {S}",
    ),
    *provider(
        "facebook-page-token",
        "facebook-access-token",
        token("EAAG", (ALNUM, 180)),
        "FB_PAGE_ACCESS_TOKEN",
        "Facebook page token",
        "graph.facebook.com/v19.0/me/feed?access_token={S}",
    ),
    *provider(
        "twitter-bearer-token",
        "twitter-bearer-token",
        token("A" * 22, (ALNUM, 90)),
        "TWITTER_BEARER_TOKEN",
        "X/Twitter bearer token",
        "tweepy.Client(bearer_token='{S}')",
    ),
    *provider(
        "mapbox-secret-token",
        "mapbox-secret-token",
        _mapbox,
        "MAPBOX_DOWNLOADS_TOKEN",
        "Mapbox secret token",
        "~/.netrc for the iOS SDK download uses password {S}",
    ),
    *provider(
        "dropbox-short-lived-token",
        "dropbox-token",
        token("sl.", (B64URL, 140)),
        "DROPBOX_ACCESS_TOKEN",
        "Dropbox token",
        "dbx = dropbox.Dropbox('{S}')",
    ),
    *provider(
        "anthropic-api-key",
        "anthropic-api-key",
        token("sk-ant-" + "api03-", (B64URL, 93), ("AA", 1)),
        "ANTHROPIC_API_KEY",
        "Anthropic key",
        "client = anthropic.Anthropic(api_key='{S}')",
    ),
    *provider(
        "openai-project-key",
        "openai-api-key",
        token("sk-" + "proj-", (B64URL, 74), ("T3BlbkFJ", 1), (B64URL, 74)),
        "OPENAI_API_KEY",
        "OpenAI key",
        'OpenAI(api_key="{S}")',
    ),
    *provider(
        "openrouter-api-key",
        "openrouter-api-key",
        token("sk-or-" + "v1-", (HEX, 64)),
        "OPENROUTER_API_KEY",
        "OpenRouter key",
        "base_url https://openrouter.ai/api/v1 with key {S}",
    ),
    *provider(
        "huggingface-token",
        "huggingface-token",
        token("hf" + "_", (LETTERS, 34)),
        "HF_TOKEN",
        "Hugging Face token",
        "huggingface-cli login --token {S}",
    ),
    *provider(
        "groq-api-key",
        "groq-api-key",
        token("gsk" + "_", (ALNUM, 52)),
        "GROQ_API_KEY",
        "Groq key",
        "Groq(api_key='{S}')",
    ),
    *provider(
        "replicate-token",
        "replicate-token",
        token("r8" + "_", (ALNUM, 37)),
        "REPLICATE_API_TOKEN",
        "Replicate token",
        "replicate.Client(api_token='{S}')",
    ),
    *provider(
        "perplexity-api-key",
        "perplexity-api-key",
        token("pplx-", (ALNUM, 48)),
        "PERPLEXITY_API_KEY",
        "Perplexity key",
        "sonar model calls use {S}",
    ),
    *provider(
        "xai-api-key",
        "xai-api-key",
        token("xai-", (ALNUM, 80)),
        "XAI_API_KEY",
        "xAI key",
        "grok eval harness key {S}",
    ),
    *provider(
        "pinecone-api-key",
        "pinecone-api-key",
        token("pcsk" + "_", (ALNUM, 6), ("_", 1), (ALNUM, 66)),
        "PINECONE_API_KEY",
        "Pinecone key",
        "Pinecone(api_key='{S}').Index('docs')",
    ),
    *provider(
        "elevenlabs-api-key",
        "elevenlabs-api-key",
        token("sk" + "_", (HEX, 48)),
        "ELEVENLABS_API_KEY",
        "ElevenLabs key",
        "xi-api-key: {S}",
    ),
]
