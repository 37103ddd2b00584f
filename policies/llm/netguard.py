"""Which addresses a model request may go to (SPEC §4 "Model backends"; docs/models.md
"Allowed hosts").

A model endpoint's URL is chosen by a project owner, but the request leaves from the server, so
by default nothing on the server's side of the network is reachable: loopback, private,
link-local (the cloud metadata address among them), carrier-grade NAT, multicast, reserved and
unspecified addresses, and IPv6 addresses that embed one of those (IPv4-mapped, -compatible,
6to4, NAT64) are refused. The host is resolved once, *every* address it resolves to is checked,
and the request connects to the checked address (`Target.ip`), so a name that resolves
differently a moment later (DNS rebinding) changes nothing. Odd spellings of an address
(``127.1``, ``0x7f000001``, ``2130706433``) are what the resolver makes of them, so they are
checked as the address they mean.

An operator names exceptions (``TA_MODEL_ALLOWED_HOSTS``: host names, addresses, CIDR
networks), e.g. a vLLM server on the same host or network.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, …
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UrlRefused(ValueError):
    """The URL or one of its addresses is not allowed; the message says which and why."""


def _system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_problem(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public address (None when it is)."""
    if ip in _METADATA:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is None and int(ip) >> 32 == 0 and int(ip) > 1:  # IPv4-compatible ::a.b.c.d
            embedded = ipaddress.IPv4Address(int(ip))
        if embedded is not None:
            inner = address_problem(embedded)
            return f"an IPv6 form of {embedded} ({inner})" if inner else None
    checks = (
        ("is_unspecified", "the unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    )
    for attr, what in checks:
        if getattr(ip, attr):
            return what
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "a carrier-grade NAT address"
    if not ip.is_global:
        return "not a public address"
    return None


@dataclass(frozen=True, slots=True)
class Target:
    """Where one request goes: the URL's scheme, host name (for the Host header and TLS) and
    port, and the checked address to connect to."""

    scheme: str
    host: str
    port: int
    ip: str

    def url(self, path: str) -> str:
        """The request URL with the checked address in place of the host name."""
        ip = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{self.scheme}://{ip}:{self.port}{path}"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


class AddressGuard:
    """Checks model URLs against the rules above. ``allowed``: host names (exact, case-
    insensitive), addresses and CIDR networks that are allowed even when not public."""

    def __init__(self, allowed: Iterable[str] = (), resolver: Resolver | None = None) -> None:
        self.hosts: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for item in allowed:
            item = item.strip().lower().strip("[]")
            if not item:
                continue
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                self.hosts.add(item.rstrip("."))
        self._resolve = resolver or _system_resolver

    @classmethod
    def parse(cls, text: str) -> AddressGuard:
        """From a comma-separated list (the ``TA_MODEL_ALLOWED_HOSTS`` form)."""
        return cls(text.split(","))

    def __repr__(self) -> str:
        return (
            f"AddressGuard(hosts={sorted(self.hosts)}, networks={[str(n) for n in self.networks]})"
        )

    def _ip_allowed(self, ip: IPAddress) -> bool:
        return any(ip.version == n.version and ip in n for n in self.networks)

    def split(self, url: str) -> tuple[str, str, int]:
        """(scheme, host, port) of an acceptable URL; `UrlRefused` for another scheme, URL
        credentials, a missing host or a bad port."""
        if not isinstance(url, str) or any(ch.isspace() or ord(ch) < 32 for ch in url):
            raise UrlRefused("base_url: expected a URL without spaces or control characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UrlRefused(f"base_url: not a valid URL ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise UrlRefused(
                f"base_url: only http and https URLs are allowed, not {scheme or 'no scheme'!r}"
            )
        if "@" in parts.netloc:
            raise UrlRefused(
                "base_url: credentials in the URL are not allowed; store the key with the "
                "endpoint instead"
            )
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise UrlRefused("base_url: the URL has no host")
        return scheme, host, port or (443 if scheme == "https" else 80)

    def literal_problem(self, host: str) -> str | None:
        """Why ``host`` is refused before any lookup: an address (in any spelling the resolver
        accepts) that is not public, or a ``localhost`` name."""
        if host in self.hosts:
            return None
        ip = _literal_ip(host)
        if ip is not None:
            problem = address_problem(ip)
            if problem and not self._ip_allowed(ip):
                return f"base_url: {host} is {problem}"
            return None
        if host == "localhost" or host.endswith(".localhost"):
            return f"base_url: {host} names this machine (a loopback address)"
        return None

    def check_url(self, url: str, *, resolve: bool = True) -> str | None:
        """None when ``url`` may be used, else the reason. With ``resolve``, the host's
        addresses are looked up and each is checked; a name that does not resolve (yet) is
        accepted here and checked again at request time."""
        try:
            scheme, host, port = self.split(url)
        except UrlRefused as exc:
            return str(exc)
        problem = self.literal_problem(host)
        if problem or not resolve or host in self.hosts:
            return problem
        try:
            self.target(url)
        except UrlRefused as exc:
            return str(exc)
        except UnicodeError:
            return f"base_url: {host[:100]!r} is not a valid host name"
        except OSError:
            return None
        return None

    def target(self, url: str) -> Target:
        """Resolve ``url``'s host once and check every address; the first is the target.
        `UrlRefused` when any is refused; `OSError` when the name does not resolve."""
        scheme, host, port = self.split(url)
        problem = self.literal_problem(host)
        if problem:
            raise UrlRefused(problem)
        addresses = self._resolve(host, port)
        if not addresses:
            raise OSError(f"{host} has no address")
        named = host in self.hosts
        for text in addresses:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
            problem = address_problem(ip)
            if problem and not named and not self._ip_allowed(ip):
                raise UrlRefused(f"base_url: {host} resolves to {ip}, {problem}")
        return Target(scheme, host, port, addresses[0].split("%", 1)[0])


def _literal_ip(host: str) -> IPAddress | None:
    """The address ``host`` spells, in the forms the C resolver accepts for IPv4 too
    (``127.1``, ``0x7f000001``, ``2130706433``, ``0177.0.0.1``), or None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host) and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None
