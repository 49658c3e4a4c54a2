"""The vendored UI files, served under URLs that name their content.

`/static/vendor/<digest>/<path>`: the digest is the start of the file's sha256, so a
browser (and any cache on the way) may keep the file for a year without asking again
(`Cache-Control: public, max-age=31536000, immutable`); new content is a new URL, which
the pages link. A URL whose digest is not that of the file on disk now is a 404, never
the new content under an old name. Each file is read once per process, with its digest,
and kept in memory with its gzip (compressed once, at the highest level: 6.2 MB of scripts
and stylesheets become 1.6 MB) for clients that accept it.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import mimetypes
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from starlette.responses import Response

from rest.compression import accept_encoding_of, accepted_encodings, varies_by_encoding

VENDOR_URL = "/static/vendor"
IMMUTABLE = "public, max-age=31536000, immutable"
DIGEST_LENGTH = 16  # hex digits of sha256: 64 bits, collisions are not a concern here


class VendorFile:
    """One file's bytes, digest and media type; its gzip made on first use."""

    def __init__(self, content: bytes, media_type: str) -> None:
        self.content = content
        self.media_type = media_type
        self.digest = hashlib.sha256(content).hexdigest()[:DIGEST_LENGTH]

    @functools.cached_property
    def gzipped(self) -> bytes:
        return gzip.compress(self.content, compresslevel=9, mtime=0)


class VendorFiles:
    """The files of one directory, each read once (a file not there yet is looked up again)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._loaded: dict[str, VendorFile] = {}

    def get(self, relative: str) -> VendorFile | None:
        """The file at `relative`, spelled canonically (no `.`, `..` or doubled slashes:
        one name per file, so one copy of it in memory), inside the directory."""
        found = self._loaded.get(relative)
        if found is not None:
            return found
        root = self.directory.resolve()
        path = (root / relative).resolve()
        if not path.is_relative_to(root) or path.relative_to(root).as_posix() != relative or not path.is_file():
            return None
        media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        found = self._loaded[relative] = VendorFile(path.read_bytes(), media_type)
        return found


@functools.cache
def vendor_files(directory: Path) -> VendorFiles:
    return VendorFiles(directory)


def versioned_path(directory: Path, relative: str) -> str:
    """Where the page links `relative`: `static/vendor/<digest>/<relative>`, relative to
    the page (so it keeps working under a proxy's path prefix). The file must exist."""
    found = vendor_files(directory).get(relative)
    assert found is not None, f"{relative} is not in {directory}"
    return f"{VENDOR_URL.lstrip('/')}/{found.digest}/{relative}"


def build_vendor_router(directory: Path) -> APIRouter:
    async def vendor_file(request: Request, digest: str, path: str) -> Response:
        found = vendor_files(directory).get(path)
        if found is None or found.digest != digest:
            raise HTTPException(status_code=404)
        headers = {"Cache-Control": IMMUTABLE}
        accepted = accepted_encodings(accept_encoding_of(request.scope))
        body = found.content
        if varies_by_encoding(accepted, len(body)):
            headers["Vary"] = "Accept-Encoding"
        if accepted.use_gzip(len(body)):
            body, headers["Content-Encoding"] = found.gzipped, "gzip"
        return Response(body, media_type=found.media_type, headers=headers)

    router = APIRouter(include_in_schema=False)
    router.add_api_route(f"{VENDOR_URL}/{{digest}}/{{path:path}}", vendor_file, methods=["GET"])
    return router
