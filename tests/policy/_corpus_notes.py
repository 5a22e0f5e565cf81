"""Corpus: the first collection of developer memories holding a secret, and harmless
look-alikes.

Every secret below is fake but has the real format, and is assembled from pieces so that this
file itself does not trip secret scanners. Each sits in a sentence a developer might save.
The harmless look-alikes are placeholders, hashes, ids, digests, versions, paths, URLs without
credentials, code that reads a secret without spelling it, and prose about security.
"""

from tests.policy._corpus import Secret, b64url_json, basic


def _secret(detector: str, template: str, value: str) -> Secret:
    """A memory that spells ``value`` where ``template`` says ``{S}``; its kind is the
    detector's name."""
    assert "{S}" in template
    return Secret(detector, detector, template.replace("{S}", value), value)


def _pem(kind: str, lead: str, *lines: str) -> str:
    """A private key block: BEGIN line, base64 body, END line."""
    begin = "-----" + "BEGIN " + kind + "-----"
    end = "-----" + "END " + kind + "-----"
    return "\n".join((begin, lead + lines[0], *lines[1:], end))


_PEM_LINES = (
    "QnqcCC+eqaKIfNEVJvm6yoy44swK2BO/xJNLA5vn9DsnZUSwUxgUJgJfiEfGNao2",
    "x2fzDFHtEj9ZIavKlOz/kg9R4DtdZRXdaP3af0/Ukleec4xEMkcmRQvvVqifuVv5",
    "jsNewQ872PvrdQYBP/PfTxXRn9s+BBNx4hM4QEqyUYuqYeJWY7s1xr6mFTcwJ1ua",
    "vhLiHDNbtAIVs+GH6sfS+8VCSagiq0mqeVF41hBReTUKtvKZ1ILzqm+ZZV9Qp6yF",
    "EakkrJmsWAk/098bXkuHxiOIBlHDSC/8etdyNnrRGMAnmPwf04/cjIsk5mtZhxw0",
    "smRn7uGTACFu94EaH7wr44BGM78OD42NABZxw99/Qs5QtYCkSsEhMBUQ/sKWvvmF",
    "EijZHyeXepl5YHc+nn0mAQ7DeSP783FENIiGYTQpBI4Hjgd5jjzbB9fMYE4rPmlY",
    "p23ZCl2ZniMmPuVFVU4HiX9Tq3UuIvXd4hmNuTBI5xccbg9hoTe27RjiTWLTX3+p",
    "3cfbw8G8U9KD4dVhyBO7Riq0u5Xb4TMfHgz9chprpPt5Cy/fY8vLcpI6J2Z91N9U",
    "8P0CV01NMp06E7tGmX6+CpBwNB5YRqsMAQvqn4PRjVE1EBmdI81eNPmHUCPJkKDq",
    "VH2mDrkkw44Cp+yAOQr3/lqaLnbio+Bhyb7hRlFvXN32MTCwQoi6etPPwJ/qSfOp",
    "gp/69x1nkuhdjXS+MrcQln6vjRdspD9sJ15d+5tQObxvf6DEFrMYVqwGHSKUbOWQ",
)

_RSA_KEY = _pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", *_PEM_LINES[0:4])
_OPENSSH_KEY = _pem(
    "OPENSSH PRIVATE KEY",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    *_PEM_LINES[4:7],
)
_EC_KEY = _pem("EC PRIVATE KEY", "MHcCAQEEIOa", *_PEM_LINES[7:9])
_ENCRYPTED_KEY = _pem(
    "ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", *_PEM_LINES[9:12]
)
_PGP_KEY = _pem("PGP PRIVATE KEY BLOCK", "\nlQdGBGVx", *_PEM_LINES[2:5]).replace(
    "BLOCK-----\n", "BLOCK-----\nVersion: GnuPG v2\n", 1
)
_LEGACY_RSA_KEY = _pem(
    "RSA PRIVATE KEY",
    "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,8f0816c5d34136ee12f13ae1a17f03c2\n\n",
    *_PEM_LINES[5:8],
)
# A service-account JSON keeps the key on one line with escaped newlines.
_SA_KEY = _pem(
    "PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", *_PEM_LINES[8:10]
)
_SA_KEY_ESCAPED = _SA_KEY.replace("\n", "\\n")

