"""The client address of a request that came through trusted proxies (contract §5).

A proxy appends the address it received the request from to `X-Forwarded-For`. HAProxy
(`option forwardfor`) adds its own field line rather than extending a line the client sent,
so a request can carry several; RFC 9110 §5.3 says they mean one list, their values joined
in order with commas. Only the entries a trusted proxy appended can be believed, and those
are at the end: the list is walked from the right past the trusted proxies, and the first
address that is not one is the client. Whatever a client wrote itself sits to the left of
that and is never reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

Network = IPv4Network | IPv6Network
Address = IPv4Address | IPv6Address


def parse_address(text: str) -> Address | None:
    """An address as a proxy or a socket may write it: plain, IPv4 with a port, IPv6 in
    brackets with or without a port; an IPv4-mapped IPv6 address as the IPv4 address it
    is (so that it meets IPv4 networks). None when it is no address at all."""
    if text.startswith("["):
        text, closed, _port = text[1:].partition("]")
        if not closed:
            return None
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ip_address(text)
    except ValueError:
        return None
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(address: Address | None, proxies: Sequence[Network]) -> bool:
    return address is not None and any(address in network for network in proxies)


def forwarded_client(field_lines: Sequence[str], proxies: Sequence[Network]) -> str | None:
    """The client named by X-Forwarded-For field lines received from a trusted proxy: the
    nearest entry that is not a trusted proxy, in its canonical form when it is an address
    (as written otherwise: the proxy that appended it had nothing better). The leftmost entry
    when all are trusted proxies; None when the header is absent or empty."""
    # Empty list elements are ignored (RFC 9110 §5.6.1), surrounding whitespace too.
    entries = [entry for entry in (part.strip(" \t") for part in ",".join(field_lines).split(",")) if entry]
    for entry in reversed(entries):
        address = parse_address(entry)
        if not is_trusted(address, proxies):
            return entry if address is None else str(address)
    return str(parse_address(entries[0])) if entries else None
