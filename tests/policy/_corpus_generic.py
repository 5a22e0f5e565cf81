"""Corpus: secrets found by where they stand - passwords in URLs, assignments, ``.env`` lines,
command lines, headers and sentences. The passwords are made up, in the shapes people use."""

from tests.policy._corpus import Secret, basic


def _s(kind: str, detector: str, template: str, value: str) -> Secret:
    assert "{S}" in template, template
    return Secret(kind, detector, template.replace("{S}", value), value)


def _many(kind: str, detector: str, *pairs: tuple[str, str]) -> list[Secret]:
    return [_s(kind, detector, template, value) for template, value in pairs]


URLS: list[Secret] = [
    *_many(
        "database-url-password",
        "password-in-url",
        ("DATABASE_URL=postgresql://billing:{S}@pg-1.internal:5432/billing", "bL7-qz9Wm2"),
        ("jdbc:postgresql://report:{S}@10.2.0.8/warehouse in the BI tool", "Rp0rt!ng24"),
        ("mysql+pymysql://shop:{S}@db.shop.internal/shop?charset=utf8mb4", "s4op_Pw!"),
        ("psql 'postgres://admin:{S}@localhost:6543/app' for the pgbouncer port", "dev-Admin-77"),
    ),
    *_many(
        "broker-url-password",
        "password-in-url",
        ("REDIS_URL=rediss://default:{S}@redis-12345.cloud.redislabs.com:12345", "Zk81LqaP0vXw"),
        ("celery broker amqps://worker:{S}@mq.acme.dev:5671/jobs", "Q9mq-Work3r"),
        ("kafka sasl: SASL_SSL://svc-orders:{S}@broker-1:9094", "k4fk@-0rd"),
    ),
    *_many(
        "git-credential-url",
        "password-in-url",
        ("~/.git-credentials: https://ada:{S}@git.acme.dev", "Gi7-Cr3dz!"),
        ("pip install git+https://deploy:{S}@git.acme.dev/libs/core.git", "d3pl0y-K3y-9"),
    ),
    *_many(
        "mail-url-password",
        "password-in-url",
        ("EMAIL_URL=smtp+tls://alerts%40acme.dev:{S}@smtp.acme.dev:587", "M4il-Al3rts"),
        ("ftp://upload:{S}@ftp.partner.example.org/incoming for the nightly feed", "up!0ad2023"),
    ),
]

