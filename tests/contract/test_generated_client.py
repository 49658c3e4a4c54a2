"""A client generated from /openapi.json by openapi-python-client walks every list.

The generator runs as a client developer would run it, on the document the real server
serves; the generated package is imported and its functions (named after the
operationIds: `list_sessions`, `get_session`, ...) read every page of every list and one
record of each type from the real server.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.contract.campaign import RESOURCE_PATHS, VISIBLE_ID, expected_list
from tests.contract.server import ApiServer

pytestmark = pytest.mark.xdist_group("contract")

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "campaign_client"
PAGE_SIZE = 7
GENERATE_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def generated(api: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client package generated from this server's document, importable."""
    workdir = tmp_path_factory.mktemp("generated-client")
    document = httpx.get(f"{api.base_url}/openapi.json", timeout=15).raise_for_status()
    (workdir / "openapi.json").write_bytes(document.content)
    # No post hooks: formatting the generated code (ruff) is the developer's business.
    config = {"post_hooks": [], "package_name_override": PACKAGE, "project_name_override": PACKAGE}
    (workdir / "config.json").write_text(json.dumps(config))
    completed = subprocess.run(
        [str(GENERATOR), "generate", "--path", "openapi.json", "--meta", "none", "--config", "config.json",
         "--output-path", f"packages/{PACKAGE}"],
        cwd=workdir, capture_output=True, text=True, timeout=GENERATE_TIMEOUT_S, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Warning" not in completed.stdout + completed.stderr, completed.stdout + completed.stderr
    sys.path.insert(0, str(workdir / "packages"))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(workdir / "packages"))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def _operation(path: str, prefix: str) -> Any:
    """`api.sessions.list_sessions` for ("sessions", "list"), `api.sessions.get_session` for "get"."""
    name = path if prefix == "list" else path.removesuffix("s")
    return importlib.import_module(f"{PACKAGE}.api.{path}.{prefix}_{name}")


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """A body record with its timestamps as datetimes, as the generated models hold them."""
    return {
        key: datetime.fromisoformat(value) if key.endswith(("_at", "_date")) and value is not None else value
        for key, value in record.items()
    }


@pytest.mark.parametrize("path", RESOURCE_PATHS)
def test_walk_every_page_of_every_list(generated: ModuleType, api: ApiServer, token_a: str, path: str) -> None:
    client = generated.AuthenticatedClient(base_url=api.base_url, token=token_a, raise_on_unexpected_status=True)
    list_records = _operation(path, "list")
    records: list[Any] = []
    cursor: Any = generated.types.UNSET
    with client:
        while True:
            response = list_records.sync_detailed(client=client, limit=PAGE_SIZE, cursor=cursor, x_request_id="walk-1")
            assert response.status_code == 200
            assert response.headers["x-request-id"] == "walk-1"
            page = response.parsed
            records.extend(page.data)
            if not page.pagination.has_more:
                break
            cursor = page.pagination.next_cursor
    expected = expected_list(path)
    assert [record.id for record in records] == [record["id"] for record in expected]
    assert [_plain(record.to_dict()) for record in records] == [_plain(record) for record in expected]


@pytest.mark.parametrize("path", RESOURCE_PATHS)
def test_get_one_record_and_a_documented_404(generated: ModuleType, api: ApiServer, token_a: str, path: str) -> None:
    client = generated.AuthenticatedClient(base_url=api.base_url, token=token_a)
    get_record = _operation(path, "get")
    with client:
        record = get_record.sync(VISIBLE_ID[path], client=client)
        missing = get_record.sync_detailed("no-such-record", client=client)
    assert record.id == VISIBLE_ID[path]
    assert missing.status_code == 404
    assert isinstance(missing.parsed, generated.models.ErrorBody)
