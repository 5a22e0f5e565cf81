"""Corpus: hard negatives - text that looks like a secret and is not one.

Hashes, UUIDs, public keys, digests, placeholders, redacted values, base64 of ordinary text,
version strings, identifiers, command lines that take a secret from elsewhere, and prose about
passwords and tokens that does not state one.
"""

import base64
import hashlib
import random
import uuid

from tests.policy._corpus import ALNUM, B64, chars, pem

_rng = random.Random("harmless")


def _hash(name: str, text: str) -> str:
    return hashlib.new(name, text.encode()).hexdigest()


def _uuid(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, text))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


_ED25519 = "AAAAC3NzaC1lZDI1NTE5AAAAI" + chars(_rng, B64, 43)
_RSA_PUB = "AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + chars(_rng, B64, 500)
_ECDSA_PUB = "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB" + chars(_rng, B64, 87) + "="

HASHES = [
    f"md5sum of the release tarball: {_hash('md5', 'memmesh-0.4.0.tar.gz')}",
    f"sha1 of the vendored file is {_hash('sha1', 'vendor/lib.js')}",
    f"sha256: {_hash('sha256', 'installer.sh')}  install.sh",
    f"SHA256SUMS line: {_hash('sha256', 'app-linux-amd64')}  app-linux-amd64",
    f"sha512 {_hash('sha512', 'node-v20.tar.xz')}",
    f"git rev-parse HEAD printed {_hash('sha1', 'HEAD')}",
    f"Reverted {_hash('sha1', 'bad commit')[:12]} because it broke the migrations",
    f"cherry-pick {_hash('sha1', 'fix')} onto release/2.3",
    f"blake2b checksum {_hash('blake2b', 'backup-2024-06-01')}",
    f'ETag: "{_hash("md5", "index.html")}"',
    "password_hash = '$2b$12$" + chars(_rng, ALNUM + "./", 53) + "' in the users fixture",
    "the hash column holds $argon2id$v=19$m=65536,t=3,p=4$"
    + chars(_rng, B64, 22)
    + "$"
    + chars(_rng, B64, 43),
    "/etc/shadow entry: deploy:$6$rounds=5000$"
    + chars(_rng, ALNUM, 16)
    + "$"
    + chars(_rng, ALNUM + "./", 86)
    + ":19700:0:99999:7:::",
    f"cache key is node-modules-{_hash('sha256', 'package-lock.json')[:40]}",
    f"The build id {_hash('md5', 'build 2931')} shows in the footer",
    f"sha256sum dump.sql -> {_hash('sha256', 'dump.sql')}",
    f"commit {_hash('sha1', 'merge pr 812')}\nAuthor: Ada <ada@acme.dev>",
    f"HMAC-SHA256 of the body was {_hash('sha256', 'body')}, the header matched",
    f"password_digest: {_hash('sha256', 'x')} in the seed data",
    f"token_hash = {_hash('sha256', 'invite')} (we store only the hash of invite tokens)",
]

UUIDS = [
    f"trace id {_uuid('trace-1')} in the logs",
    f"tenant_id: {_uuid('tenant')}",
    f"X-Request-Id: {_uuid('req')} reproduced the 502",
    f"subscription {_uuid('sub')} is the prod Azure subscription",
    f"client_id={_uuid('client')} for the SPA (public client)",
    f"The job {_uuid('job')} has been stuck since Monday",
    f"api_key_id: {_uuid('key id')} (the id, not the key)",
    f"workspace {_uuid('ws')} in Terraform Cloud",
    f"correlation-id={_uuid('corr')}",
    f"dashboard uid {_uuid('dash')}",
    f"aws ec2 describe-instances --filters Name=tag:run,Values={_uuid('run')}",
    f"device {_uuid('device')} failed to enroll",
    f"order {_uuid('order')} was charged twice",
    f"installation id {_uuid('inst')} for the GitHub app",
    f"ACCOUNT_ID={_uuid('acct')}",
]

