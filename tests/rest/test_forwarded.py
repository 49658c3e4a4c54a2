"""X-Forwarded-For: every field line, joined in order, walked from the right past the
trusted proxies (rest/forwarded.py)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_network

import pytest

from rest.forwarded import forwarded_client, is_trusted, parse_address

PROXIES = [ip_network("10.0.0.0/24"), ip_network("2001:db8:1::/48")]


class TestFieldLines:
    def test_one_line_gives_its_nearest_untrusted_entry(self) -> None:
        assert forwarded_client(["198.51.100.7, 10.0.0.5"], PROXIES) == "198.51.100.7"

    def test_a_second_line_appended_by_the_proxy_wins_over_the_clients_own(self) -> None:
        # What HAProxy's `option forwardfor` sends when the client wrote the header itself:
        # the client's line first, the proxy's own line (the real peer) after it.
        assert forwarded_client(["203.0.113.66", "198.51.100.7"], PROXIES) == "198.51.100.7"

    def test_lines_are_one_list_in_order(self) -> None:
        lines = ["203.0.113.66, 198.51.100.7", "10.0.0.9", "10.0.0.5"]
        assert forwarded_client(lines, PROXIES) == "198.51.100.7"

    def test_every_trusted_hop_is_skipped_however_the_lines_split(self) -> None:
        assert forwarded_client(["192.0.2.1", "10.0.0.1, 10.0.0.2", "10.0.0.3"], PROXIES) == "192.0.2.1"

    def test_empty_elements_and_whitespace_are_ignored(self) -> None:
        assert forwarded_client([" ,\t198.51.100.7 ,, ", "", "10.0.0.5 "], PROXIES) == "198.51.100.7"

    def test_no_header_names_no_client(self) -> None:
        assert forwarded_client([], PROXIES) is None
        assert forwarded_client([" , "], PROXIES) is None

    def test_all_trusted_gives_the_leftmost(self) -> None:
        assert forwarded_client(["10.0.0.7, 10.0.0.5"], PROXIES) == "10.0.0.7"

    def test_an_entry_that_is_no_address_is_the_client_when_reached(self) -> None:
        # Only a trusted proxy's entry is ever reached; it wrote what it had.
        assert forwarded_client(["198.51.100.7, unknown", "10.0.0.5"], PROXIES) == "unknown"

    def test_a_forged_trusted_address_left_of_the_client_changes_nothing(self) -> None:
        assert forwarded_client(["10.0.0.99", "198.51.100.7"], PROXIES) == "198.51.100.7"


class TestAddresses:
    @pytest.mark.parametrize(
        ("written", "address"),
        [
            ("198.51.100.7", IPv4Address("198.51.100.7")),
            ("198.51.100.7:4711", IPv4Address("198.51.100.7")),
            ("2001:db8::7", IPv6Address("2001:db8::7")),
            ("[2001:db8::7]", IPv6Address("2001:db8::7")),
            ("[2001:db8::7]:4711", IPv6Address("2001:db8::7")),
            ("::ffff:10.0.0.5", IPv4Address("10.0.0.5")),
        ],
    )
    def test_the_forms_proxies_write(self, written: str, address: IPv4Address | IPv6Address) -> None:
        assert parse_address(written) == address

    @pytest.mark.parametrize("written", ["unknown", "_hidden", "", "999.1.1.1", "[2001:db8::7", "a:b"])
    def test_what_is_no_address(self, written: str) -> None:
        assert parse_address(written) is None

    def test_canonical_forms_are_one_client(self) -> None:
        spellings = ["2001:DB8:0:0:0:0:0:7", "2001:db8::7", "[2001:db8::0:7]:80"]
        assert {forwarded_client([spelling], PROXIES) for spelling in spellings} == {"2001:db8::7"}

    def test_a_mapped_ipv4_peer_is_a_trusted_ipv4_proxy(self) -> None:
        assert is_trusted(parse_address("::ffff:10.0.0.5"), PROXIES)
        assert not is_trusted(parse_address("::ffff:10.0.1.5"), PROXIES)
        assert not is_trusted(None, PROXIES)