JWT_HS256 = ".".join(
    (
        b64url_json({"alg": "HS256", "typ": "JWT"}),
        b64url_json({"sub": "svc-billing", "iat": 1717430400, "exp": 1749000000, "scope": "write"}),
        "-1tVvez2QcEJjrpnNiC-HdSrCl9eVZuo476E_zxdwB0",
    )
)
_JWT_RS256 = ".".join(
    (
        b64url_json({"alg": "RS256", "kid": "a847d8c2976185261fee0cfb42e378cf", "typ": "JWT"}),
        b64url_json({"iss": "https://auth.acme.dev/", "aud": "api", "sub": "auth0|64f1c2"}),
        "4jpn6X7XPKjlOP1jlrsKytKAy94hEa1oKcFl3ZYAqw2KDTndDLcrGzfw4xVf5-0WBfyP_IYkvqOs-Z_CV7Xh"
        + "sW4UxnagQGug80EOqgvkEEQVjhCcWguNl-wie7tHRg1s7kCjAAH--xW0zX7vLR3GhQl6IsIVtVJ1fd9Pje-_"
        + "dWvKDhNw2PODjzDTx3aRCqv22FixGldnEPNrNcohn29jY0bEcHGnO7ePcKBTIQPww65sHm06JKG0_9hlKs5K",
    )
)
_JWT_SESSION = ".".join(
    (
        b64url_json({"alg": "ES256", "typ": "JWT"}),
        b64url_json({"uid": 4211, "role": "admin", "exp": 1735689600}),
        "iBg2fI97eUtk0wI51uv6_KRltEfMY6U-Qi1h7FD5HUYy74DAv2roZZr5pbdl6K21pP2NoDsgcS9txUoAOHSTjx",
    )
)

GITHUB_TOKEN = "ghp" + "_skbfqpHvqAhPqhf5OUFCAL4Te3DAFsvVPLPj"
PYPI_TOKEN = (
    "pypi-AgEIcHlwaS5vcmc"
    + "CJGY0ZTg1NjA3LWQwNjgtNGZlMy05MDY1s-sdVIEH7ywl"
    + "JE24m1njI9-J9MEmpTN3ZjgeVtZ6h4E6NGiOQGkmwMd19O"
)

