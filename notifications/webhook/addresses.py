"""Which addresses a delivery may reach: the guard against server-side request forgery.

An endpoint's URL names a host; the host is resolved once per attempt, every
address it resolves to is checked, and the request is then sent to the
checked address itself (``sending``), so a DNS answer that changes between
the check and the connection (rebinding) cannot move it. Refused: loopback,
private, link-local (the cloud metadata address 169.254.169.254 among them),
multicast, reserved and unspecified addresses, and the addresses of this
site's own database server, unless the URL's host is in
``CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS``.
"""

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

from memories.store.errors import Rejected

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

MAX_URL_LENGTH = 2000


class Refused(Exception):
    """The URL may not be delivered to; the message says why, for the delivery log."""


class Unresolvable(Exception):
    """The host has no address now (a DNS failure): worth another try later."""


@dataclass(frozen=True)
class Target:
    """Where one attempt goes: the URL's parts and the one address checked for it."""

    scheme: str
    host: str
    port: int
    address: str


def check_url(url: str) -> SplitResult:
    """``url`` parsed, or ``Rejected`` naming what is wrong with it (field ``url``).

    An http(s) URL with a host and no user name or password in it (a
    credential in a URL ends up in logs and in the console's lists).
    """
    url = (url or "").strip()
    if not url:
        raise Rejected("url", "is required")
    if len(url) > MAX_URL_LENGTH:
        raise Rejected("url", f"is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it raises ValueError on a bad port
    except ValueError as error:
        raise Rejected("url", f"is not a URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise Rejected("url", "must start with http:// or https://")
    if not parts.hostname:
        raise Rejected("url", "has no host")
    if parts.username is not None or parts.password is not None:
        raise Rejected("url", "must not carry a user name or password")
    if any(character.isspace() for character in url):
        raise Rejected("url", "must not contain spaces")
    return parts


def forbidden_reason(
    address: IPAddress, database_addresses: Iterable[IPAddress] = ()
) -> str | None:
    """Why a delivery may not reach ``address``, or None when it may. Pure.

    An IPv4 address written as IPv6 (``::ffff:10.0.0.1``) is judged as the
    IPv4 address it stands for.
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in set(database_addresses):
        return "is the database server's address"
    for reason, matches in (
        ("is a loopback address", address.is_loopback),
        ("is a link-local address (cloud metadata lives there)", address.is_link_local),
        ("is a private address", address.is_private),
        ("is a multicast address", address.is_multicast),
        ("is an unspecified address", address.is_unspecified),
        ("is a reserved address", address.is_reserved),
    ):
        if matches:
            return reason
    if not address.is_global:
        return "is not a public address"
    return None


def target_of(
    url: str,
    *,
    allowed_hosts: Iterable[str],
    resolver: Resolver | None = None,
) -> Target:
    """Resolve ``url``'s host and check every address; the first, to connect to.

    Raises ``Refused`` (with the reason) for an address a delivery may not
    reach, ``Unresolvable`` when the host has no address. A host that
    resolves to several addresses is refused if any of them is refused:
    otherwise the connection could land on the one that is.
    """
    parts = check_url(url)
    host = parts.hostname.lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = (resolver or _resolve)(host, port)
    if not addresses:
        raise Unresolvable(f"{host} has no address")
    if host not in set(allowed_hosts):
        database = _database_addresses()
        for text in addresses:
            reason = forbidden_reason(ipaddress.ip_address(text), database)
            if reason:
                raise Refused(
                    f"refused: {text} (the address of {host}) {reason};"
                    " allow-list the host in CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS to deliver there"
                )
    return Target(scheme=parts.scheme, host=host, port=port, address=addresses[0])


def _resolve(host: str, port: int) -> list[str]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise Unresolvable(f"{host} could not be resolved ({error})") from None
    # Scope ids ("fe80::1%eth0") are cut: the address alone is what is judged.
    return list(dict.fromkeys(info[4][0].split("%")[0] for info in found))


def _database_addresses() -> list[IPAddress]:
    """The addresses of the database server, when it is reached over the network."""
    host = settings.DATABASES["default"].get("HOST") or ""
    if not host or host.startswith("/"):  # a Unix socket: nothing to reach over TCP
        return []
    try:
        return [ipaddress.ip_address(text) for text in _resolve(host, 5432)]
    except (Unresolvable, ValueError):
        return []
