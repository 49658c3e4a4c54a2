"""The campaign export format (contract §8): one strict pydantic model per record type.

Validation is strict on purpose: an export is produced by a program, so a value of the
wrong type (`"sort_order": "3"`, `"hidden_from_wiki": "yes"`) or an unknown field is a
bug in the exporter that an operator should hear about, not something to coerce.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from engine.markdown_cost import over_budget

# The `sort_order` column is a 32-bit INTEGER on both databases.
_INT32 = 2**31
# Largest summary or description accepted, in bytes of UTF-8: rendering time grows
# linearly with the text, and its density is bounded too (engine/markdown_cost.py), so
# every record renders within a few seconds. Wiki pages are a few KB.
MAX_MARKDOWN_BYTES = 256 * 1024
# A bad timestamp is quoted in the error, cut short: the field may hold anything.
_SHOWN_VALUE = 40


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL; refusing it on both backends keeps them alike.
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "text must not contain NUL characters")
    return value


def _timestamp(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise PydanticCustomError("timestamp_type", "timestamp must be an ISO 8601 string or null")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        shown = value if len(value) <= _SHOWN_VALUE else value[:_SHOWN_VALUE] + "..."
        raise PydanticCustomError(
            "timestamp_format", "not an ISO 8601 timestamp: {value}", {"value": repr(shown)}
        ) from None
    if parsed.utcoffset() is None:
        raise PydanticCustomError("timestamp_offset", "timestamp must include a UTC offset")
    return parsed.astimezone(UTC)


def _not_too_large(value: str) -> str:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_MARKDOWN_BYTES:
        raise PydanticCustomError(
            "markdown_too_large",
            "Markdown of {size} bytes is over the limit of {limit} bytes (256 KB)",
            {"size": size, "limit": MAX_MARKDOWN_BYTES},
        )
    return value


def _not_too_dense(value: str) -> str:
    cost = over_budget(value)
    if cost is not None:
        raise PydanticCustomError(
            "markdown_too_dense",
            "Markdown too dense to render in time: {lines} non-blank lines, {nested} nested list markers, "
            "{markup} markup characters, {autolinks} possible autolinks and {rescans} lines read again after "
            "quotes in {size} bytes weigh {units} render units, over the {budget} allowed for its size (split it "
            "into several records or write fewer, longer lines)",
            {
                "lines": cost.lines,
                "nested": cost.nested_markers,
                "markup": cost.markup_characters,
                "autolinks": cost.autolinks,
                "rescans": cost.quote_rescans,
                "size": cost.size,
                "units": cost.units,
                "budget": cost.budget,
            },
        )
    return value


Text = Annotated[StrictStr, AfterValidator(_no_nul)]
Markdown = Annotated[StrictStr, AfterValidator(_no_nul), AfterValidator(_not_too_large), AfterValidator(_not_too_dense)]
RecordId = Annotated[StrictStr, StringConstraints(min_length=1, max_length=64), AfterValidator(_no_nul)]
Timestamp = Annotated[datetime | None, PlainValidator(_timestamp)]
SortOrder = Annotated[StrictInt, Field(ge=-_INT32, lt=_INT32)]


class ExportRecord(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    id: RecordId


class ExportedUser(ExportRecord):
    name: Text | None = None


class ExportedCampaign(ExportRecord):
    name: Text
    owner_id: RecordId | None = None


class ExportedSession(ExportRecord):
    campaign_id: RecordId
    title: Text
    status: Text
    recording_date: Timestamp = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    session_type: Text
    visibility: Literal["public", "private"]
    summary: Markdown | None = None


class ExportedEntity(ExportRecord):
    """A character, faction or item; a location adds `parent_id`."""

    campaign_id: RecordId
    name: Text
    icon: Text | None = None
    hidden_from_wiki: StrictBool = False
    type: Text
    image_url: Text | None = None
    sort_order: SortOrder | None = None
    description: Markdown | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None


class ExportedLocation(ExportedEntity):
    parent_id: RecordId | None = None


# The arrays of an export, in the order their rows must be written (foreign keys).
RECORD_MODELS: dict[str, type[ExportRecord]] = {
    "users": ExportedUser,
    "campaigns": ExportedCampaign,
    "sessions": ExportedSession,
    "locations": ExportedLocation,
    "characters": ExportedEntity,
    "factions": ExportedEntity,
    "items": ExportedEntity,
}

# pydantic's wording for these is written for API clients; operators read field names.
_PLAIN_MESSAGES = {"missing": "required field is missing", "extra_forbidden": "unknown field"}


def describe_record(array: str, index: int, raw: object) -> str:
    """`sessions[3] (id "s-4")`: where a record sits in the file, with its id when it has one."""
    record_id = raw.get("id") if isinstance(raw, dict) else None
    where = f"{array}[{index}]"
    return f'{where} (id "{record_id}")' if isinstance(record_id, str) and record_id else where


def describe_validation_error(error: ValidationError) -> str:
    """`field: problem` for each problem pydantic found, joined by "; "."""
    problems = []
    for detail in error.errors(include_url=False):
        field = ".".join(str(part) for part in detail["loc"]) or "record"
        problems.append(f"{field}: {_PLAIN_MESSAGES.get(detail['type'], detail['msg'])}")
    return "; ".join(problems)