PUBLIC_KEYS = [
    f"ssh-ed25519 {_ED25519} ada@laptop",
    f"authorized_keys:\nssh-rsa {_RSA_PUB} deploy@ci",
    f"known_hosts: github.com ecdsa-sha2-nistp256 {_ECDSA_PUB}",
    f"gitlab.acme.dev ssh-ed25519 {_ED25519}",
    f"The deploy key (public half) is ssh-ed25519 {_ED25519}",
    pem("PUBLIC KEY", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + chars(_rng, B64, 340)),
    pem("RSA PUBLIC KEY", "MIIBCgKCAQEA" + chars(_rng, B64, 340)),
    "the webhook verification key:\n"
    + pem("PUBLIC KEY", "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE" + chars(_rng, B64, 86)),
    pem("CERTIFICATE", "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa" + chars(_rng, B64, 900)),
    pem("PGP PUBLIC KEY BLOCK", "mQINBGVx" + chars(_rng, B64, 600)),
    "age public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
    "[Peer]\nPublicKey = " + chars(_rng, B64, 43) + "=\nAllowedIPs = 10.8.0.0/24",
    "PUBLIC_KEY=MCowBQYDK2VwAyEA" + chars(_rng, B64, 43) + "=",
    "minisign public key: RWS" + chars(_rng, B64, 53),
    'JWKS: {"kty": "RSA", "e": "AQAB", "kid": "k1", "n": "' + chars(_rng, B64, 342) + '"}',
    "SSH host key fingerprint SHA256:" + chars(_rng, B64, 43),
    "GPG key fingerprint 4AEE 18F8 3AFD EB23 96C2  E8BF 7D8C 3A19 2B4F 8E21",
    "cosign verify --key cosign.pub ghcr.io/acme/api:2.4",
    "STRIPE_PUBLISHABLE_KEY comes from the dashboard; the frontend only ever gets that one",
    f"ssh-keygen -y -f id_ed25519 printed ssh-ed25519 {_ED25519}",
]

DIGESTS = [
    f"image: ghcr.io/acme/api@sha256:{_hash('sha256', 'api image')}",
    f"Docker-Content-Digest: sha256:{_hash('sha256', 'manifest')}",
    f"git lfs: oid sha256:{_hash('sha256', 'model.bin')}\nsize 48211",
    'integrity="sha384-' + chars(_rng, B64, 64) + '" on the CDN script tag',
    f'nix: hash = "sha256-{chars(_rng, B64, 43)}=";',
    "go.sum: github.com/stretchr/testify v1.9.0 h1:" + chars(_rng, B64, 43) + "=",
    f"IPFS CID Qm{chars(_rng, ALNUM, 44)} pins the docs site",
    f'terraform lock: "h1:{chars(_rng, B64, 43)}=",',
    f"Pinned base image python:3.12-slim@sha256:{_hash('sha256', 'py')}",
    f"cosign signature digest sha512:{_hash('sha512', 'sig')}",
    f"pip --require-hashes: --hash=sha256:{_hash('sha256', 'requests')}",
    f'Cargo.lock checksum = "{_hash("sha256", "serde")}"',
]

