"""The GraphiQL page served on a browser GET of /graphql, with its assets from this server.

It opens with an `Authorization: Bearer ` header to complete in the headers editor and an
example query. The key is never stored in the browser: `shouldPersistHeaders` stays off,
and GraphiQL's history (which keeps headers regardless) is saved without them. Until a
key is filled in, requests are not sent and the result pane says what to do; once the
header holds a well-formed key, the schema is loaded for completion and the docs.
"""

from __future__ import annotations

from functools import cache

from rest.ui_assets import GRAPHIQL_ASSETS, href, missing_assets, missing_assets_page, script_json

TITLE = "Campaign wiki GraphiQL"

EXAMPLE_QUERY = """# 1. In Headers (below), put your API key after "Bearer ".
# 2. Run with the play button or Ctrl-Enter.
query Example {
  sessions(limit: 5) {
    data {
      id
      title
      recordingDate
    }
    pagination {
      nextCursor
      hasMore
    }
  }
  locations(limit: 1) {
    data {
      id
      name
      children {
        id
        name
      }
    }
  }
}
"""

DEFAULT_HEADERS = '{\n  "Authorization": "Bearer "\n}'

NO_KEY_MESSAGE = (
    'Add your API key after "Bearer " in the Headers tab below, then run the query again. '
    "The schema (completion and docs) loads as soon as the header holds a key."
)

# Mirrors engine.keys._TOKEN_SHAPE: the schema is only requested with a complete key, so
# typing one does not spend the failed-authentication limit on its prefixes.
KEY_SHAPE = r"^cpk_[a-z2-7]{12}_[A-Za-z0-9_-]{43}$"