SECRETS: list[Secret] = [
    # --- private key blocks
    _secret("private-key-block", "Deploy key for the staging box, do not share:\n{S}", _RSA_KEY),
    _secret(
        "private-key-block", "CI bastion key (ed25519), paste into ~/.ssh/id_ci:\n{S}", _OPENSSH_KEY
    ),
    _secret("private-key-block", "The webhook signer uses this P-256 key: {S}", _EC_KEY),
    _secret(
        "private-key-block",
        "PKCS#8 key for the SAML IdP, passphrase in 1Password: {S}",
        _ENCRYPTED_KEY,
    ),
    _secret(
        "private-key-block",
        "Release signing key exported with gpg --export-secret-keys: {S}",
        _PGP_KEY,
    ),
    _secret("private-key-block", "Old nginx key (still in use on edge-2):\n{S}", _LEGACY_RSA_KEY),
    _secret(
        "private-key-block",
        'gcp service account for the exporter: {"type": "service_account", "private_key": "{S}"}',
        _SA_KEY_ESCAPED,
    ),
    # --- AWS
    _secret(
        "aws-access-key-id",
        "Terraform state bucket uses access key {S} (user tf-ci)",
        "AKIA" + "TYMXMS67ANWP46I4",
    ),
    _secret(
        "aws-access-key-id",
        "[default]\naws_access_key_id = {S}\nregion = eu-west-1",
        "AKIA" + "57IT2E355DCLP3DJ",
    ),
    _secret(
        "aws-access-key-id",
        "STS gave me {S} for the assumed role, valid for one hour",
        "ASIA" + "NJCPB4QPW4JGTM43",
    ),
    _secret(
        "aws-secret-access-key",
        "~/.aws/credentials on the build box: aws_secret_access_key = {S}",
        "2z3ecFXO84bPNH3BGKzlWPD3JV4XPbdVnEvMtwF1",
    ),
    _secret(
        "aws-secret-access-key",
        "export AWS_SECRET_ACCESS_KEY={S} before running the backfill",
        "2xvE09c5G5NQGDFed6mFDMrv8+H7TRTB+oSy0qsd",
    ),
    _secret(
        "aws-secret-access-key",
        'aws sts assume-role printed "SecretAccessKey": "{S}", "SessionToken": ...',
        "vDgMcBk4eA5ctMtIyuHTe+nL9Cd+l6Biflm5Kr9v",
    ),
    # --- Google
    _secret(
        "google-api-key",
        "Maps calls go to https://maps.googleapis.com/maps/api/geocode/json?key={S}",
        "AIza" + "njsOYyCsrbxzGbOUysdAWppzuk9YiwKEfff",
    ),
    _secret(
        "google-api-key",
        "GOOGLE_MAPS_API_KEY={S} in the web .env",
        "AIza" + "XZKjk5Hm4eVYQbj00vizwNB2G1neVV4A_CZ",
    ),
    _secret(
        "google-api-key",
        "firebaseConfig = { apiKey: '{S}', authDomain: 'acme-prod.firebaseapp.com' }",
        "AIza" + "exN6qZfi3kVjub3gqDdDc_ioosQT2OP-JwY",
    ),
    _secret(
        "google-oauth-secret",
        "OAuth client for the CLI login: client secret {S}",
        "GOCSPX" + "-EnKYfB_DWMAjTuBEpc79bqEEyGQ8",
    ),
    _secret(
        "google-oauth-secret",
        '{"installed": {"client_id": "1234.apps.googleusercontent.com", "client_secret": "{S}"}}',
        "GOCSPX" + "-XgEjdALVirGzBE8k0XH7Ayxahpr5",
    ),
    _secret(
        "google-oauth-secret",
        "gcloud auth print-access-token gave {S} (expires in an hour)",
        "ya29" + ".EUU3rkGynM5xBivvDA-gtsd_QEu6McgnEwApQfGrn5osfnCPOvR7zJa24LA5KWANOBllhvy3aY",
    ),
    _secret(
        "google-oauth-secret",
        "refresh token for the Drive sync bot: {S}",
        "1//0" + "PlW0Cx-vHP3GHbUVfy2pN4sfwkgw_I5xy4R8m4h1v4vmLjg_M8wuWPkjrKvi6i7APBVC7qa",
    ),
    # --- Azure
    _secret(
        "azure-connection-string",
        "DefaultEndpointsProtocol=https;AccountName=acmelo"
        + "gs;AccountKey={S};EndpointSuffix=core.windows.net",
        "i7HkWzNV2vpUS7V7n7S41frrKXDZYaaR1gvHEibqehK8jkbg+FXd0trX4SbDduJbdCSIwmuLldndpWn4DOwjAI==",
    ),
    _secret(
        "azure-connection-string",
        "Service Bus: Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName="
        + "RootManageSharedAccessKey;SharedAccessKey={S}",
        "p9N8C9ZuYdlWpQITr11uvjg0OyrivytYLL+xdidMVZB=",
    ),
    _secret(
        "azure-connection-string",
        "The event hub listener string ends in SharedAccessKey={S};EntityPath=clicks",
        "fQ3bu2l8npNI0b2r7jx7kqPCWTLiap1o49/vnc3v9VO=",
    ),
    _secret(
        "azure-sas-signature",
        "Upload with https://acmelogs.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co"
        + "&sp=rwl&se=2025-01-01T00:00:00Z&sig={S}",
        "RfShH8EUXQcPVuuZEibqnTXcuynlbrqxl1p0acgDpwI%3D",
    ),
    _secret(
        "azure-sas-signature",
        "SharedAccessSignature sr=acme-hub.servicebus.windows.net&sig={S}&se=1735689600&skn=send",
        "nR4XP5XoNspWBWPblhEUw0KnT%2F3og82b9UvHglt40zp%3D",
    ),
    _secret(
        "azure-sas-signature",
        "container SAS for the data team: ?sp=r&st=2024-05-01&se=2024-12-31&spr=https&sig={S}",
        "oG4YLbtm1o3oKm/SMOCuWuvIgBICr/UhhVZIXBVzTvV=",
    ),
    # --- GitHub
    _secret(
        "github-token",
        "My PAT for the release script is {S}",
        GITHUB_TOKEN,
    ),
    _secret(
        "github-token", "gh auth token printed {S}", "gho" + "_HkfPdCId6lIWyqmAvX0OVA1d5N3Gn4jeLmyw"
    ),
    _secret(
        "github-token",
        "App installation token for the bot: {S}",
        "ghs" + "_fjoRUryjt7vypm0QkzOmaoVj6NZtJ3DrZUYT",
    ),
    _secret(
        "github-token",
        "user-to-server token from the OAuth flow: {S}",
        "ghu" + "_JfzC54puaQcMoV8AKRyJeQm6spcaG03801ML",
    ),
    _secret(
        "github-token",
        "refresh token {S} lasts six months",
        "ghr" + "_joAXZZWZQtq5vNNiYS6NBKqbhV3SWRtpewY6",
    ),
    _secret(
        "github-fine-grained-token",
        "Fine-grained token scoped to acme/infra: {S}",
        "github"
        + "_pat_FF5rMmyP7EUu8eVzLkuI4O_w6HXaoaCFgvJLSDCYYEtMFpcQlqNntgsu8YTt4jH8ivZ9N0gKGyOhzCRTT9",
    ),
    _secret(
        "github-fine-grained-token",
        "renovate runs with GITHUB_TOKEN={S}",
        "github"
        + "_pat_bfZQjIBok6mmzgCvdWTKwq_52aINcXEq7kCzGCDANLxZ2r6RskyJxLaJvXaY2yOiMiMojGNJmlKbc2REuh",
    ),
    # --- GitLab
    _secret(
        "gitlab-token", "GitLab PAT for the mirror job: {S}", "glpat" + "-wK6U71ARKnllNV2kfnUn"
    ),
    _secret(
        "gitlab-token", "deploy token for the registry pull: {S}", "gldt" + "-8fqsT7XNsaSrvIob0vHN"
    ),
    _secret(
        "gitlab-token",
        "runner auth token in config.toml: token = {S}",
        "glrt" + "-9qUGGFfk84sRlAlsoI7Q",
    ),
    _secret(
        "gitlab-token", "legacy runner registration token {S}", "GR1348941" + "Ft7l8u1nTou9bezIi3NW"
    ),
    # --- Slack
    _secret(
        "slack-token",
        "SLACK_BOT_TOKEN is {S} (workspace acme-eng)",
        "xoxb" + "-2841936501-6193822047015-5zvW54uwsLT4qJPNS1qSPCcx",
    ),
    _secret(
        "slack-token",
        "user token for the export script: {S}",
        "xoxp" + "-2841936501-2912007654-6201934877521-bd5439499c9dd4676703af4795995be7",
    ),
    _secret(
        "slack-token",
        "socket mode needs the app token {S}",
        "xapp" + "-1-A06BQ3D8X2K-6184720393817-t7KWWdRZlJNNTWK6acK5WrjVa847d8c2976185261fee",
    ),
    _secret(
        "slack-webhook",
        "Alerts post to https://hooks.slack.com/services/{S}",
        "TDBEOR75A0/BHVB0XQEE8/dcYYr31EgYdfw70uqa9zuEec",
    ),
    _secret(
        "slack-webhook",
        "deploy notifications: SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{S}",
        "TV6VEWHPCB/B88UTHIVUQ/PVLsc9qqyCV3uuEJsZDUd6zN",
    ),
    _secret(
        "slack-webhook",
        "the #incidents hook is hooks.slack.com/services/{S}",
        "TGB1X3OAIS/BHVZMNAHH7/i5g9s607b8zmEzz6YGiedm0p",
    ),
    # --- Stripe
    _secret(
        "stripe-key",
        "Prod Stripe secret key: {S}",
        "sk_live_"
        + "BG9etlOcyTG63aBsySIYQmZRS72eECOzpX1fpdzJPc1GKNS"
        + "wBFZrGIdyOtfxoT37CX3fAg65SxytbH4nlfhI1NVuYxDaf1",
    ),
    _secret(
        "stripe-key",
        "restricted key for the reporting job {S}",
        "rk_live_" + "COvpbv8ptOZBbb4sHJOtyjBV",
    ),
    _secret(
        "stripe-key",
        "STRIPE_SECRET_KEY={S} in the staging env",
        "sk_test_" + "HvQP8YIo53d73kE3BkX5MCCm",
    ),
    _secret(
        "stripe-key",
        "webhook signing secret from the dashboard: {S}",
        "whsec" + "_LK0GFYq7sOjughRJ7TUYmkWhn2cZ2ABm",
    ),
    # --- npm, PyPI
    _secret(
        "npm-token",
        "//registry.npmjs.org/:_authToken={S} in the publish runner's .npmrc",
        "npm" + "_A8Z28LXDh9svlzdphMV5yIX5sLHBnphPqKyF",
    ),
    _secret(
        "npm-token",
        "NPM_TOKEN={S} for the release workflow",
        "npm" + "_e976ehAt6PGMAgV8zVSs7qVxZHb38GgC2Uog",
    ),
    _secret(
        "npm-token",
        "npm token create --read-only printed {S}",
        "npm" + "_eYQIRDMu3OJcU8H5Hf3TYNBuprUXEgPkbiZr",
    ),
    _secret(
        "pypi-token",
        "[pypi]\nusername = __token__\npassword = {S}",
        PYPI_TOKEN,
    ),
    _secret(
        "pypi-token",
        "TWINE_PASSWORD={S} (TestPyPI, project scoped)",
        "pypi-AgENdGVzdC5weXBpLm9yZw"
        + "IkMzRhNzA2ZTEtOTg0My00Kxy8ooupRc_Q9FQ8eUG0a4UuwjbH3CqyWeIiWU0RSAA37aBF0Oii683SoXe_f2nUN",
    ),
    # --- OpenAI, Anthropic
    _secret(
        "anthropic-api-key",
        "ANTHROPIC_API_KEY={S} for the eval harness",
        "sk-ant-api03-"
        + "LAbkhOV5603DtjwTUKKRNsNeFTWn7ZHEH1IEeQ74-BvvT49"
        + "bLvhCKYKV_vZCyeU4GEA0i_Olm1sriIh5u4wksYDogBLjAA",
    ),
    _secret(
        "anthropic-api-key",
        "admin key for usage reports: {S}",
        "sk-ant-admin01-"
        + "teMS4eOMh5x4qM48XfwBMv2KIT0A8OvhpMddJEF119Jv4"
        + "jCB3t9_NDUhH5JEqKj8BWTDLerFS_1iQU_zwCJtPaEaOAA",
    ),
    _secret(
        "openai-api-key",
        "Old OpenAI key (still works): {S}",
        "sk-" + "9dw5syBFKMNMp4ZaKvu8T3BlbkFJNV7u4LSmNo4WMx39VlPld0YE",
    ),
    _secret(
        "openai-api-key",
        "OPENAI_API_KEY={S}",
        "sk-proj-"
        + "0WJaOJv1-hRsluy0OkhyLCzFPdvwCwW6QYw3iAsZjv-xM"
        + "g_I6AlY24GFMeGt9mKjcXL0ZzoOJuqyG7i8gyTgsrgVOm",
    ),
    _secret(
        "openai-api-key",
        "service account key for the batch pipeline: {S}",
        "sk-svcacct-"
        + "itScDiwGj2bk8py4Vzx-l6suJWJT65GMzxF87lulDMjvNtzAcbRhK12LoxFiLHQoII1bF3Bjpnoe9AU",
    ),
    # --- JWT
    _secret("jwt", "Service token for billing (long-lived!): {S}", JWT_HS256),
    _secret("jwt", "copied from the browser, the Auth0 access token is {S}", _JWT_RS256),
    _secret("jwt", "reproduce with cookie session={S}; path=/", _JWT_SESSION),
    # --- passwords in URLs and DSNs
    _secret(
        "password-in-url",
        "DATABASE_URL=postgres://app:{S}@db.prod.internal:5432/app",
        "Tr0ub4dor&3x",
    ),
    _secret(
        "password-in-url",
        "mysql://report:{S}@10.0.3.17:3306/analytics for the BI tool",
        "NA5QlI0ustP1",
    ),
    _secret("password-in-url", "CELERY_BROKER_URL=redis://:{S}@cache-1:6379/0", "a29PwflW6ZgGfTe4"),
    _secret(
        "password-in-url",
        "mongodb+srv://etl:{S}@cluster0.x7k2p.mongodb.net/?retryWrites=true",
        "xawmRAg6UXGhKI",
    ),
    _secret(
        "password-in-url", "amqp://orders:{S}@rabbit.internal:5672/orders vhost", "S3cure-Pa55"
    ),
    _secret(
        "password-in-url",
        "pip index: https://deploy%40acme.dev:{S}@pypi.acme.dev/simple",
        "hQFQn%26xW84u",
    ),
    # --- password assignments
    _secret("password-assignment", "Staging .env has DB_PASSWORD={S}", "Summer2024!"),
    _secret(
        "password-assignment",
        "docker-compose:\n  environment:\n    POSTGRES_PASSWORD: {S}",
        "pg-Adm1n-77",
    ),
    _secret(
        "password-assignment",
        'config.json has {"user": "svc_etl", "password": "{S}"}',
        "jgrxENi7S11Iwcj^W9iW",
    ),
    _secret(
        "password-assignment",
        "spring.datasource.password={S} in application-prod.properties",
        "fUgM#KnSh9",
    ),
    _secret(
        "password-assignment",
        "Server=tcp:acme.database.windows.net,1433;Database=crm;User Id=crm_app;Password={S};",
        "&djrIAJJM2",
    ),
    _secret(
        "password-assignment",
        "libpq: host=10.0.0.5 port=5432 dbname=ledger user=ledger password={S} sslmode=require",
        "L3dger-2024",
    ),
    _secret("password-assignment", "PGPASSWORD={S} psql -h replica -U readonly", "r3ad0nly!"),
    _secret(
        "password-assignment",
        "settings.xml: <password>{S}</password> for the Nexus deploy",
        "0H@!-6m4eT-Qq_z7K",
    ),
    _secret("password-assignment", 'bot.toml:\n[smtp]\npassword = "{S}"', "correct-horse-42"),
    _secret("password-assignment", "docker run -e MYSQL_ROOT_PASSWORD={S} -d mysql:8", "MyR00tPw"),
    _secret("password-assignment", "keycloak realm export: adminPassword: '{S}'", "Kc-admin#2023"),
    # --- secrets assigned to secret-looking names
    _secret(
        "secret-assignment",
        'Auth0 app: {"client_id": "kq3Jd0", "client_secret": "{S}"}',
        "Ui9KGLzyTf6QfR0UB6dvPUSbDmir0eg6kdBchZ98x0iw9016",
    ),
    _secret(
        "secret-assignment",
        "sendgrid:\n  api_key: {S}",
        "SG.6L91T8IWlwi0P62jtWWx.02ILHix4NEOLmpiq2lJMkV3FYJcc",
    ),
    _secret(
        "secret-assignment",
        "Django prod SECRET_KEY = '{S}'",
        "m#9x!w2q@l8v^k3z$e7r&t1y*u5i(o0p)a6s-d4f",
    ),
    _secret(
        "secret-assignment",
        "curl -H 'X-API-Key: {S}' https://api.vendor.io/v2/orders",
        "blI3pcTAuzgil8D4LjtGp0PlyOHywGi9",
    ),
    _secret(
        "secret-assignment",
        "old .npmrc line: //npm.acme.dev/:_authToken={S}",
        "8f20949e-1c5d-4148-b272-da0931d75b35",
    ),
    _secret(
        "secret-assignment",
        '~/.docker/config.json: {"auths": {"registry.acme.dev": {"auth": "{S}"}}}',
        basic("ci-bot", "JodiKoROhFaZC6JADMV7uTEf"),
    ),
    _secret(
        "secret-assignment",
        "aws_session_token = {S}",
        "FwoGZXIvYXdzEBYaDJYTJ/5TcwPxswDRmjPs3dV6zRnZBU"
        + "ZCRMQOW9pKqkwp1xrPU+sgV3m0Agm+hRo+6iUPKFiEY2J2",
    ),
    _secret(
        "secret-assignment",
        "GitHub webhook: webhook_secret: {S}",
        "pIZRBU5QZIdF7dqdJsnfAdr6gmNxYeX6",
    ),
    _secret(
        "mailgun-api-key",
        "MAILGUN_KEY={S} for transactional mail",
        "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
    ),
    _secret(
        "secret-assignment",
        'const accessToken = "{S}"; // TODO move to env',
        "a847d8c2976185261fee0cfb42e378cfec7081d4",
    ),
    _secret("secret-assignment", "HEROKU_API_KEY={S}", "fa92ab34-5d9e-4962-9ae7-339480869d14"),
    _secret("secret-assignment", "Datadog: DD_API_KEY: {S}", "8f0816c5d34136ee12f13ae1a17f03c2"),
    # --- command-line flags
    _secret("cli-password-flag", "Backups: pg_dumpall --host db --password {S}", "ZYp8D7rZRq3Q"),
    _secret(
        "cli-password-flag",
        'vault login -method=userpass username=ops --password="{S}"',
        "RTu0om6mzm!qB",
    ),
    _secret("cli-password-flag", "mysql -h db.internal -u root -p{S} orders", "J1qazxsAv4HV"),
    _secret(
        "cli-password-flag",
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -passout pass:{S}",
        "p12-Export-99",
    ),
    _secret(
        "cli-password-flag", "curl -u admin:{S} https://jenkins.acme.dev/api/json", "Jnk-2k9vQpL"
    ),
    _secret(
        "sonarqube-token",
        "sonar-scanner --token {S}",
        "squ_" + "3f44a16dbcb493ea1732a31aee786d1c3785b382",
    ),
    _secret(
        "cli-password-flag",
        "datadog-ci --api-key={S} sourcemaps upload",
        "plR+68hxOY6jsqsR8DmDOhSXqBdm",
    ),
    # --- Authorization headers
    _secret(
        "authorization-header",
        "curl -H 'Authorization: Bearer {S}' https://api.acme.dev/me",
        "xDkl4XyXl5M-FJeEvUiWTMTEAi_NtAp1t6lRzBHY",
    ),
    _secret(
        "authorization-header",
        "the Jira API works with Authorization: Basic {S}",
        basic("ops@acme.dev", "ATATT3xFfGF0Mpd0XSbyOfJhk"),
    ),
    _secret(
        "authorization-header",
        "requests.get(url, headers={'Authorization': 'bearer {S}'})",
        "XWvZR3DnN_nJNEhY1Hd3AKhdX7HK-mhPxqDBUBr7Olm",
    ),
]