PLACEHOLDERS = [
    "DOCKERHUB_TOKEN=dckr_pat_<your token>",
    "docker login -u acmeci -p $DOCKERHUB_TOKEN",
    "TWILIO_AUTH_TOKEN=your_auth_token and TWILIO_ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "twilio api key: SKxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "SECRET_KEY=<generate with: openssl rand -hex 32>",
    "SECRET_KEY=change-me-in-production",
    "SECRET_KEY=${DJANGO_SECRET_KEY}",
    "SECRET_KEY=",
    'password: "{{ .Values.db.password }}" in the chart template',
    "GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx",
    "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "VAULT_TOKEN=hvs.<token from vault login>",
    'sshpass -p "$SSH_PASS" ssh pi@10.0.0.12',
    "mysql -u root -p'$MYSQL_ROOT_PASSWORD' shop",
    'redis-cli -a "$REDIS_PASSWORD" PING',
    "the staging password is <ask in #ops>",
    "the password is ${DB_PASSWORD}",
    "AZURE_CLIENT_SECRET=<app secret value>",
    "STRIPE_SECRET_KEY=sk_live_...",
    "Slack: SLACK_BOT_TOKEN=xoxb-000000000000-000000000000-XXXXXXXXXXXXXXXXXXXXXXXX",
    "discord webhook: https://discord.com/api/webhooks/<id>/<token>",
    "telegram: https://api.telegram.org/bot<TOKEN>/getUpdates",
    "NPM_TOKEN=npm_****************************************",
    "AWS_SESSION_TOKEN=${AWS_SESSION_TOKEN}",
    "keytool -storepass:env STORE_PASS -keystore app.jks",
    "ldapsearch -x -W -D cn=admin,dc=acme,dc=dev (prompts for the password)",
    "ssh-keygen -t ed25519 -N '' -f /tmp/key",
    'openssl enc -aes-256-cbc -k "$BACKUP_KEY" -in db.sql',
    'zip -P "$ZIP_PASSWORD" -r out.zip dir/',
    'curl -u "$JIRA_USER:$JIRA_TOKEN" https://acme.atlassian.net/rest/api/3/myself',
    "[Interface]\nPrivateKey = <contents of /etc/wireguard/private.key>",
    "machine api.heroku.com login ada@acme.dev password $HEROKU_API_KEY",
    "Authorization: Token <your-token>",
    "--password=****",
    "OPENROUTER_API_KEY=sk-or-v1-...",
    "ANTHROPIC_API_KEY=sk-ant-api03-XXXXXXXXXXXXXXXXXXXX",
]

REDACTED = [
    "GITHUB_TOKEN=[redacted: github-token] in the release job",
    "DB_PASSWORD=[redacted: password-assignment]",
    "mysql -u root -p'[redacted: cli-password-flag]' shop",
    "the staging password is [redacted: password-in-prose]",
    "postgres://app:[redacted: password-in-url]@db:5432/app",
    "Authorization: Bearer [redacted: authorization-header]",
    "deploy key:\n[redacted: private-key-block]",
    "password=[REDACTED] in the request log",
    '"token": "***" in the audit export',
    "api_key: ******** (masked by the CI)",
    "AKIA****************",
    "sk_live_...redacted...",
    '"password": "<redacted>"',
    "docker login -u ci -p [MASKED] registry.acme.dev",
    "DOCKERHUB_TOKEN=•••••••••••••••• (shown masked in the UI)",
    "twilio auth token: [filtered]",
    "client_secret: '[hidden]'",
    "x-api-key: REDACTED",
]

BASE64_TEXT = [
    f"The header value {_b64('memmesh says hello to the team')} is just base64 of a greeting",
    "config.yaml in the secret is " + _b64("logLevel: debug\nport: 8080\n"),
    "the cursor is " + _b64('{"offset": 200, "limit": 50}'),
    f"echo {_b64('deploy finished at 12:03 UTC')} | base64 -d",
    "data: " + _b64("# nginx.conf\nworker_processes auto;\n"),
    f"The fixture's body is {_b64('The quick brown fox jumps over the lazy dog')}",
    f"README in base64: {_b64('Run make test before pushing. Ask in #platform.')}",
    f"kubectl get cm -o yaml shows binaryData: app.properties: {_b64('feature.flags=on')}",
    "state blob " + _b64('{"page": 3, "sort": "created_at", "dir": "desc"}'),
    f"the PNG starts with iVBORw0KGgoAAAANSUhEUgAA{chars(_rng, B64, 40)}",
    "nextPageToken: " + _b64('{"after": "2024-06-01T00:00:00Z"}'),
    f"The message id is {_b64('<CA+abc@mail.gmail.com>')}",
]

