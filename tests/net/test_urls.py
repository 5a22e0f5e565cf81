"""peer_url: the one check every coordinator and peer URL from outside passes."""

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memmesh.net.errors import BadUrl
from memmesh.net.urls import peer_url


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("http://127.0.0.1:8400", "http://127.0.0.1:8400"),
        ("http://127.0.0.1:8400/", "http://127.0.0.1:8400"),
        ("https://team-host.example.com", "https://team-host.example.com"),
        ("HTTP://Team-Host:8400/", "http://team-host:8400"),
        ("http://[::1]:8410", "http://[::1]:8410"),
        ("http://[0:0:0:0:0:0:0:1]:8410/", "http://[::1]:8410"),
        ("http://ada.invalid:8410", "http://ada.invalid:8410"),
        ("http://localhost:1", "http://localhost:1"),
        ("https://h:65535", "https://h:65535"),
    ],
)
def test_sound_url_comes_back_normalised(text: str, normalised: str) -> None:
    assert peer_url(text) == normalised


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("http://[::1", "it is not a URL (Invalid IPv6 URL)"),
        ("http://ada:secret@127.0.0.1:8410", "it names a user or password"),
        ("http://ada@127.0.0.1:8410", "it names a user or password"),
        ("http://127.0.0.1:8410/collect", "it has a path"),
        ("http://127.0.0.1:8410//", "it has a path"),
        ("http://127.0.0.1:8410?to=elsewhere", "it has a query"),
        ("http://127.0.0.1:8410/?", "it has a query"),
        ("http://127.0.0.1:8410#frag", "it has a fragment"),
        ("ftp://127.0.0.1:8410", "only http:// and https:// URLs are contacted"),
        ("file:///etc/passwd", "only http:// and https:// URLs are contacted"),
        ("127.0.0.1:8410", "only http:// and https:// URLs are contacted"),
        ("http:127.0.0.1", "only http:// and https:// URLs are contacted"),
        ("http://127.0.0.1:0", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:+80", "the port must be a number from 1 to 65535"),
        ("http://127.0.0.1:８０", "it holds spaces, control or non-ASCII characters"),
        ("http://", "it names no host"),
        ("http://:8410", "it names no host"),
        ("http://::1:8410", "an IPv6 address must be in brackets"),
        ("http://[fe80::1%25eth0]:8410", "an IPv6 zone is not allowed"),
        (
            "http://[not-v6]:8410",
            "it is not a URL ('not-v6' does not appear to be an IPv4 or IPv6 address)",
        ),
        ("http://[::1]x:8410", "it is not a URL (text after the IPv6 address)"),
        ("http://1.2.3.4.5", "the host is not an IPv4 address"),
        ("http://256.0.0.1", "the host is not an IPv4 address"),
        ("http://a.1", "the host is not an IPv4 address"),
        ("http://team_host:8400", "the host is not an IP address or a DNS name"),
        ("http://-team:8400", "the host is not an IP address or a DNS name"),
        ("http://h\\@evil:8400", "it names a user or password"),
        ("http://team host:8400", "it holds spaces, control or non-ASCII characters"),
        ("http://team\thost:8400", "it holds spaces, control or non-ASCII characters"),
        ("http://teamhost\n:8400", "it holds spaces, control or non-ASCII characters"),
        ("http://bücher.example", "it holds spaces, control or non-ASCII characters"),
        ("http://" + "a" * 2050, "it is longer than 2048 characters"),
        # httpx could not encode it: every member's recall-team would fail on it.
        ("http://xn--t:8410", "the host is not a valid internationalised domain name"),
        ("http://xn--zz.example:8410", "the host is not a valid internationalised domain name"),
        # getaddrinfo reads these as 127.0.0.1.
        ("http://0x7f000001:8410", "the host is not an IPv4 address"),
        ("http://0x7f.0x1:8410", "the host is not an IPv4 address"),
    ],
)
def test_unsound_url_is_a_bad_url_naming_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(BadUrl) as raised:
        peer_url(text)

    assert raised.value.problem == problem
    assert raised.value.url == text
    assert raised.value.code == "bad_url"


def test_bad_url_message_quotes_the_url_and_names_the_problem() -> None:
    with pytest.raises(BadUrl) as raised:
        peer_url("http://[::1")

    assert str(raised.value) == (
        "'http://[::1' is not a usable URL: it is not a URL (Invalid IPv6 URL)"
    )


_URLISH = st.text(
    alphabet=st.sampled_from(list("htps:/[]@?#%.-_0123456789abcdef:\\ \t\nü\x00")), max_size=40
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), _URLISH, _URLISH.map(lambda tail: "http://" + tail)))
def test_hostile_text_raises_nothing_but_bad_url_and_a_sound_url_builds_a_client(
    text: str,
) -> None:
    try:
        url = peer_url(text)
    except BadUrl:
        return
    # What passes is stable under the check and is a URL httpx accepts as it is.
    assert peer_url(url) == url
    with httpx.Client(base_url=url) as client:
        assert str(client.base_url).rstrip("/") == url


@pytest.mark.parametrize(
    ("text", "loopback", "problem"),
    [
        ("http://169.254.169.254", True, "link-local"),
        ("http://[::ffff:a9fe:a9fe]:8410", True, "link-local"),
        ("http://METADATA.google.internal", True, "cloud metadata service"),
        ("http://[fd00:ec2::254]", True, "cloud metadata service"),
        ("http://0.0.0.0:8410", True, "unspecified"),
        ("http://255.255.255.255:8410", True, "multicast or broadcast"),
        ("http://127.0.0.1:22", False, "a peer on loopback is reachable by none"),
        ("http://ada.localhost:8410", False, "a peer on loopback is reachable by none"),
        ("http://[::ffff:127.0.0.1]:8410", False, "a peer on loopback is reachable by none"),
    ],
)
def test_a_presence_url_no_teammate_may_be_sent_to_is_a_bad_url(
    text: str, loopback: bool, problem: str
) -> None:
    from memmesh.net.urls import presence_url

    with pytest.raises(BadUrl, match=problem):
        presence_url(text, loopback=loopback)


def test_a_presence_url_on_the_lan_by_name_or_on_loopback_with_the_coordinator_is_sound() -> None:
    from memmesh.net.urls import presence_url

    assert presence_url("https://ada.example.com:8410/", loopback=False) == (
        "https://ada.example.com:8410"
    )
    assert presence_url("http://10.0.0.7:8410", loopback=False) == "http://10.0.0.7:8410"
    assert presence_url("http://127.0.0.1:8410", loopback=True) == "http://127.0.0.1:8410"


def test_loopback_peers_only_with_a_coordinator_on_loopback_or_none() -> None:
    from memmesh.net.urls import loopback_peers

    assert loopback_peers("http://127.0.0.1:8420") is True
    assert loopback_peers(None) is True
    assert loopback_peers("https://team.example.com:8420") is False
