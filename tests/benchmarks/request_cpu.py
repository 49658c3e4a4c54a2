"""Server CPU per request, end to end, on one worker: a focused figure for comparing two
versions of the request path (what `make bench` measures in full, in a minute).

`campaign-api serve` (one worker, Redis limits, SQLite with the demo campaign) is driven by
wrk on one authenticated REST read; the figure is the server process's user+system CPU
(/proc) divided by the requests wrk completed, for each of several rounds.

    python tests/benchmarks/request_cpu.py [--rounds 5] [--seconds 8] [--connections 16]

Loopback only; bounded by rounds x seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.conftest import TEST_PEPPER
from tests.contract.server import free_port
from tests.services import REDIS_URL

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "campaign-api"
DEMO_EXPORT = PROJECT_ROOT / "engine" / "demo" / "campaign.json"
UNLIMITED = "100000000 per minute"
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime, stime


def requests_done(wrk_output: str) -> int:
    match = re.search(r"(\d+) requests in", wrk_output)
    assert match is not None, wrk_output
    return int(match.group(1))


def run(arguments: argparse.Namespace) -> list[float]:
    workdir = Path(tempfile.mkdtemp(prefix="request-cpu-"))
    env = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": f"sqlite+aiosqlite:///{workdir / 'bench.db'}",
        "API_KEY_PEPPER": TEST_PEPPER,
        "REDIS_URL": REDIS_URL,
        "LOG_LEVEL": "WARNING",
        **{f"RATE_LIMIT_{name}": UNLIMITED for name in ("IP", "FAILED_AUTH", "KEY", "OWNER")},
    }

    def cli(*args: str) -> str:
        completed = subprocess.run([str(CLI), *args], env=env, cwd=workdir, capture_output=True, text=True, check=True)
        return completed.stdout

    cli("db", "upgrade")
    cli("import", str(DEMO_EXPORT))
    token = cli("keys", "create", "--campaign", "ashfall", "--owner", "mara").strip()
    port = free_port()
    server = subprocess.Popen(
        [str(CLI), "serve", "--port", str(port)],
        env=env,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api/public/v1/sessions"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        wrk = ["wrk", "-t1", f"-c{arguments.connections}", "-H", f"Authorization: Bearer {token}", url]
        subprocess.run([*wrk[:-1], "-d2s", url], capture_output=True, check=True)  # warm-up
        figures = []
        for _ in range(arguments.rounds):
            before = process_cpu_s(server.pid)
            output = subprocess.run([*wrk[:-1], f"-d{arguments.seconds}s", url], capture_output=True, text=True)
            assert "Non-2xx" not in output.stdout, output.stdout
            figures.append((process_cpu_s(server.pid) - before) / requests_done(output.stdout) * 1e6)
        return figures
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    figures = run(parser.parse_args())
    rounded = ", ".join(f"{figure:.0f}" for figure in figures)
    print(f"server CPU per request: median {statistics.median(figures):.0f} us, min {min(figures):.0f} us ({rounded})")


if __name__ == "__main__":
    main()
