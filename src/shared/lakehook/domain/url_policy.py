"""Where lakehook may send HTTP requests: the outbound URL policy of webhook, Airflow and DolphinScheduler targets.

Declared once here and applied twice: when a rule is written (to the URL as written: scheme, host spelling,
literal addresses, metadata names) and when a run starts (to every address the host name resolves to,
in ``lakehook.adapters.targets.egress``), so a name that later resolves to a refused address is refused too.

The policy:
- https only; plain http only to a loopback host, and only in local mode;
- never credentials in the URL, a #fragment, spaces, or a numeric host spelled other than a.b.c.d
  (``http://2130706433/``, ``0177.0.0.1`` and ``0x7f.1`` all mean 127.0.0.1 to a resolver);
- never a cloud metadata name or address, a link-local address (169.254.0.0/16, fe80::/10), or
  loopback outside local mode;
- never a private, shared or reserved address (RFC 1918, fc00::/7, 100.64.0.0/10, 0.0.0.0/8, multicast,
  documentation and benchmarking ranges, ...) unless the stack allow-lists its network
  (``TargetAllowedNetworks``).
IPv6 addresses that carry an IPv4 address are judged by every IPv4 address they may carry as well:
IPv4-mapped ``::ffff:a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4
``2002:aabb:ccdd::/48``, NAT64 (``64:ff9b::/96`` and the local-use ``64:ff9b:1::/48`` at each RFC 6052 prefix
length) and Teredo's client address. The unspecified addresses (``0.0.0.0``, ``::``, which reach this host)
are refused in every mode. The same policy guards the endpoints an asset source names (``s3.endpoint``, a REST
catalog's ``uri``, ``AWS_ENDPOINT_URL`` ..., see :mod:`lakehook.domain.source_endpoints`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
# Instance metadata services answer credentials to anyone who can reach them; no target is one.
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OCI instance metadata
        "169.254.170.2",  # ECS task metadata and credentials
        "169.254.170.23",  # EKS pod identity agent
        "fd00:ec2::254",  # AWS instance metadata over IPv6
        "fd00:ec2::23",  # EKS pod identity agent over IPv6
        "100.100.100.200",  # Alibaba Cloud metadata
        "168.63.129.16",  # Azure wire server
        "192.0.0.192",  # Oracle Cloud metadata
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: any RFC 6052 prefix length from /48
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 (deprecated), still dialled as the IPv4 address
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
# Not global, though Python 3.11's ipaddress takes them for global: site-local (RFC 3879), local-use NAT64
# (RFC 8215), SRv6 SIDs (RFC 9602) and the IPv6 documentation range 3fff::/20 (RFC 9637).
_NOT_GLOBAL_V6 = tuple(ipaddress.ip_network(n) for n in ("fec0::/10", "64:ff9b:1::/48", "5f00::/16", "3fff::/20"))
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)
_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")


class UrlRefusedError(ValueError):
    """A target URL or address the outbound policy refuses; ``code`` says which rule."""

    def __init__(self, message: str, code: str = "refused_url") -> None:
        super().__init__(message)
        self.code = code


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR networks (``10.20.0.0/16``, ``fd12::/48``, a bare address); ValueError naming a bad one."""
    networks: list[IPNetwork] = []
    for raw in values:
        text = raw.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a CIDR network such as 10.20.0.0/16") from exc
    return tuple(networks)


