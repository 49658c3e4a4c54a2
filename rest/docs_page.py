"""`/docs`: Swagger UI over /openapi.json, with its assets from this server (no CDN).

FastAPI's own docs page loads Swagger UI from a CDN, so it is turned off in create_app.
"Authorize" takes the API key for the `bearerAuth` scheme; it is kept in the page only
(`persistAuthorization` off), and "Try it out" calls this same host.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import HTMLResponse

from rest.ui_assets import SWAGGER_UI_ASSETS, href, missing_assets, missing_assets_page, script_json

TITLE = "Campaign wiki public API"
DOCS_PATH = "/docs"


def docs_page(*, openapi_url: str) -> str:
    """The Swagger UI page, or instructions to install its assets when they are missing."""
    missing = missing_assets(SWAGGER_UI_ASSETS)
    if missing:
        return missing_assets_page(title="The API documentation page", missing=missing)
    bundle, preset, css = (href(asset) for asset in SWAGGER_UI_ASSETS)
    # Relative to /docs, so the page also works under a proxy's path prefix.
    config = {
        "url": openapi_url.lstrip("/"),
        "dom_id": "#swagger-ui",
        "layout": "BaseLayout",
        "deepLinking": True,
        "docExpansion": "list",
        "persistAuthorization": False,
        "displayRequestDuration": True,
        # The default sends the document to an online validator: nothing leaves the host.
        "validatorUrl": None,
    }
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>{TITLE}: documentation</title>
<link rel="stylesheet" href="{css}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{bundle}"></script>
<script src="{preset}"></script>
<script>
(function () {{
  "use strict";
  var config = {script_json(config)};
  config.presets = [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset];
  config.plugins = [SwaggerUIBundle.plugins.DownloadUrl];
  window.ui = SwaggerUIBundle(config);
}})();
</script>
</body>
</html>
"""


def build_docs_router(*, openapi_url: str) -> APIRouter:
    async def docs() -> HTMLResponse:
        return HTMLResponse(docs_page(openapi_url=openapi_url))

    router = APIRouter(include_in_schema=False)
    router.add_api_route(DOCS_PATH, docs, methods=["GET"])
    return router
