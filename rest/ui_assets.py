"""The browser assets of the GraphiQL and /docs pages, served by the service itself.

scripts/fetch_ui_assets.py (run by `make install`) puts pinned, integrity-checked npm
files in rest/static/vendor/; nothing is loaded from a CDN, so the pages work behind a
firewall. Without the files a page explains how to get them instead of rendering blank.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from fastapi import APIRouter

from rest.vendor_files import VENDOR_URL, build_vendor_router, versioned_path

VENDOR_DIR = Path(__file__).resolve().parent / "static" / "vendor"

REACT = ("react/react.production.min.js", "react-dom/react-dom.production.min.js")
GRAPHIQL_ASSETS = (*REACT, "graphiql/graphiql.min.js", "graphiql/graphiql.min.css")
SWAGGER_UI_ASSETS = (
    "swagger-ui/swagger-ui-bundle.js",
    "swagger-ui/swagger-ui-standalone-preset.js",
    "swagger-ui/swagger-ui.css",
)


def href(asset: str) -> str:
    """The versioned URL of an installed asset, relative to the pages (/graphql, /docs sit
    at the root, so links keep working when a proxy serves the API under a path prefix)."""
    return versioned_path(VENDOR_DIR, asset)


def missing_assets(assets: tuple[str, ...], *, vendor_dir: Path | None = None) -> list[str]:
    directory = VENDOR_DIR if vendor_dir is None else vendor_dir
    return [asset for asset in assets if not (directory / asset).is_file()]


def script_json(value: object) -> str:
    """A JSON literal safe inside a <script> element (no `</script>` can close it early)."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def missing_assets_page(*, title: str, missing: list[str]) -> str:
    """What a browser gets instead of a blank page when the assets were never fetched."""
    items = "\n".join(f"<li><code>{html.escape(VENDOR_URL + '/' + asset)}</code></li>" for asset in missing)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{html.escape(title)}: assets not installed</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46rem; margin: 3rem auto; padding: 0 1rem;
       line-height: 1.5; color: #1f2937; }}
code, pre {{ background: #f3f4f6; border-radius: 4px; padding: 0.1rem 0.3rem; }}
pre {{ padding: 0.75rem 1rem; }}
</style>
</head>
<body>
<h1>{html.escape(title)} is not available yet</h1>
<p>This page is served without any CDN: its JavaScript and CSS come from this server,
and they have not been installed here. Missing:</p>
<ul>
{items}
</ul>
<p>Install them (pinned, integrity-checked npm packages) in the project directory with</p>
<pre>make install</pre>
<p>or directly with</p>
<pre>python scripts/fetch_ui_assets.py</pre>
<p>then reload this page. The API itself works without them.</p>
</body>
</html>
"""


def build_assets_router() -> APIRouter:
    """The vendored files under versioned URLs (public code, no secrets). The service
    starts, and its JSON API works, before they are installed."""
    return build_vendor_router(VENDOR_DIR)