def carried_ipv4(address: IPAddress) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address an IPv6 address may carry (see the module docstring); none for a plain address."""
    if not isinstance(address, ipaddress.IPv6Address):
        return ()
    value = int(address)
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address in _IPV4_TRANSLATED or address in _NAT64 or (address in _IPV4_COMPATIBLE and value > 1):
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.append(address.teredo[1])
    if address in _NAT64_LOCAL:
        found.extend(_rfc6052_ipv4(value, length) for length in (48, 56, 64, 96))
    return tuple(dict.fromkeys(found))


def _rfc6052_ipv4(value: int, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address RFC 6052 places after a ``prefix_length`` prefix (skipping bits 64..71, the u octet)."""
    octets = value.to_bytes(16, "big")
    start = prefix_length // 8
    carried = [o for i, o in enumerate(octets) if i != 8][start : start + 4] if prefix_length < 96 else octets[12:16]
    return ipaddress.IPv4Address(bytes(carried))


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, translated, compatible, 6to4, NAT64), else the
    address itself."""
    carried = carried_ipv4(address)
    return carried[0] if carried else address


def host_address(host: str) -> IPAddress | None:
    """The address a URL host spells, or None for a name. Numeric spellings other than a.b.c.d are refused."""
    bare = host.strip("[]")
    if "%" in bare:
        raise UrlRefusedError("an IPv6 zone (%...) is not allowed in a target host", "refused_address")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    # As the WHATWG URL standard (and every resolver) does: a host whose last label is a number is an
    # IPv4 address, whatever its spelling. Only the dotted-quad spelling is accepted, so what is checked
    # here is what a resolver will dial.
    last = bare.rstrip(".").rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.match(last):
        raise UrlRefusedError(
            f"host {host!r} is a numeric address not written as four decimal parts (a.b.c.d)", "refused_address"
        )
    return None


def _well_formed(url: str) -> tuple[SplitResult, str]:
    """The URL's parts and host when it is written as a target's URL may be (absolute http(s), no spaces, control
    characters, backslashes, credentials or fragment, a valid port, an ASCII host); else UrlRefusedError saying why."""
    if any(c.isspace() or ord(c) < 0x21 or c == "\\" for c in url):
        raise UrlRefusedError("must not contain spaces, control characters or backslashes")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UrlRefusedError("must be an absolute https:// URL", "insecure_url")
    if "@" in parts.netloc:
        raise UrlRefusedError("must not carry credentials; put them in the secret store and reference them")
    if parts.fragment:
        raise UrlRefusedError("must not contain a #fragment")
    try:
        parts.port  # noqa: B018 - a port that is not a number in 0..65535 raises here
    except ValueError as exc:
        raise UrlRefusedError(f"has an invalid port: {exc}") from exc
    host = parts.hostname
    if not host.isascii():
        raise UrlRefusedError("write an international host name in its ASCII form (xn--...)")
    return parts, host


@dataclass(frozen=True)
class UrlPolicy:
    """Which URLs and addresses targets may use. ``local_mode``: the local stack (plain http to loopback is
    fine there); ``allowed_networks``: private networks the stack's operator allow-listed."""

    local_mode: bool = False
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def of(cls, local_mode: bool, allowed_networks: Iterable[str] = ()) -> UrlPolicy:
        return cls(local_mode, parse_networks(allowed_networks))

    def check_url(self, url: str) -> str:
        """The URL, if a target may use it as written; else UrlRefusedError saying why."""
        parts, host = _well_formed(url)
        address = host_address(host)
        loopback = address.is_loopback if address is not None else _is_loopback_name(host)
        if parts.scheme == "http" and not (self.local_mode and loopback):
            raise UrlRefusedError(
                "plain http is allowed only to a loopback host in local mode; use https", "insecure_url"
            )
        if address is not None:
            self.check_address(address)
        else:
            self.check_name(host)
        return url

    def check_name(self, host: str) -> None:
        """Refuse a host name that is a metadata service, or loopback outside local mode."""
        name = host.lower().rstrip(".")
        if not _HOST_NAME.match(name):
            raise UrlRefusedError(f"host {host!r} is not a valid host name", "refused_address")
        if name in METADATA_NAMES:
            raise UrlRefusedError(f"host {host!r} is a cloud metadata service", "refused_address")
        if _is_loopback_name(name) and not self.local_mode:
            raise UrlRefusedError(f"host {host!r} is loopback, allowed only in local mode", "refused_address")

    def check_address(self, address: IPAddress) -> None:
        """Refuse an address a target must not reach (see the module docstring)."""
        reason = self.refusal(address)
        if reason is not None:
            raise UrlRefusedError(f"address {address} is {reason}", "refused_address")

    def refusal(self, address: IPAddress) -> str | None:
        """Why the address is refused, or None when a target may reach it."""
        if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
            return "scoped (an IPv6 zone)"
        carried = carried_ipv4(address)
        every = (address, *carried)
        for refused, reason in _NEVER_REACHABLE:
            if any(refused(a) for a in every):
                return reason
        if any(a.is_loopback for a in every):
            return None if self.local_mode else "loopback, allowed only in local mode"
        if any(a in net for net in self.allowed_networks for a in every):
            return None
        return _not_public(address, carried)


def _not_public(address: IPAddress, carried: tuple[ipaddress.IPv4Address, ...]) -> str | None:
    """Why an address no allow-list names is refused: multicast, or not a public one, or None (it may be reached)."""
    if any(a.is_multicast for a in (address, *carried)):
        return "multicast"
    judged = carried or (address,)
    if not all(a.is_global for a in judged) or any(address in net for net in _NOT_GLOBAL_V6):
        return "private or reserved (allow-list its network with the TargetAllowedNetworks parameter)"
    return None


# Addresses no target may reach, in local mode or allow-listed either (checked in this order, on the address and
# every IPv4 address it carries).
_NEVER_REACHABLE: tuple[tuple[Callable[[IPAddress], bool], str], ...] = (
    (lambda a: a in METADATA_ADDRESSES, "a cloud metadata address"),
    (lambda a: a.is_link_local, "link-local"),
    (lambda a: a.is_unspecified, "unspecified (0.0.0.0 or ::, which reach this host)"),
)


def _is_loopback_name(host: str) -> bool:
    name = host.lower().rstrip(".")
    return name in LOOPBACK_NAMES or name.endswith(".localhost")


def is_loopback_host(host: str | None) -> bool:
    """Whether the host is this machine: ``localhost`` or a loopback address (in any accepted spelling)."""
    if not host:
        return False
    try:
        address = host_address(host)
    except UrlRefusedError:
        return False
    return embedded_ipv4(address).is_loopback if address is not None else _is_loopback_name(host)
