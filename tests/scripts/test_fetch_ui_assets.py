"""scripts/fetch_ui_assets.py without the network: integrity, extraction, idempotence."""

from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fetch_ui_assets.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fetch_ui_assets", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fetch_ui_assets"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


fetch = _load_script()


def _tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """One small package pinned to its real digest, 'fetched' from memory."""
    data = _tarball({"package/dist/app.js": b"console.log(1)", "package/LICENSE": b"MIT", "package/evil.js": b"x"})
    package = fetch.Package(
        name="demo",
        version="1.0.0",
        integrity=fetch.sri_sha512(data),
        files={"package/dist/app.js": "demo/app.js", "package/LICENSE": "demo/LICENSE"},
    )
    tarballs = {"demo@1.0.0": data}
    monkeypatch.setattr(fetch, "PACKAGES", (package,))
    monkeypatch.setattr(fetch.shutil, "which", lambda _name: None)  # no npm: the download path
    monkeypatch.setattr(fetch, "_download", lambda pkg, _registry: tarballs[pkg.spec])
    return tarballs


def test_sri_matches_npm_format() -> None:
    assert fetch.sri_sha512(b"") == (
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
    )


def test_every_pin_is_a_sha512_integrity() -> None:
    for package in fetch.PACKAGES:
        assert package.integrity.startswith("sha512-") and len(package.integrity) == 95


def test_installs_only_the_listed_files_then_is_idempotent(tmp_path: Path, fake_registry: dict[str, bytes]) -> None:
    assert fetch.main(["--dest", str(tmp_path)]) == 0
    assert (tmp_path / "demo" / "app.js").read_bytes() == b"console.log(1)"
    assert not list(tmp_path.rglob("evil.js"))
    assert fetch.is_up_to_date(tmp_path)

    fake_registry.clear()  # a second run must not fetch anything
    assert fetch.main(["--dest", str(tmp_path)]) == 0


def test_a_modified_file_is_fetched_again(tmp_path: Path, fake_registry: dict[str, bytes]) -> None:
    assert fetch.main(["--dest", str(tmp_path)]) == 0
    (tmp_path / "demo" / "app.js").write_text("tampered")
    assert not fetch.is_up_to_date(tmp_path)
    assert fetch.main(["--dest", str(tmp_path)]) == 0
    assert (tmp_path / "demo" / "app.js").read_bytes() == b"console.log(1)"


def test_an_integrity_mismatch_installs_nothing(
    tmp_path: Path, fake_registry: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_registry["demo@1.0.0"] = _tarball({"package/dist/app.js": b"malicious", "package/LICENSE": b"MIT"})
    assert fetch.main(["--dest", str(tmp_path)]) == 1
    assert "integrity mismatch" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()
