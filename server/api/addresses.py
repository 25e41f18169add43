"""The client a request comes from, as every per-address count of the server counts it: the API's
throttles (:mod:`server.api.throttling`), the password checks and sign-ups
(:mod:`server.accounts.throttling`) and the exports' per-address slots
(:mod:`server.operations.admission`).

The address is the one DRF's throttles take: ``REMOTE_ADDR``, or behind ``NUM_PROXIES`` proxies
(``SENTE_NUM_PROXIES``; 1 in production, nginx) the entry that many from the end of
``X-Forwarded-For``, the one the nearest trusted proxy wrote. An IPv6 address counts as its /64
network: a subscriber is given a /64 at least and the machine picks any address in it (privacy
addresses change by the day), so counting addresses one by one would give one machine 2**64
counters. An IPv4-mapped IPv6 address (``::ffff:192.0.2.1``, what a dual-stack socket reports for an
IPv4 client) is its IPv4 address, and an IPv4 address counts alone (a NAT's users share it, as they
always have).
"""

from __future__ import annotations

import ipaddress

from rest_framework.throttling import BaseThrottle

IPV6_PREFIX = 64  # the bits of an IPv6 address that name its network


def client_address(request) -> str:
    """The address the request came from as the proxies in front say (see the module's docstring);
    '' when the server was not told any."""
    return BaseThrottle().get_ident(request) or ""


def address_key(address: str) -> str:
    """What ``address`` counts as: an IPv4 address itself, an IPv6 address its /64 network
    (``2001:db8:1:2::/64``), an IPv4-mapped IPv6 address its IPv4 address. Text that is no address
    (a proxy that sent something else) is counted as it is."""
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv4Address):
        return str(parsed)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    network = int(parsed) >> (128 - IPV6_PREFIX) << (128 - IPV6_PREFIX)
    return str(ipaddress.IPv6Network((network, IPV6_PREFIX)))


def client_key(request) -> str:
    """The key the request's client counts under on every per-address counter."""
    return address_key(client_address(request))
