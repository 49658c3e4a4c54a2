"""Several hosts behind HAProxy: each a `campaign-api serve` with two workers bound to an
address of its own, sharing one PostgreSQL database and one Redis."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from tests.cluster.haproxy import Backend, HAProxy, running_haproxy
from tests.cluster.loopback import Subnet
from tests.contract.redis_process import own_redis
from tests.contract.server import (
    STARTUP_TIMEOUT_S,
    ApiServer,
    ServerSpec,
    ServiceEnv,
    start_server,
    stop_servers,
    wait_until_healthy,
)

WORKERS = 2


@dataclass(slots=True)
class Hosts:
    subnet: Subnet
    specs: list[ServerSpec]  # with the port each host kept
    servers: list[ApiServer]
    proxy: HAProxy

    @staticmethod
    def name(index: int) -> str:
        return f"h{index + 1}"

    def all_up(self) -> dict[str, str]:
        return {self.name(index): "UP" for index in range(len(self.servers))}

    def kill(self, index: int) -> None:
        """SIGKILL to the host's every process (its server leads a process group), as when
        the machine dies; returns once they are gone."""
        server = self.servers[index]
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()

    def restart(self, index: int) -> None:
        """SIGTERM (the server drains its requests and stops), then the same host again on
        the same address and port; returns once HAProxy's checks see it up."""
        self.servers[index].stop()
        self.servers[index] = start_server(self.specs[index])
        wait_until_healthy(self.servers[index], deadline=time.monotonic() + STARTUP_TIMEOUT_S)
        self.proxy.wait_for(self.all_up())

    def served(self) -> dict[str, int]:
        """Responses each host has sent through the proxy so far."""
        return self.proxy.responses_by_server()


@contextmanager
def hosts_behind_haproxy(env: ServiceEnv, workdir: Path, *, count: int = 3) -> Iterator[Hosts]:
    """`count` hosts with `env` plus a private Redis and TRUSTED_PROXIES set to the proxy,
    behind HAProxy; all stopped after the block."""
    subnet = Subnet.pick()
    with own_redis(workdir) as redis_server:
        env = env.with_changes(redis_url=redis_server.url, extra={**env.extra, "TRUSTED_PROXIES": subnet.proxy_source})
        specs = [ServerSpec(env=env, workdir=workdir, workers=WORKERS, host=subnet.host(n)) for n in range(count)]
        servers = [start_server(spec) for spec in specs]
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S * 2
            for server in servers:
                wait_until_healthy(server, deadline=deadline)
            specs = [replace(spec, port=server.port) for spec, server in zip(specs, servers, strict=True)]
            backends = [Backend(Hosts.name(n), subnet.host(n), server.port) for n, server in enumerate(servers)]
            with running_haproxy(workdir, subnet=subnet, backends=backends) as proxy:
                hosts = Hosts(subnet=subnet, specs=specs, servers=servers, proxy=proxy)
                proxy.wait_for(hosts.all_up())
                yield hosts
        finally:
            stop_servers(servers)
