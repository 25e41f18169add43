"""Where a webhook may post: the URL's form (http or https, a host, no credentials in it) and every
address its host resolves to, each checked against the networks a post from the server must never
reach: this machine, the private networks around it, link-local space and the cloud metadata
services in it, multicast, unspecified and reserved space, and the IPv4 addresses these hide in
IPv6 forms (IPv4-mapped, IPv4-translated, NAT64, 6to4).

The check runs when staff save a run's webhook URL (:func:`validate_webhook_url`, the model field's
validator) and again before every attempt (:func:`resolve`), whose connection goes to the addresses
checked there and nowhere else (``server.outbound.transport``): a name that answers differently the
second time (DNS rebinding) gains nothing. Numeric forms a parser might miss (``http://2130706433/``,
``http://127.1/``, ``http://[::ffff:127.0.0.1]/``) are resolved like names and their addresses checked.

``SENTE_WEBHOOK_ALLOW_PRIVATE`` lets staff post to a chat server on this machine or the private
network (loopback, RFC 1918, fc00::/7, 100.64.0.0/10); link-local, metadata, multicast, unspecified
and reserved addresses stay refused.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = {"http": 80, "https": 443}
# Names of metadata services, refused before any lookup (their addresses are refused too).
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata"})
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, Azure, Google Cloud, Oracle, DigitalOcean, OpenStack
        "169.254.170.2",  # AWS ECS task metadata and credentials
        "100.100.100.200",  # Alibaba Cloud: in 100.64.0.0/10, refused even where private addresses are let
        "fd00:ec2::254",  # AWS over IPv6: in fc00::/7, likewise
    )
)
# (network, why it is refused, whether SENTE_WEBHOOK_ALLOW_PRIVATE lets it), first match wins.
NETWORKS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str, bool], ...] = tuple(
    (ipaddress.ip_network(net), why, private)
    for net, why, private in (
        ("0.0.0.0/8", "an unspecified address (0.0.0.0/8)", False),
        ("127.0.0.0/8", "a loopback address (this machine)", True),
        ("10.0.0.0/8", "a private address (RFC 1918)", True),
        ("172.16.0.0/12", "a private address (RFC 1918)", True),
        ("192.168.0.0/16", "a private address (RFC 1918)", True),
        ("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)", True),
        ("169.254.0.0/16", "a link-local address (169.254.0.0/16)", False),
        ("192.0.0.0/24", "a reserved address (192.0.0.0/24)", False),
        ("224.0.0.0/4", "a multicast address", False),
        ("240.0.0.0/4", "a reserved address (240.0.0.0/4)", False),
        ("::/128", "an unspecified address (::)", False),
        ("::1/128", "a loopback address (this machine)", True),
        ("::/96", "an IPv4-compatible address (::/96, deprecated and reserved)", False),
        ("fc00::/7", "a unique-local address (fc00::/7, private)", True),
        ("fe80::/10", "a link-local address (fe80::/10)", False),
        ("fec0::/10", "a site-local address (fec0::/10, deprecated)", False),
        ("ff00::/8", "a multicast address", False),
        ("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)", False),
    )
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")
TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT's IPv4-translated addresses (RFC 2765, RFC 6145)


class TargetError(Exception):
    """Why a webhook URL cannot be posted to, in words that name the URL."""


class Refused(TargetError):
    """The URL or an address its host resolves to is not one a webhook may post to."""


class Unresolved(TargetError):
    """The URL's host did not resolve (in time): perhaps it will later."""


