from __future__ import annotations

import pytest

from engine.errors import INVALID_LIMIT_TEXT, ErrorCode, InvalidLimit
from engine.pagination import DEFAULT_LIMIT, MAX_LIMIT, Page, clamp_limit, parse_limit


class TestParseLimit:
    def test_absent_gives_default(self) -> None:
        assert parse_limit(None) == DEFAULT_LIMIT == 50

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("1", 1),
            ("7", 7),
            ("50", 50),
            ("99", 99),
            ("100", 100),
            ("+5", 5),
            ("05", 5),
            ("0001", 1),
        ],
    )
    def test_integers_within_range(self, raw: str, expected: int) -> None:
        assert parse_limit(raw) == expected

    @pytest.mark.parametrize(
        "raw",
        [
            "101",
            "500",
            "+1000",
            "2147483648",
            "99999999999999999999",
            pytest.param("9" * 64, id="64-digits"),
            pytest.param("9" * 65, id="65-digits"),
            pytest.param("1" + "0" * 5000, id="5001-digits"),
            pytest.param("0" * 80 + "250", id="zero-padded-250"),
        ],
    )
    def test_large_values_are_capped(self, raw: str) -> None:
        assert parse_limit(raw) == MAX_LIMIT == 100

    def test_leading_zeros_do_not_make_a_value_large(self) -> None:
        assert parse_limit("0" * 80 + "7") == 7

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param("0", id="zero"),
            pytest.param("00", id="zeros"),
            pytest.param("-0", id="negative-zero"),
            pytest.param("+0", id="positive-zero"),
            pytest.param("-1", id="negative"),
            pytest.param("-99999999999999999999", id="huge-negative"),
            pytest.param("-" + "9" * 5000, id="enormous-negative"),
        ],
    )
    def test_below_one_is_rejected(self, raw: str) -> None:
        with pytest.raises(InvalidLimit):
            parse_limit(raw)

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param("", id="empty"),
            pytest.param("abc", id="letters"),
            pytest.param("1.5", id="decimal"),
            pytest.param("1.0", id="integral-decimal"),
            pytest.param("1e2", id="exponent"),
            pytest.param("0x10", id="hex"),
            pytest.param("3_0", id="underscore"),
            pytest.param(" 5", id="leading-space"),
            pytest.param("5 ", id="trailing-space"),
            pytest.param("5\n", id="trailing-newline"),
            pytest.param("\t5", id="leading-tab"),
            pytest.param("\u0663", id="arabic-indic-digit"),
            pytest.param("\uff15", id="fullwidth-digit"),
            pytest.param("\u00b2", id="superscript-two"),
            pytest.param("+", id="sign-only"),
            pytest.param("-", id="minus-only"),
            pytest.param("++5", id="double-sign"),
            pytest.param("+-5", id="mixed-signs"),
            pytest.param("5-", id="trailing-sign"),
            pytest.param("five", id="word"),
            pytest.param("NaN", id="nan"),
            pytest.param("Infinity", id="infinity"),
        ],
    )
    def test_non_integers_are_rejected(self, raw: str) -> None:
        with pytest.raises(InvalidLimit):
            parse_limit(raw)

    def test_error_message_and_code(self) -> None:
        with pytest.raises(InvalidLimit) as caught:
            parse_limit("abc")
        assert str(caught.value) == INVALID_LIMIT_TEXT == "limit must be a positive integer"
        assert caught.value.code is ErrorCode.INVALID_LIMIT


class TestClampLimit:
    @pytest.mark.parametrize(
        ("limit", "expected"),
        [(None, 50), (1, 1), (42, 42), (100, 100), (101, 100), (500, 100), (2**63, 100)],
    )
    def test_accepted(self, limit: int | None, expected: int) -> None:
        assert clamp_limit(limit) == expected

    @pytest.mark.parametrize("limit", [0, -1, -3, -(2**63)])
    def test_below_one_is_rejected(self, limit: int) -> None:
        with pytest.raises(InvalidLimit) as caught:
            clamp_limit(limit)
        assert str(caught.value) == "limit must be a positive integer"


class TestPage:
    def test_has_more_follows_next_cursor(self) -> None:
        assert Page(items=[1, 2], next_cursor="WzJd").has_more is True
        assert Page(items=[1, 2], next_cursor=None).has_more is False
        assert Page(items=[], next_cursor=None).has_more is False