# An SSH public key and a certificate: base64 bodies that are meant to be shared.
_PUBLIC_KEY = "\n".join(
    (
        "-----" + "BEGIN PUBLIC KEY-----",
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + _PEM_LINES[0],
        _PEM_LINES[1],
        "-----" + "END PUBLIC KEY-----",
    )
)
_CERTIFICATE = "\n".join(
    (
        "-----" + "BEGIN CERTIFICATE-----",
        "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ",
        _PEM_LINES[3],
        "-----" + "END CERTIFICATE-----",
    )
)

HARMLESS: list[str] = [
    # placeholders and documentation values
    "Set GITHUB_TOKEN=<YOUR_TOKEN> before running scripts/release.sh",
    "export OPENAI_API_KEY=${OPENAI_API_KEY} is all the Makefile does",
    'curl -H "Authorization: Bearer $TOKEN" https://api.internal/v1/health',
    "api_key: xxxxxxxxxxxxxxxxxxxxxxxx in the sample config",
    "password: ******** (masked in the CI logs)",
    "DB_PASSWORD=changeme in docker-compose.override.yml for local dev",
    "stripe_api_key: your-api-key-here",
    "The AWS docs use AKIAIOSFODNN7EXAMPLE as the access key id",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY is the docs example",
    "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx in the README screenshots",
    "Slack docs webhook: https://hooks.slack.com/serv"
    + "ices/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN} goes in .npmrc",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} in the workflow env block",
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app is the template",
    "The quickstart uses postgres://user:password@localhost:5432/mydb",
    "OPENAI_API_KEY=sk-... must be set for the eval job",
    "client_secret: <client-secret from the Google console>",
    "password: '{{ vault_db_password }}' in the Ansible role",
    "AccountKey=<storage-account-key> in the connection string template",
    "the SAS URL ends with &sig=<signature>",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token in .env.example",
    "Stripe fixtures use sk_test_XXXXXXXXXXXXXXXXXXXXXXXX",
    "password: !vault | in group_vars/prod.yml (ansible-vault encrypted)",
    "curl -u $API_USER:$API_TOKEN https://api.vendor.io/v2/ping",
    'vault login --password "$(pass show vault/ops)" works on the bastion',
    "Authorization: Basic " + basic("username", "password") + " is the docs example",
    "http://admin:admin@localhost:15672 is the RabbitMQ management UI on a dev box",
    "ANTHROPIC_API_KEY=sk-ant-api03-... goes in the CI secrets, not here",
    "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY----- is the shape of the file",
    # code that reads a secret without spelling it
    "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    'password=os.getenv("DB_PASSWORD")',
    "conn = psycopg.connect(host=host, user=user, password=password)",
    "password: process.env.DB_PASSWORD in knexfile.js",
    "token = tokenizer.encode(text) then truncate to 512",
    'access_token = response.json()["access_token"]',
    "export default { apiKey: import.meta.env.VITE_FIREBASE_API_KEY }",
    "nonce = secrets.token_hex(16) per request",
    "csrf_token: {{ csrf_token() }} in the form template",
    "docker login ghcr.io -u ci-bot --password-stdin < token.txt",
    "mysql -u root -p prompts for the password interactively",
    "mysqldump -u backup -p --single-transaction app > app.sql",
    "kubectl create secret generic db-creds --from-literal=password=$DB_PASS",
    "openssl pkcs12 -export -in cert.pem -passout env:P12_PASSWORD",
    "Use --token-file instead of --token on shared machines",
    "Set the password with --password, or better, use --password-file",
    # commit SHAs, hashes, ids, digests
    "Fixed in commit a83ddb6b6a7f9d15b01a180d6356b45afdd82d34, revert if flaky",
    "Regression introduced by 3f9c2ab, found with git bisect",
    "Pin actions/checkout@b4ffde65f46336ab88eb53be808477a3936bae11 in every workflow",
    "sha1: da39a3ee5e6b4b0d3255bfef95601890afd80709 is the empty-file hash",
    "The v2.14.0 tag points at 9e1c4d7a0f3b on main",
    "Tenant 72f988bf-86f1-41af-91ab-2d7cd011db47 is the Microsoft tenant",
    "request_id=7c9e6679-7425-40de-944b-e07fc1f90ae7 shows the retry storm",
    "Grafana dashboard uid: 8d9bfe88-dd1c-468d-a284-81a803b92e20",
    "docker pull ghcr.io/acme/api@sha256:c0dbb3a2f64600"
    + "b0e2c2e379af9a88d8b36d44fa2a0fc5bdd7bfb3cafd58de59",
    "image digest: sha256:3f44a16dbcb493ea1732a31aee786d1c3785b382e238ccdc50c7e848daf15f1a",
    '"integrity": "sha512-' + _PEM_LINES[4] + 'ABCDEFGHIJKLMNOPQRSTUVWX==" in package-lock.json',
    '<script integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC">',
    "golang.org/x/crypto v0.17.0 h1:r8bRNjWL3GshPW3gkd+RpvzWrZAh2Ldbk+3EO9NTQ2k= in go.sum",
    'ETag: W/"6bfb011c7a54de51b20fdb767c7a413c" means the cache is warm',
    "secret_arn: arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "client_id: 1234567890-abc123def456ghi789jkl.apps.googleusercontent.com",
    # base64 of ordinary things
    "The header value SGVsbG8sIHdvcmxkIQ== is just base64 for Hello, world!",
    'The fixture payload eyJ1c2VyIjoiYWxpY2UifQ== decodes to {"user":"alice"}',
    "Thumbnails are inlined as data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"
    + "AAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    # versions, paths, URLs without credentials
    "Upgrade to numpy 1.26.4 and Python 3.11.7; pydantic 2.5.3 breaks the schema",
    "api_version: 2023-10-16 for the Stripe SDK",
    "Keys live in ~/.ssh/id_ed25519 and /etc/ssl/private/server.key",
    "private_key_path: /etc/memmesh/keys/identity.key",
    "GOOGLE_APPLICATION_CREDENTIALS=/var/run/secrets/gcp/sa-key.json in the pod spec",
    "token_file: /var/run/secrets/kubernetes.io/serviceaccount/token",
    "pwd: /home/dev/src/memmesh when the tests fail",
    "Docs: https://docs.github.com/en/authentication/keeping-your-account-and-data-secure",
    "token_url: https://oauth2.googleapis.com/token",
    "postgres://user@host/db works because pg_hba trusts the VPC",
    "postgres://reporting@analytics-db.internal:5432/warehouse uses IAM auth",
    "git clone git@github.com:acme/platform.git",
    "http://localhost:5173/@vite/client 404s after the upgrade",
    "https://storage.googleapis.com/acme-exports/q3.csv?generation=1699999999&alt=media",
    "The Azure Storage emulator is enabled with UseDevelopmentStorage=true",
    # public keys and certificates
    _PUBLIC_KEY,
    _CERTIFICATE,
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _PEM_LINES[6][:43] + " deploy@ci is the public key",
    # prose about security
    "Rotate the API token every 90 days",
    "The password must be 12+ characters",
    "Set PASSWORD in the environment, never in the repo",
    "We store the secret in Vault under secret/data/payments",
    "Token expiry is 3600 seconds; refresh tokens last 30 days",
    "The password reset email is sent by the notifications worker",
    "GitHub classic tokens start with ghp_ and fine-grained ones with github_pat_",
    "Slack bot tokens look like xoxb-… and user tokens like xoxp-…",
    "Google API keys start with AIza; never commit them",
    'JWTs start with eyJ because that is base64 for {"',
    "Private keys begin with -----BEGIN OPENSSH PRIVATE KEY-----; check before uploading",
    "Use bearer tokens, not Basic auth, for the internal API",
    "The Authorization header carries a Bearer token from the OIDC provider",
    "Passwordless login via magic links is enabled for staff",
    "max_tokens: 4096 and temperature: 0.2 for the summarizer",
    "secretName: payments-tls in the ingress",
    "tokenizer: cl100k_base for token counting",
    "auth: oauth2 in the gateway config",
    "password_min_length: 12 and PASSWORD_HASHERS starts with Argon2",
    "The session token is stored in an HttpOnly, SameSite=Strict cookie",
    "The token bucket allows 100 requests per second per client",
    "bearer_format: JWT in the OpenAPI security scheme",
    "password: required in the JSON schema for the signup form",
    "Stripe publishable keys start with pk_live_ and may ship in the frontend",
    "The Stripe test card is 4242 4242 4242 4242",
    "api_key_header: X-API-Key",
    "We switched from sk-learn style estimators to our own pipeline",
    "The password policy forbids reusing the last 5 passwords",
    "A leaked AWS key is revoked within minutes by the GitHub secret scanning partner program",
    "Password: (see 1Password, entry 'Prod DB')",
    "PASSWORD_RESET_TIMEOUT=3600 and DB_PASSWORD_FILE=/run/secrets/db_password",
    "passphrase: correct horse battery staple is the xkcd joke, not ours",
    # found in real code and API docs
    "class Login(BaseModel):\n    username: str\n    password: SecretStr",
    "def sign(private_key: ed25519.Ed25519PrivateKey, data: bytes) -> bytes:",
    "is_password: FilterOrBool = False in prompt_toolkit",
    'print(f"password={password!r}") leaked nothing because the value was masked',
    'user_pass = (self.username + ":" + self.password)',
    'FORCE_CHANGE_PASSWORD = "FORCE_CHANGE_PASSWORD" is a Cognito user status',
    '"MasterUserPassword": "mynewpassword" in the RDS CLI docs',
    "token = _RunVarToken(self, old_value) in trio",
    'publicKeyToken="1fc8b3b9a1e18e3b" in the assembly manifest',
    '"NextToken": "eyJOZXh0VG9rZW4iOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAxfQ=="',
    '"ClientToken": "5236cffc-ee13-4a32-bb5b-388d9da09d96" makes the call idempotent',
    "aws dynamodb list-tables --starting-token abCDeFGhiJKlmnOPqrSTuvwxYZ1aBCdEFghijK7LM51nOp",
    "aws ec2 run-instances --client-token 550e8400-e29b-41d4-a716-446655440000",
    '"VerificationToken": "QTKknzFg2J4ygwa+XvHAxUl1h'
    + 'yHoY0gVfZdfjIedHZ0=" goes in the DNS TXT record',
    '"tokenExpirationTime": "2022-03-16T03:45:09+00:00"',
    "The DB secret is arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestSecret-a1b2c3",
    '"encryptionKey": "arn:aws:kms:us-west-2:123456789012:alias/aws/s3"',
    '"LockToken": "1eb5ec48-0000-0000-0000-ee9b906c541e" for the WAF update',
]
