"""Addresses of "machines" on one machine: a private /24 of 127.0.0.0/8 per cluster.

Every address of 127.0.0.0/8 reaches this machine on Linux, and a process can bind one
and connect from another. A cluster test takes a /24 at random (away from 127.0.0.1,
which the shared services use, and from other test sessions running at the same time)
and gives each role its own address: the proxy's front, the source it connects to the
hosts from (the one address TRUSTED_PROXIES lists), the hosts, the clients.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Subnet:
    prefix: str  # "127.a.b."

    @classmethod
    def pick(cls) -> Subnet:
        return cls(f"127.{random.randint(16, 254)}.{random.randint(0, 255)}.")

    def address(self, number: int) -> str:
        assert 1 <= number <= 254
        return f"{self.prefix}{number}"

    # The roles' addresses within the subnet.
    @property
    def proxy_front(self) -> str:
        return self.address(1)

    @property
    def proxy_source(self) -> str:
        return self.address(2)

    @property
    def pooler(self) -> str:
        return self.address(5)

    def host(self, index: int) -> str:
        return self.address(11 + index)

    def client(self, index: int) -> str:
        return self.address(101 + index)
