import pytest

from apps.alerts.core.webhooks import Allowlist, Refused, checked_address, parse_url, slack_body

ALLOW = Allowlist.parse(["10.20.0.0/16", "hooks.example.com", "127.0.0.1"])


def test_allowed_urls_parse_into_their_parts():
    target = parse_url("https://hooks.example.com/services/T0?x=1", ALLOW)
    assert (target.scheme, target.host, target.port, target.path) == (
        "https", "hooks.example.com", 443, "/services/T0?x=1")
    assert parse_url("http://10.20.3.4:8080/h", ALLOW).port == 8080


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://127.0.0.2:6379/",  # loopback, but not the allowed address
    "http://[::1]/",
    "http://internal.example.com/",  # a name nobody listed
    "http://0x7f000001/",  # 127.0.0.1 spelt as a number: a name, not listed
    "ftp://hooks.example.com/",
    "file:///etc/passwd",
    "http://user:pw@hooks.example.com/",
    "http://hooks.example.com/a b",
    "http://hooks.example.com/\r\nX: y",
    "http:///nohost",
    "http://hooks.example.com:99999/",
])
def test_urls_outside_the_allowlist_or_malformed_are_refused(url):
    with pytest.raises(Refused):
        parse_url(url, ALLOW)


def test_a_listed_name_is_refused_when_it_resolves_to_an_internal_address():
    target = parse_url("https://hooks.example.com/x", ALLOW)
    assert checked_address(target, ["93.184.215.14"], ALLOW) == "93.184.215.14"
    for internal in (["127.0.0.2"], ["10.0.0.5"], ["93.184.215.14", "169.254.169.254"]):
        with pytest.raises(Refused, match="not allowed"):
            checked_address(target, internal, ALLOW)
    with pytest.raises(Refused, match="does not resolve"):
        checked_address(target, [], ALLOW)


def test_an_allowed_network_allows_any_name_resolving_inside_it():
    allow = Allowlist.parse(["10.20.0.0/16", "chat.lan"])
    target = parse_url("http://chat.lan/hook", allow)
    assert checked_address(target, ["10.20.1.1"], allow) == "10.20.1.1"


def test_the_slack_body_has_text_and_blocks():
    body = slack_body({"status": "firing", "title": "Pool capacity", "host": "db1",
                       "message": "pool tank is 91% full", "since": "t", "url": "u"})
    assert body["text"].startswith(":rotating_light: [FIRING] Pool capacity on db1")
    assert body["blocks"][1]["text"]["text"] == "pool tank is 91% full"