_SCRIPT = """
(function () {
  "use strict";
  var config = __CONFIG__;
  var keyShape = new RegExp(config.keyShape);
  var endpoint = window.location.pathname;
  var httpFetcher = GraphiQL.createFetcher({ url: endpoint, enableIncrementalDelivery: false });

  function bearerToken(headers) {
    if (!headers) return "";
    for (var name in headers) {
      if (name.toLowerCase() === "authorization" && typeof headers[name] === "string") {
        var match = /^\\s*bearer\\s+(\\S+)\\s*$/i.exec(headers[name]);
        return match ? match[1] : "";
      }
    }
    return "";
  }

  function headersOf(text) {
    try { return JSON.parse(text || "{}"); } catch (error) { return null; }
  }

  // GraphiQL's storage, minus every "headers" field: history entries would keep the key.
  function withoutHeaders(value) {
    if (Array.isArray(value)) return value.map(withoutHeaders);
    if (value === null || typeof value !== "object") return value;
    var copy = {};
    for (var name in value) if (name !== "headers") copy[name] = withoutHeaders(value[name]);
    return copy;
  }
  var storage = {
    getItem: function (key) { return window.localStorage.getItem(key); },
    setItem: function (key, value) {
      if (key === "graphiql:headers") return;
      var parsed;
      try { parsed = JSON.parse(value); } catch (error) { parsed = undefined; }
      var kept = parsed !== null && typeof parsed === "object" ? JSON.stringify(withoutHeaders(parsed)) : value;
      window.localStorage.setItem(key, kept);
    },
    removeItem: function (key) { window.localStorage.removeItem(key); },
    clear: function () {
      Object.keys(window.localStorage).forEach(function (key) {
        if (key.indexOf("graphiql:") === 0) window.localStorage.removeItem(key);
      });
    },
    get length() { return window.localStorage.length; }
  };

  // The operations a document defines, in order: each one's name, or null when it has
  // none. A small GraphQL tokenizer: comments and strings are skipped, and only the top
  // level counts (a name inside a selection, arguments or variables never does).
  var TRIPLE = '"' + '""';
  var NAME_START = /[_A-Za-z]/, NAME_PART = /[_0-9A-Za-z]/, IGNORED = /[\\s,\\uFEFF]/;
  function operationNames(document) {
    var names = [], depth = 0, inHeader = false, expectName = false, i = 0, n = document.length;
    while (i < n) {
      var ch = document[i];
      if (ch === "#") {
        while (i < n && document[i] !== "\\n" && document[i] !== "\\r") i++;
        continue;
      }
      if (document.startsWith(TRIPLE, i)) {
        i += 3;
        while (i < n && !document.startsWith(TRIPLE, i)) i += document.startsWith("\\\\" + TRIPLE, i) ? 4 : 1;
        i += 3;
        expectName = false;
        continue;
      }
      if (ch === '"') {
        i++;
        while (i < n && document[i] !== '"' && document[i] !== "\\n") i += document[i] === "\\\\" ? 2 : 1;
        i++;
        expectName = false;
        continue;
      }
      if (ch === "$" || ch === "@" || NAME_START.test(ch)) {
        var start = i++;
        while (i < n && NAME_PART.test(document[i])) i++;
        var word = document.slice(start, i);
        if (depth === 0) {
          if (expectName && NAME_START.test(word[0])) names[names.length - 1] = word;
          var operation = !inHeader && (word === "query" || word === "mutation" || word === "subscription");
          if (operation) names.push(null);
          if (operation || (!inHeader && word === "fragment")) inHeader = true;
          expectName = operation;
        }
        continue;
      }
      if (ch === "{" || ch === "(" || ch === "[") {
        if (depth === 0 && ch === "{") {
          if (!inHeader) names.push(null);  // a query written as a bare selection set
          inHeader = false;
        }
        depth++;
      } else if (ch === "}" || ch === ")" || ch === "]") {
        depth--;
      }
      if (!IGNORED.test(ch)) expectName = false;
      i++;
    }
    return names;
  }

  // GraphiQL keeps the operation name of a document after it is edited away; a name the
  // document does not define makes the server refuse the request. Send the name only when
  // the document defines it; a document of one operation runs that operation.
  function withOwnOperationName(params) {
    var names = operationNames(params.query || "");
    if (params.operationName && names.indexOf(params.operationName) !== -1) return params;
    var own = Object.assign({}, params);
    if (names.length === 1 && names[0]) own.operationName = names[0];
    else delete own.operationName;
    return own;
  }

  var schemaToken = null;
  function makeFetcher() {
    return function fetcher(params, options) {
      var token = bearerToken(options && options.headers);
      if (!token) return Promise.resolve({ errors: [{ message: config.noKeyMessage }] });
      if (params && params.operationName === "IntrospectionQuery") {
        schemaToken = token;
        return httpFetcher(params, options);
      }
      return httpFetcher(withOwnOperationName(params), options);
    };
  }

  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  var timer = null;
  function render(fetcher) {
    root.render(React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: config.query,
      defaultHeaders: config.headers,
      shouldPersistHeaders: false,
      storage: storage,
      isHeadersEditorEnabled: true,
      defaultEditorToolsVisibility: "headers",
      onEditHeaders: onEditHeaders
    }));
  }
  // A new fetcher makes GraphiQL load the schema again, now with the key just entered.
  function onEditHeaders(text) {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var token = bearerToken(headersOf(text));
      if (keyShape.test(token) && token !== schemaToken) render(makeFetcher());
    }, 400);
  }
  render(makeFetcher());
})();
"""


def _page() -> str:
    config = {"query": EXAMPLE_QUERY, "headers": DEFAULT_HEADERS, "noKeyMessage": NO_KEY_MESSAGE, "keyShape": KEY_SHAPE}
    react, react_dom, graphiql_js, graphiql_css = (href(asset) for asset in GRAPHIQL_ASSETS)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>{TITLE}</title>
<link rel="stylesheet" href="{graphiql_css}">
<style>
html, body {{ height: 100%; margin: 0; overflow: hidden; }}
#graphiql {{ height: 100vh; }}
</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script src="{react}"></script>
<script src="{react_dom}"></script>
<script src="{graphiql_js}"></script>
<script>{_SCRIPT.replace("__CONFIG__", script_json(config))}</script>
</body>
</html>
"""


@cache
def _installed_page() -> str:
    return _page()


def graphiql_page() -> str:
    """The GraphiQL page, or instructions to install its assets when they are missing."""
    missing = missing_assets(GRAPHIQL_ASSETS)
    if missing:
        return missing_assets_page(title="GraphiQL", missing=missing)
    return _installed_page()