ASSIGNMENTS: list[Secret] = [
    *_many(
        "dotenv-password",
        "password-assignment",
        ("DB_PASSWORD={S}", "Winter2025!"),
        ("REDIS_PASSWORD={S}\nREDIS_HOST=cache-1", "r3d1s-Pr0d"),
        ("POSTGRES_PASSWORD='{S}'", "pg#Secret99"),
        ("SMTP_PASS={S}", "smtp-2024-Q3"),
    ),
    _s("dotenv-password", "password-assignment", "staging db password = {S}", "stg-Db-01!"),
    *_many(
        "yaml-password",
        "password-assignment",
        ("spring:\n  datasource:\n    password: {S}", "Spr1ng-DB-pw"),
        ("grafana.ini: admin_password = {S}", "Gr4f4na!adm"),
        ("helm install pg bitnami/postgresql --set auth.postgresPassword={S}", "h3lm-PG-2024"),
        ("elasticsearch.yml: xpack.security.password: {S}", "El4stic-99x"),
    ),
    *_many(
        "json-password",
        "password-assignment",
        ('{"host": "db", "user": "etl", "password": "{S}"}', "etl_Load#7"),
        (
            'appsettings.json: "ConnectionStrings": {"Db": "Server=db;User Id=sa;Password={S};"}',
            "Sa-Adm1n!",
        ),
    ),
    *_many(
        "dotnet-config-password",
        "password-assignment",
        ('<add key="ClearTextPassword" value="{S}" /> in NuGet.Config', "NuG3t-Feed!"),
        ('web.config: <add key="SmtpPassword" value="{S}"/>', "Sm7p-Relay#1"),
    ),
    *_many(
        "xml-password",
        "password-assignment",
        ("maven settings.xml: <password>{S}</password>", "Mvn-Deploy-42"),
        ("tomcat-users.xml has <password>{S}</password> for the manager app", "T0mc@t-mgr"),
    ),
    *_many(
        "dotenv-secret-key",
        "secret-assignment",
        ("SECRET_KEY={S}", "my-app-secret-2024"),
        (".env:\nAPP_SECRET={S}", "k8s-Cluster#9"),
        ("JWT_SECRET={S}\nJWT_TTL=3600", "jwt-signing-77x"),
        ("SESSION_SECRET={S}", "s3ss10n-k3y!"),
        ("export NEXTAUTH_SECRET={S}", "n3xtAuth-Pr0d"),
        ("RAILS_MASTER_KEY={S}", "4f9c0d1e7b2a"),
        ("  ENCRYPTION_KEY={S}", "enc-Key-0192"),
    ),
    *_many(
        "framework-secret-key",
        "secret-assignment",
        ("Django: SECRET_KEY = '{S}'", "django-insecure-k3#9v!qz@1m_8w(2x^"),
        ("secret_key_base: {S}", "a7f39c21e08d4b56c9e1f27a8b3d60c4e9f12a7b5c8d3e6f"),
        ("Laravel APP_KEY={S}", "base64:Xk2Jm9Qw4LpN7rTv1ZcHe8sYb3FgDa6u0WiOl5Kj+Mo="),
        ("Flask: app.config['SECRET_KEY'] = '{S}'", "f1ask-Pr0d-0a9b8c7d6e5f"),
    ),
    *_many(
        "client-secret-assignment",
        "secret-assignment",
        ('Auth0: "client_secret": "{S}"', "Xk2Jm9Qw4LpN7rTv1ZcHe8sYb3FgDa6u0WiOl5Kj"),
        ("okta.client.secret={S}", "qW3eR5tY7uI9oP1aS3dF5gH7jK9lZ2xC"),
        ("KEYCLOAK_CLIENT_SECRET: {S}", "8f2c41a0-3b7d-4e9f-a1c5-6d2e8b9f0a13"),
    ),
    *_many(
        "api-key-assignment",
        "secret-assignment",
        ("DD_API_KEY={S}", "7c3e9a1f5b2d4086e1c7a9f3b5d20e48"),
        ("algolia:\n  admin_api_key: {S}", "e4b2d8f1a9c3b7e5d2f8a1c6b9e3d7f2"),
        ('const stripeKey = { apiKey: "{S}" }', "Zt9Kq2Lm7Wx4Pn8Rv3Hs6Yc1"),
        ("x-api-key: {S}", "Q8wE4rT6yU2iO9pA5sD3fG7hJ1kL"),
        ("OKTA_API_TOKEN={S}", "00Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3"),
        ("COHERE_API_KEY={S}", "Pq3Rs5Tu7Vw9Xy1Za3Bc5De7Fg9Hi1Jk3Lm5No7P"),
    ),
    *_many(
        "private-key-assignment",
        "secret-assignment",
        (
            "[Interface]\nPrivateKey = {S}\nAddress = 10.8.0.2/24",
            "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=",
        ),
        (
            "ETH_PRIVATE_KEY=0x{S}",
            "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        ),
    ),
    *_many(
        "docker-config-auth",
        "secret-assignment",
        ('{"auths": {"ghcr.io": {"auth": "{S}"}}}', basic("ci-bot", "Zx8Cv7Bn6Mm5Ll4Kk3")),
    ),
]

COMMANDS: list[Secret] = [
    *_many(
        "mysql-cli-password",
        "cli-password-flag",
        ("mysql -u root -p'{S}' shop < dump.sql", "Xq9!hunter"),
        ('mysqldump -h db -u backup -p"{S}" --all-databases', "B4ckup#2024"),
        ("mysqladmin -uroot -p{S} status", "r00tPw-91"),
        ("mariadb -h 10.0.0.4 -u app -p'{S}' -e 'SHOW TABLES'", "M4r1a-App"),
    ),
    *_many(
        "long-password-flag",
        "cli-password-flag",
        ("psql --password={S} -h db.internal", "Xq9hunter2"),
        ("rabbitmqadmin --username=ops --password '{S}' list queues", "R4bb1t-Ops"),
        ("wget --user=ci --password={S} https://nexus.acme.dev/repo/app.jar", "N3xus-CI-24"),
        ("gpg --batch --passphrase '{S}' -d backup.tar.gpg", "gpg-Backup-7!"),
        ("restic --repo s3:backups --password {S} snapshots", "r3st1c-Rep0"),
        ("az login -u ops@acme.dev --password {S}", "Az-0ps-2024"),
    ),
    *_many(
        "short-password-flag",
        "cli-password-flag",
        ("sshpass -p '{S}' ssh pi@10.0.0.12", "raspb3rry!"),
        ("docker login registry.acme.dev -u ci -p {S}", "Reg1stry-CI"),
        ("redis-cli -h cache-1 -a {S} INFO", "r3dis-Cache9"),
        ("ldapsearch -x -D 'cn=admin,dc=acme,dc=dev' -w {S} -b dc=acme,dc=dev", "Ld@p-Adm1n"),
        ("mongosh 'mongodb://db:27017' -u root -p {S}", "M0ngo-R00t"),
        ("sqlcmd -S tcp:sql1,1433 -U sa -P '{S}' -Q 'SELECT 1'", "Sql-Srv#2022"),
        ("zip -P {S} -r export.zip export/", "z1p-Exp0rt"),
    ),
    *_many(
        "keystore-password-flag",
        "cli-password-flag",
        ("keytool -importcert -keystore app.jks -storepass {S} -file ca.pem", "Jks-St0re!"),
        ("jarsigner -keystore release.jks -storepass {S} app.apk release", "R3l-S1gn#"),
        ("openssl pkcs12 -export -out bundle.p12 -passout pass:{S}", "P12-Bundle-9"),
        ("ssh-keygen -t ed25519 -N '{S}' -f ~/.ssh/id_ci", "ssh-K3y-Pass"),
        ("openssl enc -aes-256-cbc -k {S} -in db.sql -out db.sql.enc", "Enc-Db-0921"),
    ),
    *_many(
        "user-password-flag",
        "cli-password-flag",
        ("curl -u deploy:{S} -T app.war https://tomcat.acme.dev/manager/text/deploy", "Tc-Dep!oy5"),
        ("http -a admin:{S} POST https://api.acme.dev/admin/reindex", "Ht7p-Adm1n"),
        ("smbclient //nas/share -U backup%{S}", "Smb-Bkp-42"),
    ),
    *_many(
        "token-flag",
        "cli-password-flag",
        ("terraform login && atlantis --gh-token {S}", "Wq8Er7Ty6Ui5Op4As3Df2Gh1Jk"),
        ("vercel deploy --token={S} --prod", "Vx7Ty9Qw2Er4Zt6Lp8Km1Nb3"),
        ("codecov --token {S}", "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4"),
    ),
]

HEADERS: list[Secret] = [
    *_many(
        "bearer-token",
        "authorization-header",
        (
            "curl -H 'Authorization: Bearer {S}' https://api.vendor.io/v1/me",
            "Zq8Wm3Lp9Xr2Kt7Vn4Hs6Bj1",
        ),
        (
            "fetch(url, { headers: { Authorization: `Bearer {S}` } })",
            "9fQ2xL7mW4pR8tK1vB6nZ3cH5jD0",
        ),
    ),
    *_many(
        "basic-auth-header",
        "authorization-header",
        ("Authorization: Basic {S}", basic("svc-ci", "Bas1c-Auth-88")),
        ("the webhook sends Authorization: Basic {S}", basic("hooks", "Wh00k!pass")),
    ),
    *_many(
        "token-auth-header",
        "authorization-header",
        ("Authorization: Token {S}", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"),
        ("Okta: Authorization: SSWS {S}", "00Xy9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed9Cb8A7z"),
    ),
    *_many(
        "netrc-password",
        "netrc-password",
        ("~/.netrc:\nmachine api.heroku.com\n  login ada@acme.dev\n  password {S}", "H3r0ku-N3trc"),
        ("machine nexus.acme.dev login ci password {S}", "Nx-Ci-Pw-2024"),
    ),
]

PROSE: list[Secret] = [
    *_many(
        "password-in-prose",
        "password-in-prose",
        ("the staging password is {S}", "hunter2-Xq9!"),
        ("The root password on db-2 was reset to {S} yesterday", "Db2-R3set!"),
        ("wifi password for the office: {S}", "Acme-Guest-2024"),
        ("admin password is now {S}, change it after the demo", "D3mo-Adm1n"),
        ("Password for the shared jenkins account is `{S}`", "jenk1ns@ci"),
        ("the vpn passphrase is {S}", "Vpn#Tunnel7"),
        ("The new prod DB password → {S}", "Pr0d-Db-2025"),
        ("password for ops@acme.dev is {S}.", "0ps-Acme-77"),
        ("Grafana admin password was changed to {S} (Ana knows)", "Gr@fana24"),
        ("The Wi-Fi passcode is {S}", "Blue-Sky-4417"),
        ('the password is "{S}" for the test tenant', "t3st-Tenant"),
        ("Postgres superuser password set to {S} on the new cluster", "Sup3r-Us3r!"),
        ("the keystore password is {S}", "St0re-Pw-88"),
    ),
    *_many(
        "secret-in-prose",
        "secret-in-prose",
        ("The Datadog API key is {S}", "7c3e9a1f5b2d4086e1c7a9f3b5d20e48"),
        ("our Mixpanel api secret is {S}", "d2f8a1c6b9e3d7f2e4b2d8f1a9c3b7e5"),
        ("Segment write token is {S}", "Qw8Er6Ty4Ui2Op0As9Df7Gh5"),
        ("the license key is {S}", "LK-9F2A-7Q4M-X8C1-B6T3"),
        ("the PagerDuty integration token is {S}", "u+Zx8Cv6Bn4Mm2Lk0Jh9G"),
        ("The session token was {S} when it broke", "Zk9Lm3Qp7Wx2Rt5Vn8Hs1"),
    ),
    *_many(
        "jwt",
        "jwt",
        (
            "session cookie: {S}",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZGEiLCJyb2xlIjoiYWRtaW4ifQ."
            "Qx8m2Lp7Wr4Kt9Vn3Hs6Bj1Zc5Yd0Fa",
        ),
        (
            "supabase service role key {S}",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoic2VydmljZV9yb2xlIiwiaWF0IjoxNzE3fQ."
            "Mz9Kq2Lw7Xr4Pn8Tv3Hs6Yc1Bd5Fg0Ja",
        ),
    ),
]

# The families a newcomer's notes showed missing, written again in other words.
NOTES_AGAIN: list[Secret] = [
    _s(
        "mysql-cli-password",
        "cli-password-flag",
        "mysql -h prod-db -u admin -p'{S}' -e 'show databases'",
        "S3cr3t!Pass",
    ),
    _s(
        "long-password-flag",
        "cli-password-flag",
        "pg_restore --username=app --password='{S}' -d app dump.bin",
        "Pg-R3store!",
    ),
    _s("dotenv-password", "password-assignment", "PGPASSWORD='{S}' pg_dump app", "Pg-Adm1n!"),
    _s("password-in-prose", "password-in-prose", "the prod redis password is {S}", "Rd-9x!Lq2"),
    _s("yaml-password", "password-assignment", "FYI the jenkins admin password: {S}", "Jk!n5-Adm"),
    _s(
        "password-in-prose",
        "password-in-prose",
        "password for the sftp user deploy is '{S}'",
        "Sftp#Dep10y",
    ),
    _s(
        "password-in-prose",
        "password-in-prose",
        "Reminder: router admin password is {S} until IT rotates it",
        "Rtr-4dmin-33",
    ),
    _s("dotenv-secret-key", "secret-assignment", ".env\nSECRET_KEY={S}", "hJ8#kL2$mN5"),
    _s("dotenv-secret-key", "secret-assignment", "export SECRET_KEY={S}", "abc123XYZ!"),
    _s("dotenv-secret-key", "secret-assignment", "SECRET_KEY={S}  # prod", "4e5f6a7b8c9d0e1f"),
    _s("dotenv-secret-key", "secret-assignment", 'WEBHOOK_SECRET="{S}"', "wh-Sig-2024"),
]

GENERIC: list[Secret] = URLS + ASSIGNMENTS + COMMANDS + HEADERS + PROSE + NOTES_AGAIN