VERSIONS = [
    "Upgrade to v2.14.3-rc.1+build.5812 before Friday",
    "node v20.11.1, npm 10.2.4, pnpm 8.15.1",
    "Chrome/124.0.6367.91 Safari/537.36 in the user agent",
    "OpenSSL 3.0.13 30 Jan 2024 on the bastion",
    "kernel 6.8.0-31-generic broke the NIC driver",
    "image postgres:16.2-alpine3.19 for the test database",
    "terraform 1.7.5 and provider hashicorp/aws 5.43.0",
    "Python 3.12.3 (main, Apr 10 2024) [GCC 13.2.0]",
    "pydantic==2.7.1, fastapi==0.110.2, uvicorn==0.29.0",
    "release tag v2024.06.01-1a2b3c4 is the last good one",
    "k8s 1.29.4-eks-036c24b",
    "Java 21.0.3+9-LTS, Gradle 8.7",
]

IDENTIFIERS = [
    "Twilio account SID AC" + _hash("md5", "acct")[:32] + " is the prod account",
    "The Message SID SM" + _hash("md5", "msg")[:32] + " never arrived",
    "Slack channel C04ABCD1234 and user U02XYZ98765",
    "Discord guild id 1098765432109876543",
    "AWS account 123456789012, role arn:aws:iam::123456789012:role/deploy",
    "Stripe customer cus_" + chars(_rng, ALNUM, 14) + " disputed the charge",
    "Stripe price price_1P" + chars(_rng, ALNUM, 22) + " is the annual plan",
    "sentry event id " + _hash("md5", "event")[:32],
    "Google OAuth client id 1234567890-abcdefghijklmnopqrstuvwxyz012345.apps.googleusercontent.com",
    "branch feature/ABC-1234-token-refresh-for-mobile is ready",
    "pod api-7d9f8c6b5-x2k4p restarted 14 times",
    "container id " + _hash("sha256", "container")[:12],
    "Jira ticket PLAT-4821 tracks the password reset bug",
    "bucket acme-prod-exports-7f3a91 in eu-west-1",
    "Datadog monitor 12345678, org id 98765",
    "npm package @acme/token-utils@3.2.1",
    "CircleCI job 48213, pipeline 9f2e1c3a-7b4d-4e8f-a1c2-3d4e5f6a7b8c",
    "GitHub run 9012345678 attempt 2",
    "Vault path secret/data/payments/stripe holds the key",
    "1Password item 'Prod DB' in the Ops vault",
    "AWS Secrets Manager secret prod/db/master, rotation every 30 days",
    "the KMS key alias/acme-prod encrypts the bucket",
]

COMMANDS_WITHOUT_SECRETS = [
    "docker run -p 8080:80 -p 8443:443 nginx:1.25",
    "mysql -u root -p shop (it prompts for the password)",
    "mysqldump -u backup -p --single-transaction shop > shop.sql",
    "mongo -u admin -p --authenticationDatabase admin",
    "sshpass -f ~/.ssh/pi.pass ssh pi@10.0.0.12",
    "docker login ghcr.io -u ada --password-stdin < ~/.ghcr",
    "az login --use-device-code",
    "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
    "vault kv get -field=password secret/payments/db",
    "op read op://Ops/Prod DB/password",
    "gh auth token | docker login ghcr.io -u ada --password-stdin",
    "aws secretsmanager get-secret-value --secret-id prod/db --query SecretString",
    "psql -h db.internal -U app -W",
    "redis-cli --askpass -h cache-1",
    "ssh -i ~/.ssh/id_ed25519 -p 2222 deploy@bastion",
    "scp -P 2222 build.tar deploy@bastion:/srv",
    "pg_dump --no-password -h replica app > app.sql",
    "curl -u ada https://api.acme.dev/me (curl asks for the password)",
    "keytool -list -keystore app.jks",
    "openssl req -new -key server.key -out server.csr -subj /CN=acme.dev",
    "ansible-vault edit group_vars/prod/vault.yml",
    "git config --global credential.helper osxkeychain",
    "htpasswd -c /etc/nginx/.htpasswd ada",
    "sops -d secrets.enc.yaml > /dev/null && echo ok",
]

