from __future__ import annotations

import base64
import json

import pytest

from engine.cursor import MAX_CURSOR_LENGTH, MAX_OFFSET, Cursor, decode_cursor, encode_cursor
from engine.errors import ErrorCode, InvalidCursor


def raw_cursor(payload: str) -> str:
    """A cursor in the service's own encoding around an arbitrary JSON text."""
    return base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode("ascii")


class TestRoundTrip:
    @pytest.mark.parametrize(
        "cursor",
        [
            Cursor(offset=0),
            Cursor(offset=7),
            Cursor(offset=3, after=("2024-05-01T19:00:00+00:00", "sess_1")),
            Cursor(offset=12, after=(None, "Ähre", "loc_9")),
            Cursor(offset=1, after=(-4, "名前", "id with spaces")),
            Cursor(offset=MAX_OFFSET, after=(None, "")),
        ],
    )
    def test_decode_inverts_encode(self, cursor: Cursor) -> None:
        assert decode_cursor(encode_cursor(cursor)) == cursor

    def test_encoding_is_unpadded_url_safe_base64_of_a_json_array(self) -> None:
        encoded = encode_cursor(Cursor(offset=10, after=(None, "a")))
        assert encoded == "WzEwLG51bGwsImEiXQ"
        assert json.loads(base64.urlsafe_b64decode(encoded + "==")) == [10, None, "a"]

    def test_encoded_cursor_is_url_safe(self) -> None:
        # Bytes 0xfb 0xff encode to "+/" in standard base64; the cursor must use "-_".
        encoded = encode_cursor(Cursor(offset=0, after=("\u07ff\uffff" * 20,)))
        assert set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    @pytest.mark.parametrize(("raw", "key"), [("WzAsIj8_PyJd", "???"), ("WzAsIn5-fiJd", "~~~")])
    def test_url_safe_alphabet_decodes(self, raw: str, key: str) -> None:
        assert decode_cursor(raw) == Cursor(offset=0, after=(key,))

    def test_bare_offset_has_no_sort_key(self) -> None:
        assert decode_cursor(raw_cursor("[5]")) == Cursor(offset=5, after=())


class TestOffsetClamp:
    @pytest.mark.parametrize("offset", [MAX_OFFSET, MAX_OFFSET + 1, 2**63, 2**64 + 5, 10**300])
    def test_huge_offsets_clamp(self, offset: int) -> None:
        assert decode_cursor(raw_cursor(f"[{offset}]")) == Cursor(offset=MAX_OFFSET)

    def test_clamp_keeps_sort_key(self) -> None:
        assert decode_cursor(raw_cursor(f'[{10**40},null,"a","b"]')) == Cursor(
            offset=MAX_OFFSET, after=(None, "a", "b")
        )


