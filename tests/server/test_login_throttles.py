"""Password checks are rate limited so that strangers cannot lock an account out: per client address
and per (address, username), in windows of a minute, an hour and a day, never per username alone; on
the website's login form and the API's token request alike (server.accounts.throttling)."""

from __future__ import annotations

import types

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.server.conftest import api_error

PASSWORD = "a long enough password"
TOKEN = "/api/v1/auth/token/"
OWNER = "198.51.100.7"  # alice's own address, which no attacker used


def _web_login(address: str, username: str, password: str):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


def _api_login(address: str, username: str, password: str):
    return APIClient(REMOTE_ADDR=address).post(TOKEN, {"username": username, "password": password}, format="json")


def _refused(response) -> bool:
    """A 429 with Retry-After (the page or the API's JSON error)."""
    if response.status_code != 429:
        return False
    assert int(response["Retry-After"]) >= 1
    if response["Content-Type"].startswith("application/json"):
        assert api_error(response)["code"] == "throttled"
    else:
        assert "Too many password attempts" in response.content.decode()
    return True


@pytest.fixture
def clock(monkeypatch):
    """The throttles' clock, moved by hand: starts one second into a day (as the conftest's does)."""
    from server.api import throttling

    now = [1_800_000_000 - 1_800_000_000 % 86_400 + 1.0]
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: now[0]))

    def advance(seconds: float) -> None:
        now[0] += seconds

    return advance


def test_ten_addresses_failing_for_alice_do_not_stop_her_logging_in(alice):
    """Ten addresses guess alice's password, on the login form and through the API, until each is
    refused; alice then logs in from an eleventh address with her password, on both."""
    for n in range(10):
        address = f"203.0.113.{n + 1}"
        answers = [
            (_web_login if k % 2 else _api_login)(address, "alice" if k % 3 else "ALICE", "a guess") for k in range(12)
        ]
        assert [a.status_code for a in answers[:5]] == [401, 200, 401, 200, 401]  # wrong password
        assert all(_refused(a) for a in answers[5:]), n  # this address is held back
    response = _web_login(OWNER, "alice", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/"
    response = _api_login(OWNER, "alice", PASSWORD)
    assert response.status_code == 201 and response.json()["username"] == "alice"


def test_failures_from_one_address_are_throttled(alice, bob):
    """After the pair's rate of guesses at alice from one address, that address is refused for alice
    even with her password (in any case of the name), on the form and the API, while it may still log
    in to bob; past the address's rate it is refused for every account."""
    attacker = "203.0.113.66"
    for _ in range(5):
        assert _web_login(attacker, "alice", "a guess").status_code == 200
    assert _refused(_web_login(attacker, "alice", PASSWORD))
    assert _refused(_web_login(attacker, "Alice", PASSWORD))
    assert _refused(_api_login(attacker, "alice", PASSWORD))
    assert _web_login(attacker, "bob", PASSWORD).status_code == 302  # the address's 9th check
    assert _web_login(attacker, "bob", PASSWORD).status_code == 302  # its 10th
    assert _refused(_web_login(attacker, "bob", PASSWORD))  # the address's rate: every account
    assert _refused(_api_login(attacker, "carol", "a guess"))
    assert _web_login(OWNER, "alice", PASSWORD).status_code == 302


def test_guessing_on_from_one_address_waits_longer_and_longer(alice, clock):
    """One address guessing at alice as fast as it is let, waiting out each Retry-After: 5 guesses,
    then a wait to the minute's end; after 20 in an hour (refusals count too), to the hour's end;
    after 100 in the day, to the day's end. Then the address is let in with the password."""
    attacker = "203.0.113.66"
    elapsed, checked, waits = 0, [], []
    while not waits or waits[-1] <= 3600:
        response = _api_login(attacker, "alice", "a guess")
        if response.status_code == 401:
            checked.append(elapsed)
            continue
        assert _refused(response)
        waits.append(int(response["Retry-After"]))
        clock(waits[-1])
        elapsed += waits[-1]
    assert waits[0] == 59 and checked[:6] == [0] * 5 + [59]  # the clock starts a second into the minute
    assert waits[3] == 3600 - 3 * 60 and len([t for t in checked if t < 3599]) == 17  # the hour's end
    assert elapsed == 86_399 and 60 <= len(checked) <= 100  # the day's end
    assert len(waits) < 40  # a few dozen refusals: it waited, it did not hammer
    assert _api_login(attacker, "alice", PASSWORD).status_code == 201


def test_a_right_password_forgets_the_failures_of_its_address(alice):
    """The owner mistyping four times and then logging in starts afresh: five more mistakes are
    checked, the sixth refused; on the API as on the form."""
    for login, ok in ((_web_login, 302), (_api_login, 201)):
        address = "198.51.100.20" if login is _web_login else "198.51.100.21"
        for _ in range(4):
            assert login(address, "alice", "a typo").status_code in (200, 401)
        assert login(address, "alice", PASSWORD).status_code == ok
        for _ in range(5):
            assert login(address, "alice", "a typo").status_code in (200, 401)
        assert _refused(login(address, "alice", PASSWORD))


def test_addresses_of_one_ipv6_network_count_as_one(alice, bob):
    """A guesser with a /64 (every IPv6 subscriber has one) gets no more guesses by changing its
    address: guesses at alice from five addresses of one /64 fill that pair's minute, and ten from
    it fill the address's; another /64 is another client. An IPv4 address guessing on in its
    IPv4-mapped IPv6 form is the same client."""
    guesser = [f"2001:db8:77:1:{n:x}::{n + 1:x}" for n in range(12)]
    for address in guesser[:5]:
        assert _web_login(address, "alice", "a guess").status_code == 200
    assert _refused(_api_login(guesser[5], "alice", PASSWORD))  # the pair's 6th
    for address in guesser[6:10]:
        assert _web_login(address, "bob", "a guess").status_code == 200  # the address's 7th to 10th
    assert _refused(_web_login(guesser[10], "bob", PASSWORD))  # the address's rate: every account
    assert _api_login("2001:db8:77:2::1", "alice", PASSWORD).status_code == 201
    for _ in range(5):
        assert _web_login("203.0.113.50", "alice", "a guess").status_code == 200
    assert _refused(_web_login("::ffff:203.0.113.50", "alice", PASSWORD))
    assert _web_login(OWNER, "alice", PASSWORD).status_code == 302
