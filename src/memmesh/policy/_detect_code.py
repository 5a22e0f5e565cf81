"""Detectors for developer tools: code hosting, package registries, CI, work trackers,
observability and secret managers."""

from memmesh.policy._detector import UUID, Detector, detector, token, token_value
from memmesh.policy._secret_values import token_body

__all__ = ["CODE_DETECTORS"]


CODE_DETECTORS: tuple[Detector, ...] = (
    token(
        "github-token",
        r"gh[pousr]_",
        r"[A-Za-z0-9]{36,251}+",
        after=r"(?![A-Za-z0-9_])",
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    token("github-fine-grained-token", "github_pat_", r"[A-Za-z0-9_]{50,255}+", after=""),
    detector(
        "gitlab-token",
        r"(?:gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-"
        r"(?P<v>[A-Za-z0-9_.-]{20,255}+)|GR1348941(?P<v_r>[A-Za-z0-9_-]{20,255}+))",
        token_value,
        hints=("gl", "GR1348941"),
        run_start=True,
    ),
    token("bitbucket-app-password", "ATBB", r"[A-Za-z0-9_=.-]{32}[A-F0-9]{8}"),
    token(
        "atlassian-api-token",
        r"AT(?:ATT|CTT)3",
        r"[A-Za-z0-9_=+/-]{100,300}+",
        hints=("ATATT3", "ATCTT3"),
    ),
    token("npm-token", "npm_", r"[A-Za-z0-9]{36}", after=r"(?![A-Za-z0-9])"),
    token("pypi-token", "pypi-AgE", r"[A-Za-z0-9_-]{50,1024}+", after=""),
    token("docker-hub-token", r"dckr_(?:pat|oat)_", r"[A-Za-z0-9_-]{27,64}+"),
    token("rubygems-token", "rubygems_", r"[a-f0-9]{48}"),
    token("nuget-api-key", "oy2", r"[a-z0-9]{43}"),
    token("clojars-token", "CLOJARS_", r"[a-z0-9]{60}"),
    token("artifactory-token", r"AKCp|cmVmd", r"[A-Za-z0-9]{59,69}+"),
    token("sonarqube-token", r"sq[upa]_", r"[a-f0-9]{40}"),
    token("postman-api-key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    token("circleci-token", r"CCIP(?:AT|RJ)_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    token("buildkite-token", "bkua_", r"[a-f0-9]{40}"),
    token("sourcegraph-token", r"sgp_(?:[a-f0-9]{16}_|local_)?", r"[a-f0-9]{40}"),
    token("octopus-deploy-key", "API-", r"[A-Z0-9]{26}"),
    token("prefect-api-key", "pnu_", r"[A-Za-z0-9]{36}"),
    token("readme-api-key", "rdme_", r"[a-z0-9]{70}"),
    token("infracost-api-key", "ico-", r"[A-Za-z0-9]{32}"),
    token(
        "harness-token",
        r"(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.",
        r"[A-Za-z0-9]{20}",
        hints=("pat.", "sat."),
    ),
    token("linear-api-key", r"lin_(?:api|oauth)_", r"[A-Za-z0-9]{40}"),
    token("notion-token", r"ntn_|secret_(?=[A-Za-z0-9]{43}(?![A-Za-z0-9]))", r"[A-Za-z0-9]{43,46}"),
    token("airtable-token", r"pat[A-Za-z0-9]{14}\.", r"[a-f0-9]{64}"),
    token("figma-token", "figd_", r"[A-Za-z0-9_-]{40,64}+"),
    token("hubspot-token", r"pat-(?:na|eu)[12]-", UUID),
    detector(
        "asana-token",
        r"(?<![A-Za-z0-9/])[12]/[0-9]{10,20}+(?:/[0-9]{10,20}+)?:(?P<v>[0-9a-f]{32})"
        r"(?![A-Za-z0-9])",
        token_value,
        hints=("1/", "2/"),
    ),
    token("contentful-token", "CFPAT-", r"[A-Za-z0-9_-]{43}"),
    token("typeform-token", "tfp_", r"[A-Za-z0-9_.=-]{40,64}+"),
    token("frameio-token", "fio-u-", r"[A-Za-z0-9_=-]{64}"),
    token("launchdarkly-key", "sdk-", UUID),
    token(
        "grafana-token",
        r"glc_|glsa_|eyJrIjoi",
        r"[A-Za-z0-9+/_]{32,400}+={0,2}",
        after=r"(?![A-Za-z0-9+/=])",
    ),
    token("sentry-token", r"sntryu_|sntrys_eyJ", r"[A-Za-z0-9+/=_]{60,600}+", after=""),
    token("new-relic-key", r"NR(?:AK|II|JS|AA)-", r"[A-Za-z0-9_-]{19,40}+"),
    token("dynatrace-token", r"dt0c01\.[A-Z0-9]{24}\.", r"[A-Z0-9]{64}"),
    token("langsmith-key", r"lsv2_(?:pt|sk)_", r"[a-f0-9]{32}_[a-f0-9]{10}"),
    detector(
        "onepassword-secret",
        r"(?<![A-Z0-9-])A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
        r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}(?![A-Z0-9])"
        r"|ops_eyJ(?P<v>[A-Za-z0-9+/]{250,4096}+={0,3})",
        lambda m: m["v"] is None or token_body(m["v"]),
        hints=("A3-", "ops_eyJ"),
        run_start=True,
    ),
)
