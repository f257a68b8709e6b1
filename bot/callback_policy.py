"""Where decision callbacks may go: the `callback_allowed_hosts` list, else public addresses.

An entry is an exact host (`hooks.example.com`, `10.0.0.5`) or a suffix (`.example.com`:
any host under it), optionally prefixed with `http://` to allow plain http for that entry;
every other callback must be https. Without a list, a callback must be https to a host
whose every address is public: loopback, private, link-local, shared, reserved and metadata
addresses are refused. Link-local and cloud metadata addresses are refused even when listed.

The same checks run when a callback is requested (a 400 naming the setting) and when it is
sent, on the addresses the connection will use (`addresses`), so a DNS answer that changed
in between cannot smuggle an internal address in. Pure Python: the CLI loads it cheaply.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Resolve = Callable[[str], Awaitable[list[str]]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

SETTING = "callback_allowed_hosts (SIGNOFF_CALLBACK_ALLOWED_HOSTS)"
RESOLVE_TIMEOUT = 5.0
METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
"""Cloud instance metadata services (AWS, GCP, Azure; AWS over IPv6; Alibaba)."""
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class CallbackRefused(ValueError):
    """This callback URL may not be used; the message says why and names the setting."""


@dataclass(frozen=True)
class AllowedHost:
    host: str
    """Lower-case; a leading dot makes it a suffix."""
    http: bool = False

    def matches(self, host: str) -> bool:
        return host.endswith(self.host) if self.host.startswith(".") else host == self.host


def parse_allowed(entries: Iterable[str]) -> tuple[AllowedHost, ...]:
    """`host`, `.suffix` or `http://host`; ValueError naming the first bad entry."""
    return tuple(_parse_entry(entry) for entry in entries)


def _parse_entry(entry: str) -> AllowedHost:
    text = entry.strip().lower()
    scheme, _, host = text.rpartition("://")
    if scheme not in ("", "http", "https"):
        raise ValueError(f"{entry!r}: only an http:// prefix is allowed (https is the default)")
    host = host.rstrip("/").removeprefix("[").removesuffix("]")
    bare = host.removeprefix(".")
    if not (_is_ip(bare) or re.fullmatch(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*", bare)):
        raise ValueError(f"{entry!r} is not a host name, IP address or .suffix")
    return AllowedHost(host, http=scheme == "http")


class CallbackPolicy:
    def __init__(self, allowed: Iterable[str] = (), *, resolve: Resolve | None = None) -> None:
        """`resolve` maps a host name to its addresses (the system resolver by default;
        tests inject one)."""
        self.allowed = parse_allowed(allowed)
        self.resolve = resolve or system_resolve

    async def check(self, url: str) -> None:
        """At request time: the scheme and host, then every address the host has now."""
        host = self.check_url(url)
        await self.addresses(host)

    def check_url(self, url: str) -> str:
        """The scheme and the host against the list (no DNS); returns the host."""
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        if parts.scheme not in ("http", "https") or not host:
            raise CallbackRefused(f"{url[:200]!r} is not an http(s) URL with a host ({SETTING})")
        if self.allowed:
            matched = [entry for entry in self.allowed if entry.matches(host)]
            if not matched:
                raise CallbackRefused(f"host {host} is not in {SETTING}")
            if parts.scheme == "http" and not any(entry.http for entry in matched):
                raise CallbackRefused(
                    f"http to {host} is not allowed: use https, or list it as http://{host} "
                    f"in {SETTING}"
                )
        elif parts.scheme != "https":
            raise CallbackRefused(
                f"callbacks must use https (http only to hosts listed as http:// in {SETTING})"
            )
        return host

    async def addresses(self, host: str) -> list[str]:
        """The addresses to connect to for `host`, every one of them allowed; else refused."""
        if _is_ip(host):
            found = [host]
        else:
            try:
                found = await asyncio.wait_for(self.resolve(host), RESOLVE_TIMEOUT)
            except (OSError, UnicodeError, TimeoutError) as exc:
                raise CallbackRefused(f"host {host} does not resolve ({exc}; {SETTING})") from None
            if not found:
                raise CallbackRefused(f"host {host} does not resolve ({SETTING})")
        for address in found:
            self._check_address(host, ipaddress.ip_address(address))
        return found

    def _check_address(self, host: str, address: Address) -> None:
        seen = _embedded_v4(address) or address
        shown = host if _is_ip(host) else f"{host} resolves to {address}, which"
        if seen in METADATA or seen.is_link_local:
            raise CallbackRefused(
                f"{shown} is a link-local or metadata address: never allowed, not even by {SETTING}"
            )
        if not self.allowed and not seen.is_global:
            raise CallbackRefused(
                f"{shown} is not a public address (loopback, private or reserved); list "
                f"the host in {SETTING} to allow it"
            )


async def system_resolve(host: str) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _embedded_v4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), which is what is reached."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.ipv4_mapped or address.sixtofour
