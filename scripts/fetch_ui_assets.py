#!/usr/bin/env python3
"""Fetch the browser assets of GraphiQL (/graphql) and Swagger UI (/docs) at install time.

The service serves them from rest/static/vendor/ so the pages work behind a firewall and
load nothing from outside the host. Each package is a pinned npm tarball whose sha512 is
checked against the table below (committed here, never fetched at run time); only the
files the pages need are extracted. Running it again with the files in place and matching
the manifest does nothing and needs no network.

    python scripts/fetch_ui_assets.py            # `make install` runs this
    python scripts/fetch_ui_assets.py --force    # fetch and extract again

Tarballs come from `npm pack` (so the npm client's own registry and proxy settings apply)
or, when npm is absent, straight from the registry's tarball URL.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

VENDOR_DIR = Path(__file__).resolve().parent.parent / "rest" / "static" / "vendor"
MANIFEST = "manifest.json"
DEFAULT_REGISTRY = "https://registry.npmjs.org"


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    version: str
    integrity: str  # the registry's `dist.integrity` (sha512 SRI) of the tarball
    files: dict[str, str]  # path inside the tarball -> path under VENDOR_DIR

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def tarball_url_path(self) -> str:
        return f"/{self.name}/-/{self.name}-{self.version}.tgz"


PACKAGES = (
    Package(
        name="react",
        version="18.2.0",
        integrity="sha512-/3IjMdb2L9QbBdWiW5e3P2/npwMBaU9mHCSCUzNln0ZCYbcfTsGbTJrU/kGemdH2IWmB2ioZ+zkxtmq6g09fGQ==",
        files={
            "package/umd/react.production.min.js": "react/react.production.min.js",
            "package/LICENSE": "react/LICENSE",
        },
    ),
    Package(
        name="react-dom",
        version="18.2.0",
        integrity="sha512-6IMTriUmvsjHUjNtEDudZfuDQUoWXVxKHhlEGSk81n4YFS+r/Kl99wXiwlVXtPBtJenozv2P+hxDsw9eA7Xo6g==",
        files={
            "package/umd/react-dom.production.min.js": "react-dom/react-dom.production.min.js",
            "package/LICENSE": "react-dom/LICENSE",
        },
    ),
    Package(
        name="graphiql",
        version="3.8.3",
        integrity="sha512-cuPDYtXVKV86Pu5PHBX642Odi/uVEE2y1Jxq5rGO/Qy1G2lRp7ZZ7a/T30RzxhuLSWo9zUbzq0P3U49//H0Ugw==",
        files={
            "package/graphiql.min.js": "graphiql/graphiql.min.js",
            "package/graphiql.min.css": "graphiql/graphiql.min.css",
            "package/LICENSE": "graphiql/LICENSE",
        },
    ),
    Package(
        name="swagger-ui-dist",
        version="5.34.1",
        integrity="sha512-VSr8fXfI93obYaQicLJbLUKGRxDojj/SfRJDDLCioGTUBj4BK/Nj4eE9jCeCAnJxVLi7iS+08PbiZLyrQKBkJQ==",
        files={
            "package/swagger-ui-bundle.js": "swagger-ui/swagger-ui-bundle.js",
            "package/swagger-ui-standalone-preset.js": "swagger-ui/swagger-ui-standalone-preset.js",
            "package/swagger-ui.css": "swagger-ui/swagger-ui.css",
            "package/LICENSE": "swagger-ui/LICENSE",
            "package/NOTICE": "swagger-ui/NOTICE",
        },
    ),
)


class AssetError(Exception):
    """A tarball could not be fetched, failed its integrity check or lacks a file."""


def sri_sha512(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _expected_manifest() -> dict[str, str]:
    return {package.spec: package.integrity for package in PACKAGES}


def is_up_to_date(vendor_dir: Path) -> bool:
    """Whether every pinned file is in place, unmodified, from the pinned tarballs."""
    try:
        manifest = json.loads((vendor_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("packages") != _expected_manifest():
        return False
    files: dict[str, str] = manifest.get("files", {})
    wanted = {target for package in PACKAGES for target in package.files.values()}
    if set(files) != wanted:
        return False
    return all((vendor_dir / name).is_file() and _sha256(vendor_dir / name) == digest for name, digest in files.items())


def _npm_pack(package: Package, workdir: Path) -> bytes:
    # --ignore-scripts: packing runs no lifecycle script of the package.
    completed = subprocess.run(  # noqa: S603 (fixed argument list, no shell)
        ["npm", "pack", package.spec, "--json", "--ignore-scripts", "--pack-destination", str(workdir)],  # noqa: S607 (the user's npm)
        check=False,
        capture_output=True,
        text=True,
        cwd=workdir,
    )
    if completed.returncode != 0:
        raise AssetError(f"npm pack {package.spec} failed: {completed.stderr.strip()[-500:]}")
    filename = json.loads(completed.stdout)[0]["filename"]
    return (workdir / filename).read_bytes()


def _download(package: Package, registry: str) -> bytes:
    url = registry.rstrip("/") + package.tarball_url_path
    if not url.startswith("https://"):
        raise AssetError(f"refusing a non-HTTPS registry: {registry}")
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (HTTPS checked above)
        return response.read()  # type: ignore[no-any-return]


def fetch_tarball(package: Package, *, workdir: Path, registry: str) -> bytes:
    """The package's tarball, verified against its pinned sha512."""
    data = _npm_pack(package, workdir) if shutil.which("npm") else _download(package, registry)
    actual = sri_sha512(data)
    if actual != package.integrity:
        raise AssetError(f"{package.spec}: integrity mismatch (expected {package.integrity}, got {actual})")
    return data


