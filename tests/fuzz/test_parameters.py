"""Property tests of the REST inputs a client controls: `limit`, `cursor`, the record id
and the `Authorization` header.

Whatever the input, the answer is a documented status with its exact body, never a 500.
Each oracle is written from the spec, not from the code: a limit is valid when it is an
optionally signed run of ASCII digits worth at least 1; a cursor that does not decode to a
JSON array starting with a non-negative integer is invalid; an id that is not a visible
record of the key's campaign is the resource's 404; a header that is not `Bearer` (any
case), spaces and the exact token is a 401. The app runs in-process (httpx ASGITransport)
on the world's SQLite and PostgreSQL databases.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, quote, quote_from_bytes

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.security.world import PREFIX, RECORD_TYPES, RecordType, World, asgi_client, settings_for

LIMIT_BODY = b'{"error":"limit must be a positive integer"}'
CURSOR_BODY = b'{"error":"Invalid cursor"}'
UNAUTHORIZED_BODY = b'{"error":"Invalid API key"}'
RATE_HEADERS = {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}
ASCII_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,  # the first request of a run opens database connections
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=False,
)


@pytest.fixture(scope="module")
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(settings_for(world)) as http:
        http.headers.update(world.auth)
        yield http


def _path(record_type: RecordType, suffix: str = "") -> str:
    return f"{PREFIX}/{record_type.path}{suffix}"


def _assert_error(response: httpx.Response, status: int, body: bytes, *, rate_headers: bool) -> None:
    assert (response.status_code, response.content) == (status, body), response.request.url
    assert (set(response.headers) >= RATE_HEADERS) is rate_headers
    if not rate_headers:
        assert not RATE_HEADERS & set(response.headers)


# --- limit ---------------------------------------------------------------------------


def _expected_page_size(raw: str) -> int | None:
    """The page size a list must use for a single `limit` value, or None if it is a 400."""
    if not ASCII_INTEGER.fullmatch(raw):
        return None
    digits = raw.lstrip("+-").lstrip("0")
    if raw.startswith("-") or not digits:
        return None  # negative, or zero
    return 100 if len(digits) > 3 else min(int(digits), 100)


def _values(query: str, name: str) -> list[str]:
    """The values of `name` as any form-urlencoded parser reads the query string."""
    return [value for key, value in parse_qsl(query, keep_blank_values=True) if key == name]


limit_texts = st.one_of(
    st.text(),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.from_regex(r"\A[+-]?0*[0-9]{1,8}\Z"),
    st.from_regex(r"\A[+-]?[0-9]{300,400}\Z"),  # beyond any integer type, and 300+ digits
    # Decimal digits of other scripts (ARABIC-INDIC, FULLWIDTH, ...): int() takes them, the API must not.
    st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=4),
    st.builds(lambda pad, n, pad2: f"{pad}{n}{pad2}", st.sampled_from(["", " ", "\t", "\n", "\u00a0"]),
              st.integers(1, 200), st.sampled_from(["", " ", "\t", "\u2003", "x", ".0", "e2", "_0"])),
)
# Raw query-string fragments: percent-encoded text, percent-encoded arbitrary bytes, or
# literal characters as a careless client sends them ("+" is a space, "&" splits).
encoded_values = st.one_of(
    limit_texts.map(lambda text: quote(text, safe="")),
    st.binary(max_size=12).map(lambda raw: quote_from_bytes(raw, safe="")),
    st.text(alphabet="0123456789+-& =%", max_size=6),
)


class TestLimit:
    @PROPERTY_SETTINGS
    @given(
        record_type=st.sampled_from(RECORD_TYPES),
        values=st.lists(encoded_values, min_size=1, max_size=3),
    )
    @example(record_type=RECORD_TYPES[0], values=["0"])
    @example(record_type=RECORD_TYPES[0], values=["-1"])
    @example(record_type=RECORD_TYPES[0], values=["%2B7"])
    @example(record_type=RECORD_TYPES[0], values=["9" * 5000])
    @example(record_type=RECORD_TYPES[0], values=["%D9%A3"])  # ARABIC-INDIC DIGIT THREE
    @example(record_type=RECORD_TYPES[0], values=["1", "2"])
    @example(record_type=RECORD_TYPES[0], values=[""])
    async def test_any_limit_is_a_page_or_the_exact_400(
        self, client: httpx.AsyncClient, record_type: RecordType, values: list[str]
    ) -> None:
        query = "&".join(f"limit={value}" for value in values)
        response = await client.get(f"{_path(record_type)}?{query}")
        # What went on the wire (httpx escapes what cannot be sent as is, e.g. a bare "%").
        received = _values(response.request.url.query.decode("ascii"), "limit")
        size = _expected_page_size(received[0]) if len(received) == 1 else None
        if not received:
            size = 50  # e.g. "&" alone: no limit parameter at all
        if size is None:
            _assert_error(response, 400, LIMIT_BODY, rate_headers=False)
            return
        assert response.status_code == 200, (query, response.text)
        body = response.json()
        assert set(body) == {"data", "pagination"}
        assert len(body["data"]) <= size
        assert set(response.headers) >= RATE_HEADERS


# --- cursor --------------------------------------------------------------------------


def _decodes_to_offset(raw: str) -> bool:
    """Whether `raw` could be a cursor at all: base64url of a JSON array whose first
    element is a non-negative integer. Anything else must be the 400."""
    if not raw or not raw.isascii():
        return False
    try:
        payload = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        decoded = json.loads(payload.decode("utf-8"))
    except (binascii.Error, ValueError):
        return False
    if not isinstance(decoded, list) or not decoded:
        return False
    offset = decoded[0]
    return isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0


def _encode(value: Any) -> str:
    payload = json.dumps(value).encode("ascii")  # \uXXXX escapes, lone surrogates included
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii")


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["\x00", "\ud800", "9999-12-31T23:59:59+14:00", "0001-01-01T00:00:00+01:00",
                     "2024-05-01T19:00:00", "2024-05-01T19:00:00+00:00", "", "'; DROP TABLE sessions; --"]),
)
structured_cursors = st.lists(
    st.one_of(json_scalars, st.lists(json_scalars, max_size=2), st.dictionaries(st.text(max_size=3), json_scalars,
                                                                                  max_size=2)),
    max_size=5,
).map(_encode)
cursor_texts = st.one_of(
    st.text(),
    st.from_regex(r"\A[A-Za-z0-9_=-]{0,40}\Z"),
    structured_cursors,
    st.integers(min_value=0, max_value=2**80).map(lambda n: _encode([n])),
)


class TestCursor:
    @PROPERTY_SETTINGS
    @given(record_type=st.sampled_from(RECORD_TYPES), cursor=cursor_texts)
    @example(record_type=RECORD_TYPES[0], cursor=_encode([0, "\ud800", "x"]))
    @example(record_type=RECORD_TYPES[0], cursor=_encode([0, None, "\ud800"]))
    @example(record_type=RECORD_TYPES[0], cursor=_encode([1, "2024-05-01T19:00:00+00:00", "a\x00"]))
    @example(record_type=RECORD_TYPES[2], cursor=_encode([0, 2**63, "x", "y"]))
    @example(record_type=RECORD_TYPES[2], cursor=_encode([0, 1, "\ud800", "y"]))
    @example(record_type=RECORD_TYPES[2], cursor=_encode([2**80]))
    @example(record_type=RECORD_TYPES[1], cursor="WzBd" + "=")
    @example(record_type=RECORD_TYPES[1], cursor="A" * 60_000)
    async def test_any_cursor_is_a_page_or_the_exact_400(
        self, client: httpx.AsyncClient, record_type: RecordType, cursor: str
    ) -> None:
        response = await client.get(f"{_path(record_type)}?limit=2&cursor={quote(cursor, safe='')}")
        if not _decodes_to_offset(cursor):
            _assert_error(response, 400, CURSOR_BODY, rate_headers=False)
            return
        # A decodable cursor may still carry a sort key no page produced: 400 then too.
        if response.status_code == 400:
            _assert_error(response, 400, CURSOR_BODY, rate_headers=False)
            return
        assert response.status_code == 200, (cursor, response.text)
        assert set(response.json()) == {"data", "pagination"}

    @PROPERTY_SETTINGS
    @given(record_type=st.sampled_from(RECORD_TYPES), raw=st.binary(max_size=40), repeat=st.booleans())
    async def test_percent_encoded_bytes_and_repeats(
        self, client: httpx.AsyncClient, record_type: RecordType, raw: bytes, repeat: bool
    ) -> None:
        value = quote_from_bytes(raw, safe="")
        query = f"cursor={value}" + (f"&cursor={value}" if repeat else "")
        response = await client.get(f"{_path(record_type)}?{query}")
        received = _values(response.request.url.query.decode("ascii"), "cursor")
        if repeat or not _decodes_to_offset(received[0]):
            _assert_error(response, 400, CURSOR_BODY, rate_headers=False)
        else:
            assert response.status_code in (200, 400)

    async def test_every_served_cursor_walks_to_the_end(self, client: httpx.AsyncClient, world: World) -> None:
        for record_type in RECORD_TYPES:
            seen: list[str] = []
            url = f"{_path(record_type)}?limit=1"
            while True:
                body = (await client.get(url)).json()
                seen += [record["id"] for record in body["data"]]
                if not body["pagination"]["has_more"]:
                    break
                url = f"{_path(record_type)}?limit=1&cursor={body['pagination']['next_cursor']}"
            assert sorted(seen) == sorted(world.ids[record_type.path].visible)


# --- record ids ----------------------------------------------------------------------


def _encode_id(raw: str) -> str:
    # "." would be normalized away by URL handling before the server sees it.
    return quote(raw, safe="").replace(".", "%2E")


class TestRecordId:
    @PROPERTY_SETTINGS
    @given(record_type=st.sampled_from(RECORD_TYPES), raw=st.text(min_size=1, max_size=80))
    @example(record_type=RECORD_TYPES[0], raw="a\x00b")
    @example(record_type=RECORD_TYPES[2], raw="a\x00b")
    @example(record_type=RECORD_TYPES[1], raw="x" * 5000)
    @example(record_type=RECORD_TYPES[3], raw="' OR '1'='1")
    @example(record_type=RECORD_TYPES[4], raw="%")
    async def test_any_id_is_the_record_or_the_exact_404(
        self, client: httpx.AsyncClient, world: World, record_type: RecordType, raw: str
    ) -> None:
        response = await client.get(_path(record_type, f"/{_encode_id(raw)}"))
        if "/" in raw:
            # Another path: no endpoint, the router's own 404.
            _assert_error(response, 404, b'{"error":"Not found"}', rate_headers=False)
        elif raw in world.ids[record_type.path].visible:
            assert response.status_code == 200
        else:
            body = json.dumps({"error": record_type.not_found}, separators=(",", ":")).encode()
            _assert_error(response, 404, body, rate_headers=True)


# --- Authorization -------------------------------------------------------------------

# What reaches a server as a header value: bytes other than NUL, CR and LF (h11 and
# httptools refuse those), decoded by Starlette as latin-1.
header_bytes = st.binary(max_size=300).map(lambda raw: raw.replace(b"\x00", b"").replace(b"\r", b"")
                                            .replace(b"\n", b""))
latin1_text = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=255, exclude_characters="\r\n"),
                      max_size=300)


def _is_valid_authorization(value: bytes, token: str) -> bool:
    text = value.decode("latin-1")
    scheme, separator, rest = text.partition(" ")
    return scheme.lower() == "bearer" and separator == " " and rest.strip(" ") == token


@st.composite
def authorizations(draw: st.DrawFn, token: str) -> bytes:
    """Arbitrary values, and variations of the one valid value."""
    kind = draw(st.sampled_from(["bytes", "text", "scheme", "mutated", "padded"]))
    if kind == "bytes":
        return draw(header_bytes)
    if kind == "text":
        return draw(latin1_text).encode("latin-1")
    if kind == "scheme":
        scheme = draw(st.sampled_from(["Bearer", "bearer", "BEARER", "bEaReR", "Basic", "Token", "Bearer:", "Bearerr",
                                       "", "Bear er", "Bearer\t", "Digest"]))
        separator = draw(st.sampled_from([" ", "  ", "\t", "", ": "]))
        return f"{scheme}{separator}{token}".encode("latin-1")
    if kind == "mutated":
        position = draw(st.integers(0, len(token) - 1))
        replacement = draw(st.characters(min_codepoint=1, max_codepoint=255, exclude_characters="\r\n"))
        mutated = token[:position] + replacement + token[position + 1 :]
        tail = draw(st.sampled_from(["", "x", "=", " x", "\u00e9" * 300]))
        return f"Bearer {mutated}{tail}".encode("latin-1")
    padding = draw(st.sampled_from(["", " ", "   ", "\t"]))
    return f"Bearer {padding}{token}{padding}".encode("latin-1")


class TestAuthorization:
    @PROPERTY_SETTINGS
    @given(data=st.data(), record_type=st.sampled_from(RECORD_TYPES))
    async def test_any_header_is_the_page_or_the_exact_401(
        self, client: httpx.AsyncClient, world: World, data: st.DataObject, record_type: RecordType
    ) -> None:
        value = data.draw(authorizations(world.token))
        # Bad limit too: authentication is checked first (spec, Authentication rule 6).
        response = await client.get(f"{_path(record_type)}?limit=0", headers={b"Authorization": value})
        if _is_valid_authorization(value, world.token):
            _assert_error(response, 400, LIMIT_BODY, rate_headers=False)
        else:
            _assert_error(response, 401, UNAUTHORIZED_BODY, rate_headers=False)
            assert response.headers["www-authenticate"] == 'Bearer realm="public-api"'

    @pytest.mark.parametrize(
        "value",
        [
            b"",
            b"Bearer",
            b"Bearer ",
            b"Bearer " + b"a" * 257,
            b"Bearer " + b"\xff" * 300,
            b"Basic dXNlcjpwYXNz",
            b"Bearer cpk_aaaaaaaaaaaa_" + b"A" * 43,
        ],
        ids=["empty", "scheme-only", "scheme-space", "too-long", "latin1", "basic", "unknown-key"],
    )
    async def test_known_bad_values(self, client: httpx.AsyncClient, value: bytes) -> None:
        response = await client.get(f"{PREFIX}/sessions", headers={b"Authorization": value})
        _assert_error(response, 401, UNAUTHORIZED_BODY, rate_headers=False)

    async def test_revoked_and_other_campaigns_keys(self, client: httpx.AsyncClient, world: World) -> None:
        revoked = await client.get(f"{PREFIX}/sessions", headers={"Authorization": f"Bearer {world.revoked_token}"})
        _assert_error(revoked, 401, UNAUTHORIZED_BODY, rate_headers=False)
        # A token glued from one key's id and another key's secret is no key at all.
        key_id = world.token.split("_")[1]
        other_secret = world.other_token.split("_", 2)[2]
        glued = await client.get(f"{PREFIX}/sessions", headers={"Authorization": f"Bearer cpk_{key_id}_{other_secret}"})
        _assert_error(glued, 401, UNAUTHORIZED_BODY, rate_headers=False)
