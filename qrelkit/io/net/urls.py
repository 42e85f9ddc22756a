"""Which hosts a URL may name when qrelkit fetches it, or forwards it to a model endpoint: the one
policy behind image URLs sent to a judge (`qrelkit.judges.http.checked_image_url`) and files that
`qrelkit data fetch` downloads.

A documents file or a table of image URLs is input like any other: an `http://` URL to a loopback,
link-local (169.254.x.x, a cloud's metadata service) or private address would let it read what the
machine can reach. So a URL from such input names a public host, or a host the user listed.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from urllib.parse import urlsplit


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def local_host_reason(host: str) -> str | None:
    """Why a host is not a public one (a loopback, private, link-local, carrier-grade NAT... address,
    a local name, or a name that resolves to such an address here), or None."""
    address = _address(host)
    mapped = getattr(address, "ipv4_mapped", None) or getattr(address, "sixtofour", None)
    if mapped is not None:  # ::ffff:a.b.c.d is the IPv4 address a.b.c.d; 2002:AABB:CCDD:: (6to4) carries one too
        return local_host_reason(str(mapped))
    teredo = getattr(address, "teredo", None)
    if teredo is not None:  # (server, client) IPv4 addresses of a Teredo address
        return local_host_reason(str(teredo[1]))
    if address is not None:
        for test, what in (
            ("is_loopback", "a loopback address"),
            ("is_link_local", "a link-local address"),
            ("is_private", "a private address"),
            ("is_unspecified", "an unspecified address"),
            ("is_multicast", "a multicast address"),
            ("is_reserved", "a reserved address"),
        ):
            if getattr(address, test):
                return what
        if not address.is_global:  # carrier-grade NAT (100.64.0.0/10), documentation and benchmark ranges
            return "a non-public address"
        return None
    name = host.rstrip(".")
    if name == "localhost" or name.endswith((".localhost", ".local", ".internal")):
        return "a local name"
    last = name.rsplit(".", 1)[-1]
    if not any(c.isalpha() for c in last):
        return "a numeric host (an address in another spelling)"
    return _resolved_reason(name)


@functools.lru_cache(maxsize=1024)
def _resolved_reason(name: str) -> str | None:
    """Why a host name is not a public one by the addresses it resolves to here (an endpoint on this
    network resolves it alike), or None; a name that does not resolve here is left to the endpoint."""
    try:
        found = socket.getaddrinfo(name, 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None
    for *_, sockaddr in found:
        reason = local_host_reason(str(sockaddr[0]).split("%", 1)[0])
        if reason:
            return f"a host that resolves to {reason} ({sockaddr[0]})"
    return None


def url_host(url: str) -> tuple[str, str]:
    """(scheme, host) of a URL, both lower case; ValueError for one that does not parse."""
    parts = urlsplit(url.strip())
    return parts.scheme.lower(), (parts.hostname or "").lower()
