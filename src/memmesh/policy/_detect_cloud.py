"""Detectors for cloud and hosting credentials: AWS, Google, Azure, and the platforms."""

import re

from memmesh.policy._detector import UUID, Detector, detector, form, token, token_value, value
from memmesh.policy._secret_values import is_placeholder

__all__ = ["CLOUD_DETECTORS"]

# A secret access key: 40 characters of base64, a run of its own.
_AWS_SECRET = r"(?<![A-Za-z0-9/+=])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"


def _aws_secret(match: re.Match[str]) -> bool:
    """Random base64 with both cases: a commit SHA next to a key id is not its secret."""
    found = value(match)
    if match.groupdict().get("v") is None and (found.lower() == found or found.upper() == found):
        return False
    return token_value(match)


CLOUD_DETECTORS: tuple[Detector, ...] = (
    detector(
        "aws-access-key-id",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)(?P<v>[0-9A-Z]{16}+)(?![A-Za-z0-9])",
        lambda m: not is_placeholder(m.group()),
        hints=("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    detector(
        "aws-secret-access-key",
        (
            form(
                r"(?i:(?<![A-Za-z0-9])(?:aws_?)?secret_?(?:access_?)?key)[\"']?[ \t]{0,8}+"
                r"(?:=|:|=>)[ \t]{0,8}+[\"']?(?P<v>[A-Za-z0-9/+=]{40}+)(?![A-Za-z0-9/+=])",
                "secret",
                casefold=True,
            ),
            # Named in words: "the aws secret access key is …", "secret key …".
            form(
                r"(?i:(?<![A-Za-z0-9])(?:aws[ _-]?)?secret[ _-]?(?:access[ _-]?)?key)"
                r"[^\n\[\]{}]{0,40}?" + _AWS_SECRET.replace("(?P<v>", "(?P<v_w>"),
                "secret",
                casefold=True,
            ),
            # Next to its key id: "AKIA… with secret …", "AKIA…:…", "AKIA… / …".
            form(
                r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}+(?![A-Za-z0-9])[^\n\[\]{}]{0,60}?"
                + _AWS_SECRET.replace("(?P<v>", "(?P<v_p>"),
                "AKIA",
                "ASIA",
            ),
        ),
        _aws_secret,
        value_only=True,
    ),
    # STS session tokens begin with the same few bytes, so with the same base64.
    token(
        "aws-session-token",
        r"IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz",
        r"[A-Za-z0-9+/=]{100,4096}+",
        after=r"(?![A-Za-z0-9+/=])",
    ),
    token("aws-bedrock-api-key", "ABSK", r"[A-Za-z0-9+/]{100,300}+={0,2}", after=""),
    token("amazon-mws-token", r"amzn\.mws\.", UUID),
    token("aws-appsync-api-key", "da2-", r"[a-z0-9]{26}"),
    detector(
        "google-api-key",
        r"AIza(?P<v>[0-9A-Za-z_-]{35}+)(?![0-9A-Za-z_-])",
        token_value,
        hints=("AIza",),
        run_start=True,
    ),
    detector(
        "google-oauth-secret",
        r"(?:GOCSPX-(?P<v>[A-Za-z0-9_-]{24,64}+)"
        r"|ya29\.(?P<v_t>[A-Za-z0-9_-]{30,4096}+)|1//0(?P<v_r>[A-Za-z0-9_-]{40,1024}+))",
        token_value,
        hints=("GOCSPX-", "ya29.", "1//0"),
        run_start=True,
    ),
    token(
        "firebase-cloud-messaging-key", r"AAAA[A-Za-z0-9_-]{7}:APA91b", r"[A-Za-z0-9_-]{100,200}+"
    ),
    detector(
        "azure-connection-string",
        r"(?i:AccountKey|SharedAccessKey)[ \t]{0,8}+=[ \t]{0,8}+"
        r"(?P<v>[A-Za-z0-9+/]{20,512}+={0,2})",
        token_value,
        value_only=True,
        hints=("accountkey", "sharedaccesskey"),
        casefold=True,
    ),
    detector(
        "azure-sas-signature",
        r"[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{30,512}+)",
        token_value,
        value_only=True,
        hints=("sig=",),
    ),
    # Entra ID (Azure AD) client secrets carry ``Q~`` after three characters and a digit.
    detector(
        "azure-ad-client-secret",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~(?P<v>[A-Za-z0-9_~.-]{31,34}+)"
        r"(?![A-Za-z0-9_~.-])",
        token_value,
        hints=("Q~",),
    ),
    token("alibaba-access-key-id", "LTAI", r"[A-Za-z0-9]{20}"),
    token("tencent-secret-id", "AKID", r"[A-Za-z0-9]{32}"),
    token("yandex-cloud-key", r"AQVN", r"[A-Za-z0-9_-]{35,38}+"),
    token("digitalocean-token", r"do[opr]_v1_", r"[a-f0-9]{64}", hints=("_v1_",)),
    token("heroku-api-key", r"HRKU-AA", r"[0-9A-Za-z_-]{58}"),
    token("flyio-token", r"fo1_", r"[A-Za-z0-9_-]{43}"),
    token("flyio-macaroon", r"fm[12][ar]?_", r"[A-Za-z0-9+/]{100,4096}+={0,3}", after=""),
    token(
        "terraform-cloud-token",
        r"[A-Za-z0-9]{14}\.atlasv1\.",
        r"[A-Za-z0-9_=-]{60,70}+",
        hints=(".atlasv1.",),
    ),
    token("vault-token", r"hv[sbr]\.", r"[A-Za-z0-9_-]{24,400}+", hints=("hvs.", "hvb.", "hvr.")),
    token("pulumi-token", "pul-", r"[a-f0-9]{40}"),
    token(
        "doppler-token",
        r"dp\.(?:pt|ct|sa|scim|audit)\.|dp\.st\.(?:[a-z0-9_-]{1,32}\.)?",
        r"[A-Za-z0-9]{40,44}",
    ),
    token("databricks-token", "dapi", r"[a-f0-9]{32}(?:-[0-9])?"),
    token("cloudflare-origin-ca-key", r"v1\.0-[a-f0-9]{24}-", r"[a-f0-9]{146}"),
    token("netlify-token", "nfp_", r"[A-Za-z0-9]{36}"),
    token("render-api-key", "rnd_", r"[A-Za-z0-9]{32}"),
    token("supabase-token", r"sbp_|sb_secret_", r"[A-Za-z0-9_-]{31,64}+"),
    token("planetscale-token", r"pscale_(?:tkn|oauth|pw)_", r"[A-Za-z0-9_.=-]{32,64}+"),
    token("scalingo-token", r"tk-us-", r"[A-Za-z0-9_-]{48}"),
    token("openshift-token", r"sha256~", r"[A-Za-z0-9_-]{43}"),
)
