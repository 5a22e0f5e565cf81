"""Corpus: cloud and hosting credentials, and private keys, in developer notes."""

import base64
import random

from tests.policy._corpus import (
    ALNUM,
    B64,
    B64URL,
    BASE32,
    BECH32,
    HEX,
    LOWER_ALNUM,
    Make,
    Secret,
    chars,
    examples,
    fake_uuid,
    pem,
    provider,
    token,
)


def _key_body(start: str, size: int) -> Make:
    return lambda rng: start + chars(rng, B64, size)


def _openssh(rng: random.Random) -> str:
    return "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + chars(
        rng, B64, 330
    )


def _pem_block(kind: str, start: str, size: int) -> Make:
    return lambda rng: pem(kind, start + chars(rng, B64, size))


def _kube_key(rng: random.Random) -> str:
    block = pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA" + chars(rng, B64, 400))
    return base64.b64encode(block.encode()).decode()


def _putty(rng: random.Random) -> str:
    return "\n".join(
        (
            "PuTTY-User-Key-File-3: ssh-ed25519",
            "Encryption: none",
            "Comment: deploy@bastion",
            "Public-Lines: 2",
            "AAAAC3NzaC1lZDI1NTE5AAAAI" + chars(rng, B64, 39),
            chars(rng, B64, 20),
            "Private-Lines: 1",
            "AAAAI" + chars(rng, B64, 43),
            "Private-MAC: " + chars(rng, HEX, 64),
        )
    )