def extract(package: Package, tarball: Path, staging: Path) -> None:
    """Copy only the listed members out of the tarball (no extractall: no path games)."""
    with tarfile.open(tarball, mode="r:gz") as archive:
        for member_name, target in package.files.items():
            try:
                member = archive.getmember(member_name)
            except KeyError:
                member = None
            if member is None or not member.isfile():
                raise AssetError(f"{package.spec}: {member_name} is missing from the tarball")
            source = archive.extractfile(member)
            assert source is not None
            destination = staging / target
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(source.read())


def install(vendor_dir: Path, *, registry: str) -> None:
    with tempfile.TemporaryDirectory(prefix="campaign-ui-assets-") as temp:
        workdir = Path(temp)
        staging = workdir / "staging"
        for package in PACKAGES:
            print(f"ui-assets: fetching {package.spec}", file=sys.stderr)
            tarball = workdir / f"{package.name}-{package.version}.verified.tgz"
            tarball.write_bytes(fetch_tarball(package, workdir=workdir, registry=registry))
            extract(package, tarball, staging)
        # Everything fetched and verified: only now replace what is in place.
        vendor_dir.mkdir(parents=True, exist_ok=True)
        digests: dict[str, str] = {}
        for package in PACKAGES:
            for target in package.files.values():
                destination = vendor_dir / target
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / target, destination)
                digests[target] = _sha256(destination)
        manifest = {"packages": _expected_manifest(), "files": dict(sorted(digests.items()))}
        (vendor_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="fetch again even when up to date")
    parser.add_argument("--dest", type=Path, default=VENDOR_DIR, help="where to put the assets")
    parser.add_argument(
        "--registry", default=DEFAULT_REGISTRY, help="npm registry to download from when npm is not installed"
    )
    args = parser.parse_args(argv)
    if not args.force and is_up_to_date(args.dest):
        print(f"ui-assets: up to date in {args.dest}", file=sys.stderr)
        return 0
    try:
        install(args.dest, registry=args.registry)
    except (AssetError, OSError, tarfile.TarError) as exc:
        print(f"ui-assets: {exc}", file=sys.stderr)
        return 1
    print(f"ui-assets: installed in {args.dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