@dataclass(frozen=True)
class Endpoint:
    """One checked address to connect to, as the resolver gave it."""

    address: Address
    family: int
    sockaddr: tuple


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart, with the checked addresses of its host."""

    url: str
    scheme: str  # http or https
    host: str  # the name (IDNA-encoded) or the address literal: Host header, TLS server name
    port: int
    path: str  # the request target: path and query
    endpoints: tuple[Endpoint, ...]


def classify(address: Address) -> tuple[str, bool] | None:
    """Why a webhook does not post to ``address`` and whether it is a private one, which
    ``SENTE_WEBHOOK_ALLOW_PRIVATE`` lets (None: a public address, posted to)."""
    if address in METADATA:
        return "a cloud metadata service's address", False
    if isinstance(address, ipaddress.IPv6Address):
        inner: ipaddress.IPv4Address | None = None
        form = ""
        if address.ipv4_mapped is not None:
            inner, form = address.ipv4_mapped, "the IPv4-mapped form"
        elif address in NAT64:
            inner, form = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "the NAT64 form"
        elif address in TRANSLATED:
            inner, form = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "the IPv4-translated form"
        elif address.sixtofour is not None:
            inner, form = address.sixtofour, "the 6to4 form"
        if inner is not None:
            found = classify(inner)
            return None if found is None else (f"{form} of {inner}, {found[0]}", found[1])
    for network, why, private in NETWORKS:
        if address.version == network.version and address in network:
            return why, private
    if not address.is_global:
        return "a reserved address (not globally routable)", False
    return None


def parse(url: str) -> tuple[str, str, int, str]:
    """The scheme, host (IDNA-encoded, lower case), port and request target of a webhook URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise Refused(f"{url}: not a URL a webhook can post to ({e})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise Refused(f"{url}: webhooks post over http or https only, not {scheme or 'a URL without a scheme'}")
    if parts.username is not None or parts.password is not None:
        raise Refused(f"{url}: a webhook URL may not carry a user name or password; the receiver checks the signature")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused(f"{url}: the URL names no host")
    if port == 0:
        raise Refused(f"{url}: port 0 is not a port to post to")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Refused(f"{url}: the host {host} is not a valid international domain name") from None
    if host in METADATA_NAMES:
        raise Refused(f"{url}: {host} is a cloud metadata service; webhooks post to public addresses only")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, host, port or SCHEMES[scheme], path


def resolve(url: str, *, allow_private: bool, timeout: float) -> Target:
    """The URL's target with every address its host resolves to, each checked; raises :class:`Refused`
    when the URL or any of those addresses may not be posted to, :class:`Unresolved` when the host
    does not resolve within ``timeout`` seconds."""
    scheme, host, port, path = parse(url)
    infos = _lookup(url, host, port, timeout)
    endpoints: list[Endpoint] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        found = classify(address)
        if found is not None and not (found[1] and allow_private):
            said = f"{address} is" if str(address) == host else f"{host} resolves to {address},"
            hint = " (SENTE_WEBHOOK_ALLOW_PRIVATE lets the server post to private networks)" if found[1] else ""
            raise Refused(f"{url}: {said} {found[0]}; webhooks post to public addresses only{hint}")
        if all(e.address != address for e in endpoints):
            endpoints.append(Endpoint(address, family, sockaddr))
    if not endpoints:
        raise Unresolved(f"{url}: {host} has no IPv4 or IPv6 address")
    return Target(url, scheme, host, port, path, tuple(endpoints))


def _lookup(url: str, host: str, port: int, timeout: float) -> list:
    """getaddrinfo within ``timeout`` seconds (it has no timeout of its own: the lookup runs in a
    thread, left to end by itself if it takes longer)."""
    found: dict[str, object] = {}

    def look() -> None:
        try:
            found["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            found["error"] = e

    thread = threading.Thread(target=look, name="webhook-lookup", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise Unresolved(f"{url}: looking up {host} took longer than {timeout:g} s")
    error = found.get("error")
    if error is not None:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise Unresolved(f"{url}: {host} does not resolve ({reason})")
    return found["infos"]  # type: ignore[return-value]


def validate_webhook_url(value: str) -> None:
    """Validator of ``Run.webhook_url``: the URL and every address its host resolves to now."""
    if not value:
        return
    hook = settings.SENTE_WEBHOOK
    try:
        resolve(value, allow_private=bool(hook["allow_private"]), timeout=hook["timeout_seconds"])
    except TargetError as e:
        raise ValidationError(str(e)) from None