KEYS: list[Secret] = [
    *examples(
        "openssh-private-key",
        "private-key-block",
        lambda rng: pem("OPENSSH PRIVATE KEY", _openssh(rng), 70),
        [
            "bastion key, paste into ~/.ssh/id_ed25519 and chmod 600:\n{S}",
            "cat ~/.ssh/deploy_key printed\n{S}\nadd it to the runner",
        ],
    ),
    *examples(
        "openssh-key-body",
        "private-key-body",
        lambda rng: "\n".join(_openssh(rng)[i : i + 70] for i in range(0, 400, 70)),
        [
            "the key body (I lost the BEGIN line when copying):\n{S}",
            "id_ed25519 contents minus the header:\n{S}\n-----END OPENSSH PRIVATE KEY-----",
            "{S}",
            "deploy key for gitlab runner: {S}",
        ],
    ),
    *examples(
        "rsa-private-key",
        "private-key-block",
        _pem_block("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 1500),
        ["nginx TLS key for edge-3:\n{S}", "legacy signing key, keep until March: {S}"],
    ),
    *examples(
        "rsa-key-body",
        "private-key-body",
        _key_body("MIIEowIBAAKCAQEA", 800),
        ["The private key body is {S}", 'tls.key: "{S}" in the chart values'],
    ),
    *examples(
        "pkcs8-private-key",
        "private-key-block",
        _pem_block("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1400),
        ["SAML IdP signing key:\n{S}", "webhook signer key (PKCS#8): {S}"],
    ),
    *examples(
        "pkcs8-key-body",
        "private-key-body",
        _key_body("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 600),
        ["JWT signing key, base64 DER: {S}", "PRIVATE_KEY_DER={S}"],
    ),
    *examples(
        "ec-private-key",
        "private-key-block",
        _pem_block("EC PRIVATE KEY", "MHcCAQEEI", 110),
        ["APNs token key (P-256):\n{S}", "cosign key pair, private half:\n{S}"],
    ),
    *examples(
        "ec-key-body",
        "private-key-body",
        _key_body("MHcCAQEEI", 110),
        ["ES256 key for the session service: {S}", "ecdsa_key = {S}"],
    ),
    *examples(
        "ed25519-pkcs8-body",
        "private-key-body",
        _key_body("MC4CAQAwBQYDK2VwBCIEI", 43),
        ["Ed25519 signing key (PKCS#8 base64): {S}", "SIGNING_KEY_B64={S}"],
    ),
    *examples(
        "encrypted-private-key",
        "private-key-block",
        _pem_block(
            "ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 900
        ),
        ["client cert key, passphrase in 1Password:\n{S}", "{S}"],
    ),
    *examples(
        "dsa-private-key",
        "private-key-block",
        _pem_block("DSA PRIVATE KEY", "MIIBuwIBAAKBgQC", 600),
        ["ancient DSA host key from the old SFTP box:\n{S}"],
    ),
    *examples(
        "pgp-private-key",
        "private-key-block",
        lambda rng: pem("PGP PRIVATE KEY BLOCK", "lQdGBGVx" + chars(rng, B64, 900)).replace(
            "BLOCK-----\n", "BLOCK-----\nVersion: GnuPG v2\n\n", 1
        ),
        ["release signing key (gpg --export-secret-keys --armor):\n{S}"],
    ),
    *examples(
        "kubeconfig-client-key",
        "private-key-body",
        _kube_key,
        [
            "kubeconfig for the staging cluster:\nusers:\n- name: admin\n  user:\n"
            "    client-key-data: {S}",
            "client-key-data: {S}",
        ],
    ),
    *examples(
        "putty-private-key",
        "putty-private-key",
        _putty,
        ["WinSCP key for the SFTP drop (deploy.ppk):\n{S}", "{S}"],
    ),
    *examples(
        "age-secret-key",
        "age-secret-key",
        lambda rng: "AGE-SECRET-" + "KEY-1" + chars(rng, BECH32, 58),
        [
            "sops age key for the prod secrets: {S}",
            "# created: 2024-06-01\n"
            "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n{S}",
            "SOPS_AGE_KEY={S}",
        ],
    ),
]

CLOUD: list[Secret] = [
    *provider(
        "aws-access-key-id",
        "aws-access-key-id",
        token("AKIA", (BASE32, 16)),
        "AWS_ACCESS_KEY_ID",
        "AWS access key id for the deploy user",
        "aws configure printed {S} as the key id",
    ),
    *examples(
        "aws-secret-access-key",
        "aws-secret-access-key",
        token("", (B64, 40)),
        [
            "AWS_SECRET_ACCESS_KEY={S}",
            "[prod]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {S}",
            '"SecretAccessKey": "{S}" from aws iam create-access-key',
        ],
    ),
    *provider(
        "aws-session-token",
        "aws-session-token",
        token("IQoJb3JpZ2luX2Vj", (B64, 360)),
        "AWS_SESSION_TOKEN",
        "STS session token",
        "aws sts get-session-token gave SessionToken {S}",
    ),
    *provider(
        "aws-bedrock-api-key",
        "aws-bedrock-api-key",
        token("ABSK", (B64, 132)),
        "AWS_BEARER_TOKEN_BEDROCK",
        "Bedrock API key",
        "Bedrock long-lived key for the eval job: {S}",
    ),
    *provider(
        "amazon-mws-token",
        "amazon-mws-token",
        lambda rng: "amzn.mws." + fake_uuid(rng),
        "MWS_AUTH_TOKEN",
        "MWS auth token",
        "seller central gave us the MWS token {S}",
    ),
    *provider(
        "aws-appsync-api-key",
        "aws-appsync-api-key",
        token("da2-", (LOWER_ALNUM, 26)),
        "APPSYNC_API_KEY",
        "AppSync API key",
        "x-api-key: {S} for the GraphQL endpoint",
    ),
    *provider(
        "google-api-key",
        "google-api-key",
        token("AIza", (B64URL, 35)),
        "GOOGLE_MAPS_API_KEY",
        "Maps key",
        "https://maps.googleapis.com/maps/api/staticmap?center=Paris&key={S}",
    ),
    *provider(
        "google-oauth-client-secret",
        "google-oauth-secret",
        token("GOCSPX-", (B64URL, 28)),
        "GOOGLE_CLIENT_SECRET",
        "Google OAuth client secret",
        '{"web": {"client_id": "12.apps.googleusercontent.com", "client_secret": "{S}"}}',
    ),
    *provider(
        "google-oauth-access-token",
        "google-oauth-secret",
        token("ya29.", (B64URL, 150)),
        "GOOGLE_ACCESS_TOKEN",
        "gcloud access token",
        "curl -H 'Authorization: Bearer {S}' https://www.googleapis.com/drive/v3/files",
    ),
    *provider(
        "firebase-cloud-messaging-key",
        "firebase-cloud-messaging-key",
        lambda rng: "AAAA" + chars(rng, B64URL, 7) + ":APA91b" + chars(rng, B64URL, 134),
        "FCM_SERVER_KEY",
        "FCM server key",
        "legacy FCM send needs Authorization: key={S}",
    ),
    *examples(
        "azure-storage-account-key",
        "azure-connection-string",
        lambda rng: chars(rng, B64, 86) + "==",
        [
            "DefaultEndpointsProtocol=https;AccountName=acmeexports;AccountKey={S};"
            "EndpointSuffix=core.windows.net",
            "AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=x;"
            "AccountKey={S}'",
            "Cosmos: AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey={S};",
        ],
    ),
    *examples(
        "azure-sas-token",
        "azure-sas-signature",
        lambda rng: chars(rng, ALNUM, 40) + "%3D",
        [
            "backup upload URL: https://acmebk.blob.core.windows.net/db?sp=racwl&st=2024-05-01"
            "&se=2024-06-01&spr=https&sv=2022-11-02&sr=c&sig={S}",
            "queue SAS ?sv=2021-08-06&ss=q&srt=sco&sp=rwdlacup&se=2025-03-01&sig={S}",
        ],
    ),
    *provider(
        "azure-ad-client-secret",
        "azure-ad-client-secret",
        lambda rng: (
            chars(rng, ALNUM, 3)
            + chars(rng, "0123456789", 1)
            + "Q~"
            + chars(rng, ALNUM + "_~.-", 34)
        ),
        "AZURE_CLIENT_SECRET",
        "Entra app secret",
        "app registration acme-ci, client secret value {S} (expires 2025-12)",
    ),
    *provider(
        "alibaba-access-key-id",
        "alibaba-access-key-id",
        token("LTAI", (ALNUM, 20)),
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "Alibaba AccessKey id",
        "OSS uploads use AccessKey {S}",
    ),
    *provider(
        "tencent-secret-id",
        "tencent-secret-id",
        token("AKID", (ALNUM, 32)),
        "TENCENTCLOUD_SECRET_ID",
        "Tencent SecretId",
        "COS bucket in ap-shanghai: SecretId {S}",
    ),
    *provider(
        "yandex-cloud-api-key",
        "yandex-cloud-key",
        token("AQVN", (B64URL, 36)),
        "YC_API_KEY",
        "Yandex Cloud API key",
        "Authorization: Api-Key {S} for the SpeechKit call",
    ),
    *provider(
        "digitalocean-pat",
        "digitalocean-token",
        token("dop" + "_v1_", (HEX, 64)),
        "DIGITALOCEAN_TOKEN",
        "DigitalOcean token",
        "doctl auth init -t {S}",
    ),
    *provider(
        "digitalocean-oauth-token",
        "digitalocean-token",
        token("doo" + "_v1_", (HEX, 64)),
        "DO_OAUTH_TOKEN",
        "DO OAuth token",
        "the droplet autoscaler authenticates with {S}",
    ),
    *provider(
        "heroku-api-key",
        "heroku-api-key",
        token("HRKU-AA", (B64URL, 58)),
        "HEROKU_API_KEY",
        "Heroku API key",
        "heroku authorizations:create printed Token: {S}",
    ),
    *provider(
        "flyio-token",
        "flyio-token",
        token("fo1_", (B64URL, 43)),
        "FLY_API_TOKEN",
        "Fly.io org token",
        "flyctl tokens create org gave {S}",
    ),
    *provider(
        "flyio-deploy-token",
        "flyio-macaroon",
        token("fm2_", (B64, 220)),
        "FLY_DEPLOY_TOKEN",
        "Fly deploy token",
        "fly tokens create deploy -x 999999h: {S}",
    ),
    *provider(
        "terraform-cloud-token",
        "terraform-cloud-token",
        lambda rng: chars(rng, ALNUM, 14) + ".atlas" + "v1." + chars(rng, B64URL, 67),
        "TF_TOKEN_app_terraform_io",
        "Terraform Cloud token",
        'credentials "app.terraform.io" {\n  token = "{S}"\n}',
    ),
    *provider(
        "vault-service-token",
        "vault-token",
        token("hvs.", ("CAESI", 1), (B64URL, 90)),
        "VAULT_TOKEN",
        "Vault token",
        "vault login {S}",
    ),
    *provider(
        "vault-batch-token",
        "vault-token",
        token("hvb.", (B64URL, 150)),
        "VAULT_BATCH_TOKEN",
        "Vault batch token",
        "the CI role issues batch tokens like {S}",
    ),
    *provider(
        "pulumi-access-token",
        "pulumi-token",
        token("pul-", (HEX, 40)),
        "PULUMI_ACCESS_TOKEN",
        "Pulumi token",
        "pulumi login with {S}",
    ),
    *provider(
        "doppler-token",
        "doppler-token",
        token("dp.st.prd.", (ALNUM, 43)),
        "DOPPLER_TOKEN",
        "Doppler service token",
        "doppler run --token {S} -- ./start.sh",
    ),
    *provider(
        "databricks-token",
        "databricks-token",
        token("dapi", (HEX, 32)),
        "DATABRICKS_TOKEN",
        "Databricks PAT",
        "databricks configure --token, host adb-1234.azuredatabricks.net, token {S}",
    ),
    *provider(
        "cloudflare-origin-ca-key",
        "cloudflare-origin-ca-key",
        token("v1.0-", (HEX, 24), ("-", 1), (HEX, 146)),
        "CF_ORIGIN_CA_KEY",
        "Cloudflare Origin CA key",
        "cert-manager origin issuer serviceKey: {S}",
    ),
    *provider(
        "netlify-token",
        "netlify-token",
        token("nfp_", (ALNUM, 36)),
        "NETLIFY_AUTH_TOKEN",
        "Netlify token",
        "netlify deploy --auth {S} --prod",
    ),
    *provider(
        "render-api-key",
        "render-api-key",
        token("rnd_", (ALNUM, 32)),
        "RENDER_API_KEY",
        "Render API key",
        "curl -H 'Authorization: Bearer {S}' https://api.render.com/v1/services",
    ),
    *provider(
        "supabase-access-token",
        "supabase-token",
        token("sbp_", (HEX, 40)),
        "SUPABASE_ACCESS_TOKEN",
        "Supabase access token",
        "supabase login --token {S}",
    ),
    *provider(
        "supabase-secret-key",
        "supabase-token",
        token("sb_secret_", (B64URL, 31)),
        "SUPABASE_SECRET_KEY",
        "Supabase secret key",
        "server-side client: createClient(url, '{S}')",
    ),
    *provider(
        "planetscale-password",
        "planetscale-token",
        token("pscale_pw_", (B64URL, 43)),
        "DATABASE_PASSWORD",
        "PlanetScale branch password",
        "pscale password create shop main app printed {S}",
    ),
    *provider(
        "planetscale-token",
        "planetscale-token",
        token("pscale_tkn_", (B64URL, 43)),
        "PLANETSCALE_SERVICE_TOKEN",
        "PlanetScale service token",
        "the migration bot uses service token {S}",
    ),
    *provider(
        "scalingo-token",
        "scalingo-token",
        token("tk-us-", (B64URL, 48)),
        "SCALINGO_API_TOKEN",
        "Scalingo token",
        "scalingo login --api-token {S}",
    ),
    *provider(
        "openshift-token",
        "openshift-token",
        token("sha256~", (B64URL, 43)),
        "OPENSHIFT_TOKEN",
        "oc login token",
        "oc login --token={S} --server=https://api.ocp.acme.dev:6443",
    ),
]