CODE = [
    "password = getpass.getpass('DB password: ')",
    "SECRET_KEY = env('SECRET_KEY')",
    "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
    "api_key = settings.STRIPE_API_KEY",
    "const secret = process.env.JWT_SECRET ?? throwMissing('JWT_SECRET')",
    "if password != confirm_password: raise ValueError('passwords differ')",
    "password: Optional[str] = None",
    "def rotate_token(token: str, *, ttl: int = 3600) -> Token:",
    "secret_key: SecretStr = Field(..., min_length=32)",
    "client_secret = keyring.get_password('acme', 'client_secret')",
    'let token = std::env::var("GITHUB_TOKEN")?;',
    "AUTH_TOKEN = os.environ.get('AUTH_TOKEN', '')",
    "password_field = forms.CharField(widget=forms.PasswordInput)",
    "hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "TOKEN_EXPIRY_SECONDS=3600",
    "SECRET_KEY_FILE=/run/secrets/django_key",
    "API_KEY_HEADER=X-Api-Key",
    "JWT_ALGORITHM=RS256",
    "PASSWORD_MIN_LENGTH=14",
    "ENCRYPTION_KEY_ID=alias/acme-prod",
    "export AWS_PROFILE=prod-readonly",
    "export GITHUB_TOKEN=$(gh auth token)",
    "SESSION_SECRET=${SESSION_SECRET:?must be set}",
    "API_TOKEN_URL=https://auth.acme.dev/oauth/token",
]

PROSE = [
    "the staging password is in 1Password under 'Staging DB'",
    "The password is stored in Vault, never in the repo",
    "the admin password was rotated yesterday",
    "The password is case-sensitive",
    "The password is Argon2id-hashed with a per-user salt",
    "the password is at least 14 characters long",
    "the password is the same as on staging, ask Ana",
    "Our Wi-Fi password is on the whiteboard in room 2",
    "The default password is admin; change it on first login",
    "the password is randomly-generated at install time",
    "Password expires after 90 days for service accounts",
    "The root password is printed once by the installer; save it",
    "the API key is in the team vault",
    "The token is valid for one hour",
    "The secret is named payments-tls in the prod namespace",
    "the API key is scoped to read-only",
    "Token expiry is 3600 seconds",
    "the session token is rotated on every login",
    "Never paste a password into Slack",
    "The password reset link expires after 15 minutes",
    "the DB password is set by the PGPASSWORD variable in CI",
    "If the password is wrong three times the account locks",
    "the passphrase is whatever you chose when creating the key",
    "The client secret is shown only once in the Entra portal",
    "Passwords are compared in constant time",
    "the password is managed by the operator, not by us",
    "The password is 12+ characters and must include a digit",
    "The bot token is revoked when the bot is removed from the server",
    "the token is a JWT signed with RS256",
    "The license key is emailed to the billing contact",
    "The password was reset to the default and must be changed",
    "Rotate the Docker Hub token before it expires in June",
    "Twilio auth tokens are 32 hex characters; keep them out of the repo",
    "OpenSSH private keys start with b3BlbnNzaC1rZXktdjE once the header is removed",
    "Docker Hub personal access tokens start with dckr_pat_",
    "password-based login is disabled; use SSO",
]

_CERT = pem("CERTIFICATE", "MIIDBTCCAe2gAwIBAgIIS" + chars(_rng, B64, 700))