class TestMalformed:
    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param("", id="empty"),
            pytest.param("!!!!", id="not-base64-chars"),
            pytest.param("W", id="impossible-length"),
            pytest.param("WzEwX", id="truncated"),
            pytest.param("WzEw XQ", id="inner-space"),
            pytest.param(" WzEwXQ", id="leading-space"),
            pytest.param("WzEwXQ\n", id="trailing-newline"),
            pytest.param("WzEw\tXQ", id="inner-tab"),
            pytest.param("WzEw\tXQ=", id="inner-tab-padded"),
            pytest.param("Wz.EwXQ", id="junk-char"),
            pytest.param("WzEw=XQ", id="padding-in-the-middle"),
            pytest.param("=WzEwXQ", id="leading-padding"),
            pytest.param("WzEwXQ=", id="one-padding-char"),
            pytest.param("WzEwXQ==", id="full-padding"),
            pytest.param("WzEwXQ===", id="excess-padding"),
            pytest.param("WzVd=", id="padding-on-unpadded-length"),
            pytest.param("WzEwXR", id="non-canonical-trailing-bits"),
            # '[0,"???"]' is "WzAsIj8_PyJd" in the URL-safe alphabet.
            pytest.param("WzAsIj8/PyJd", id="standard-alphabet-slash"),
            # '[0,"~~~"]' is "WzAsIn5-fiJd" in the URL-safe alphabet.
            pytest.param("WzAsIn5+fiJd", id="standard-alphabet-plus"),
            pytest.param("Wz\u00e9wXQ", id="non-ascii-letter"),
            pytest.param("\uff37\uff5a\uff25\uff57\uff38\uff31", id="fullwidth-letters"),
            pytest.param("WzEwXQ\u00a0", id="non-breaking-space"),
            pytest.param("A" * (MAX_CURSOR_LENGTH + 1), id="over-long"),
            pytest.param(raw_cursor("[0," + '"a",' * 600 + '"a"]'), id="over-long-valid-json"),
        ],
    )
    def test_undecodable(self, raw: str) -> None:
        with pytest.raises(InvalidCursor):
            decode_cursor(raw)

    @pytest.mark.parametrize(
        "payload",
        [
            pytest.param("nope", id="not-json"),
            pytest.param("[1", id="truncated-json"),
            pytest.param("[1,]", id="trailing-comma"),
            pytest.param("[01]", id="leading-zero"),
            pytest.param("[NaN]", id="nan"),
            pytest.param("[Infinity]", id="infinity"),
            pytest.param("", id="empty-payload"),
            pytest.param("5", id="bare-number"),
            pytest.param('"5"', id="bare-string"),
            pytest.param("null", id="null"),
            pytest.param('{"offset": 5}', id="object"),
            pytest.param("[]", id="empty-list"),
            pytest.param("[-1]", id="negative-offset"),
            pytest.param("[-0.5]", id="negative-float-offset"),
            pytest.param("[1.5]", id="float-offset"),
            pytest.param("[1.0]", id="integral-float-offset"),
            pytest.param("[1e3]", id="exponent-offset"),
            pytest.param("[true]", id="true-offset"),
            pytest.param("[false]", id="false-offset"),
            pytest.param('["5"]', id="string-offset"),
            pytest.param("[null]", id="null-offset"),
            pytest.param("[[5]]", id="list-offset"),
            pytest.param('[{"n": 5}]', id="object-offset"),
            pytest.param('[0, {"name": "a"}]', id="object-in-key"),
            pytest.param('[0, ["a"]]', id="list-in-key"),
            pytest.param('[0, null, [[1]], "x"]', id="nested-list-in-key"),
            pytest.param("[0, 1.5]", id="float-in-key"),
            pytest.param("[0, true]", id="bool-in-key"),
            pytest.param('[0, "a", NaN]', id="nan-in-key"),
        ],
    )
    def test_bad_payload(self, payload: str) -> None:
        with pytest.raises(InvalidCursor):
            decode_cursor(raw_cursor(payload))

    @pytest.mark.parametrize("payload", [b"\xff\xfe[1]", b"[1]\x80", b"\xc3(", b"\xed\xa0\x80"])
    def test_payload_not_utf8(self, payload: bytes) -> None:
        with pytest.raises(InvalidCursor):
            decode_cursor(base64.urlsafe_b64encode(payload).rstrip(b"=").decode("ascii"))

    def test_error_is_one_domain_error(self) -> None:
        with pytest.raises(InvalidCursor) as caught:
            decode_cursor("nope!")
        assert str(caught.value) == "Invalid cursor"
        assert caught.value.code is ErrorCode.INVALID_CURSOR

    def test_longest_accepted_length(self) -> None:
        # 1536 bytes of JSON encode to exactly MAX_CURSOR_LENGTH (2048) characters.
        raw = raw_cursor('[3,"' + "a" * 1530 + '"]')
        assert len(raw) == MAX_CURSOR_LENGTH
        assert decode_cursor(raw) == Cursor(offset=3, after=("a" * 1530,))
