"""The operator's install: a wheel, installed (not editable) into a fresh environment, runs
the whole workflow from an empty directory, with nothing of the checkout on its path.

Offline: the wheel is built without build isolation from a copy of the checkout (the UI
assets `make install` fetched are in it), and installed without dependencies into a venv
that reaches the development venv's libraries through a .pth file: the same versions,
nothing downloaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_PEPPER
from tests.contract.server import ApiServer, free_port, wait_until_healthy

PROJECT_ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", "artifacts", ".*_cache", "*.db", ".env"
)
SCRIPT_SRC = re.compile(r'<script src="([^"]+)"')
STARTUP_S = 60.0

pytestmark = pytest.mark.xdist_group("wheel")


@dataclass(frozen=True, slots=True)
class Installed:
    venv: Path

    @property
    def cli(self) -> Path:
        return self.venv / "bin" / "campaign-api"

    def run(self, workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.cli), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=120, check=False
        )


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(PROJECT_ROOT, source, symlinks=True, ignore=NOT_SOURCES)
    wheels = root / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels), str(source)],
        check=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("campaign_api-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300
    )
    (_site_packages(python) / "development-libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(venv)


@pytest.fixture
def empty_dir(tmp_path: Path) -> Path:
    workdir = tmp_path / "operator"
    workdir.mkdir()
    return workdir


def operator_env(workdir: Path, **variables: str) -> dict[str, str]:
    """What an operator's shell has: no PYTHONPATH, no virtualenv of the checkout."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "LOG_LEVEL": "WARNING", **variables}


@contextmanager
def installed_server(installed: Installed, workdir: Path, env: dict[str, str], *args: str) -> Iterator[ApiServer]:
    """`campaign-api <args>` of the installed package, serving on a free port until the block ends."""
    port = free_port()
    log_path = workdir.parent / f"server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(installed.cli), *args, "--port", str(port)],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = ApiServer(base_url=f"http://127.0.0.1:{port}", port=port, log_path=log_path, process=process)
    try:
        wait_until_healthy(server, deadline=time.monotonic() + STARTUP_S)
        yield server
    finally:
        server.stop()


def assert_page_scripts_served(client: httpx.Client, path: str) -> None:
    page = client.get(path, headers={"Accept": "text/html"})
    assert page.status_code == 200
    scripts = [src for src in SCRIPT_SRC.findall(page.text) if "static/vendor/" in src]
    assert scripts, f"{path} names no vendored script"
    for src in scripts:
        asset = client.get("/" + src.lstrip("./").removeprefix("/"))
        assert asset.status_code == 200, src
        assert len(asset.content) > 1000


def test_the_package_comes_from_the_wheel(installed: Installed, empty_dir: Path) -> None:
    python = installed.venv / "bin" / "python"
    code = (
        "import engine, graphql_schema, rest; print(json.dumps([m.__file__ for m in (engine, graphql_schema, rest)]))"
    )
    output = subprocess.run(
        [str(python), "-c", f"import json\n{code}"],
        cwd=empty_dir,
        env=operator_env(empty_dir),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    site = str(_site_packages(python))
    assert all(path.startswith(site) for path in json.loads(output))


def test_operator_workflow_from_an_empty_directory(installed: Installed, empty_dir: Path) -> None:
    export = empty_dir.parent / "export.json"
    shutil.copyfile(PROJECT_ROOT / "engine" / "demo" / "campaign.json", export)
    env = operator_env(
        empty_dir, DATABASE_URL=f"sqlite+aiosqlite:///{empty_dir / 'campaign.db'}", API_KEY_PEPPER=TEST_PEPPER
    )

    upgraded = installed.run(empty_dir, env, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    imported = installed.run(empty_dir, env, "import", str(export))
    assert imported.returncode == 0, imported.stderr
    created = installed.run(empty_dir, env, "keys", "create", "--campaign", "ashfall", "--owner", "mara")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    listed = installed.run(empty_dir, env, "keys", "list", "--json")
    assert listed.returncode == 0 and len(json.loads(listed.stdout)) == 1
    checked = installed.run(empty_dir, env, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    with (
        installed_server(installed, empty_dir, env, "serve") as server,
        httpx.Client(base_url=server.base_url, timeout=10) as client,
    ):
        sessions = client.get("/api/public/v1/sessions", headers={"Authorization": f"Bearer {token}"})
        assert sessions.status_code == 200 and sessions.json()["data"]
        assert_page_scripts_served(client, "/docs")
        assert_page_scripts_served(client, "/graphql")
    assert sorted(os.listdir(empty_dir)) == ["campaign.db"]


def test_demo_from_an_empty_directory_with_no_configuration(installed: Installed, empty_dir: Path) -> None:
    with installed_server(installed, empty_dir, operator_env(empty_dir), "demo") as server:
        token = next(line for line in server.log_text().splitlines() if line.startswith("API key")).split(":", 1)[1]
        with httpx.Client(base_url=server.base_url, timeout=10) as client:
            sessions = client.get("/api/public/v1/sessions", headers={"Authorization": f"Bearer {token.strip()}"})
        assert sessions.status_code == 200 and sessions.json()["data"]