# Near misses: each one shaped like what a detector looks for.
NEAR_MISSES = [
    "certificate-authority-data: " + _b64(_CERT),
    "client-certificate-data: " + _b64(_CERT + "\n"),
    "redis key key-" + _hash("md5", "user:42") + " holds the session",
    "cache entry key-" + _hash("md5", "feed") + " expired",
    "deployment api-" + _uuid("deployment") + " finished",
    f"the md5 {_hash('md5', 'x')}-us-east-1 suffix is the region",
    "the password is SHA-256 hashed before it is stored",
    "the password is UTF-8 encoded, then salted",
    "the password is 16 characters long",
    "The password is 2FA-protected",
    "password: !Ref DbPassword",
    "MasterUserPassword: !Sub '{{resolve:secretsmanager:prod/db:SecretString:password}}'",
    "password: ENC[AES256_GCM,data:"
    + chars(_rng, B64, 24)
    + "=,iv:"
    + chars(_rng, B64, 22)
    + ",type:str]",
    "SECRET_KEY: ENC[AES256_GCM,data:" + chars(_rng, B64, 40) + ",type:str]",
    "the password field is required on signup",
    "The password is not stored anywhere",
    "the password is being rotated by the operator",
    "the password was typed wrong twice and the account locked",
    "the passphrase is four random words",
    "the password is over 64 characters, so bcrypt truncates it",
    "Password: see the vault",
    "password = None  # filled in by the secrets loader",
    "passwords: see docs/security.md",
    "password: ${{ secrets.DB_PASSWORD }}",
    "token: ${{ github.token }}",
    "The token endpoint is /oauth/token",
    "the secret sauce is aggressive caching",
    "the access token is a JWT signed by Auth0",
    "access_token_lifetime: 3600",
    "API_TOKEN=__REPLACE__",
    "CLIENT_SECRET=see-vault",
    "SECRET_KEY=dev",
    "SECRET=12345678",
    "SSH_PRIVATE_KEY=~/.ssh/id_rsa",
    "TOKEN=$(cat /run/secrets/token)",
    "SECRET_KEY=`openssl rand -hex 32`",
    "API_KEY=sk-xxxx",
    "SECRET_KEY=django-insecure-change-me",
    "mysql --protocol=tcp -h db -P 3306 -u app -p",
    "mysqldump -u root -p$MYSQL_PWD shop",
    "helm registry login ghcr.io -u ada -p $CR_PAT",
    "restic --password-file /etc/restic/pw snapshots",
    "vault write auth/approle/role/ci --token-ttl 3600 --secret-id-ttl 0",
    "kubectl create secret --secret-name payments-tls",
    "curl -u ada: https://api.acme.dev/health",
    "http -a ada:$(pass show api) GET https://api.acme.dev/me",
    "keytool -list -storepass changeit -keystore cacerts",
    "smbclient //nas/public -U guest%",
    "sqlcmd -S db -U sa -P $SA_PASSWORD",
    "ssh://git@gitlab.acme.dev:2222/group/repo.git",
    "https://3f9a2b7c4d1e0f5a6b8c9d0e1f2a3b4c@o450123.ingest.sentry.io/5501234 is the public DSN",
    "http://[::1]:8080/health answers on IPv6",
    "postgres://app:@localhost/app (no password, trust auth)",
    "mongodb://localhost:27017,localhost:27018/?replicaSet=rs0",
    "https://user:${GH_TOKEN}@github.com/acme/infra.git",
    "The AWS_SECRET_ACCESS_KEY variable is read by boto3",
    "x-amz-security-token must be forwarded by the proxy",
    "SKU SK-4471 is out of stock",
    "The job failed with error API-LIMIT-EXCEEDED twice",
    "oauth scopes: repo, read:org, workflow",
    "max_tokens=4096, temperature=0.2",
    "tokenizer vocab size is 50257",
    "Prompt tokens: 1,234; completion tokens: 567",
    "AWS_ACCESS_KEY_ID=ASIAIOSFODNN7EXAMPLE in the moto tests",
    "eyJhbGciOiJIUzI1NiJ9 is just the header of a JWT",
    "Bearer tokens go in the Authorization header, never in the URL",
    "Authorization: Bearer <token>",
    'authorization: basic realm="acme"',
    "Basic auth is disabled on the API",
    "the PIN for the door is on the wiki",
    "Set DOCKER_PASSWORD in the CI settings, not here",
    "Twilio SID AC" + _hash("md5", "account")[:32] + " sends from +15005550006",
    "AC" + _hash("md5", "acc")[:32] + " is the subaccount for EU traffic",
]

HARMLESS_MORE: list[str] = (
    HASHES
    + UUIDS
    + PUBLIC_KEYS
    + DIGESTS
    + PLACEHOLDERS
    + REDACTED
    + BASE64_TEXT
    + VERSIONS
    + IDENTIFIERS
    + COMMANDS_WITHOUT_SECRETS
    + CODE
    + PROSE
    + NEAR_MISSES
)
