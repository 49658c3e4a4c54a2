"""UTC timestamps left as `datetime`s for orjson (FixedDocumentExecutor, PreparedQuery's
`data_to_orjson`): the JSON must be byte for byte what the serialized strings give, and
only those executions may carry datetimes in their data."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
import strawberry
from graphql import ExecutionResult, execute, parse
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncSession

from engine.records import CampaignScope
from graphql_schema.context import CampaignContext
from graphql_schema.execution import FixedDocumentExecutor, PlainFieldExecutor
from graphql_schema.prepared import PreparedQuery
from graphql_schema.schema import build_schema
from tests.factories import add_campaign, add_session

CAMPAIGN_SCHEMA = build_schema()
DATETIME_SERIALIZE = CAMPAIGN_SCHEMA._schema.type_map["DateTime"].serialize  # type: ignore[union-attr]


@given(st.datetimes(timezones=st.just(UTC)))
@example(datetime(1, 1, 1, tzinfo=UTC))
@example(datetime(999, 12, 31, 23, 59, 59, 1, tzinfo=UTC))
@example(datetime(2024, 5, 1, 19, tzinfo=UTC))
@example(datetime(2024, 5, 1, 19, 0, 0, 250000, tzinfo=UTC))
@example(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
def test_orjson_writes_a_utc_datetime_as_the_datetime_scalar_serializes_it(value: datetime) -> None:
    assert value.tzinfo is UTC
    assert orjson.dumps(value) == orjson.dumps(DATETIME_SERIALIZE(value))


# --- which values the executor leaves as they are -------------------------------------------


class UTCSubclass(datetime):
    pass


@strawberry.type
class Stamp:
    at: datetime | None
    day: date | None


@strawberry.type
class Stamps:
    stamps: list[Stamp]
    stamp: Stamp


STAMPS_SCHEMA = strawberry.Schema(query=Stamps)
# A list and an object (each completed in one loop by the executor).
STAMPS_DOCUMENT = parse("{ stamps { at day } stamp { at day } }")
UTC_VALUE = datetime(2024, 5, 1, 19, 0, 0, 250000, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Case:
    at: datetime | None
    day: date | None
    as_is: bool  # whether FixedDocumentExecutor leaves `at` as it is (else it is serialized)


CASES = {
    "utc": Case(UTC_VALUE, date(2024, 5, 1), as_is=True),
    "utc, no microseconds, year 1": Case(datetime(1, 1, 1, tzinfo=UTC), date(1, 1, 1), as_is=True),
    "null": Case(None, None, as_is=True),
    "naive": Case(datetime(2024, 5, 1, 19), None, as_is=False),
    "another offset": Case(datetime(2024, 5, 1, 21, tzinfo=timezone(timedelta(hours=2))), None, as_is=False),
    # orjson would write it alike, but only `datetime.UTC` is what the reads return.
    "zoneinfo UTC": Case(datetime(2024, 5, 1, 19, tzinfo=ZoneInfo("UTC")), None, as_is=False),
    "subclass": Case(UTCSubclass(2024, 5, 1, 19, tzinfo=UTC), None, as_is=False),
}


def run_stamps(case: Case, executor_class: type[PlainFieldExecutor] | None) -> ExecutionResult:
    stamp = Stamp(at=case.at, day=case.day)
    result = execute(
        STAMPS_SCHEMA._schema,
        STAMPS_DOCUMENT,
        root_value=SimpleNamespace(stamps=[stamp, stamp], stamp=stamp),
        executor_class=executor_class,
    )
    assert isinstance(result, ExecutionResult)
    assert result.errors is None
    return result


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
class TestFixedDocumentExecutor:
    def test_keeps_exactly_the_utc_datetimes(self, case: Case) -> None:
        data = run_stamps(case, FixedDocumentExecutor).data
        assert data is not None
        expected_at = case.at if case.as_is or case.at is None else case.at.isoformat()
        # Dates share the DateTime scalar's serializer, and are serialized.
        expected_day = None if case.day is None else case.day.isoformat()
        for stamp in [*data["stamps"], data["stamp"]]:
            assert stamp == {"at": expected_at, "day": expected_day}
            assert type(stamp["at"]) is type(expected_at)

    def test_its_json_is_graphql_cores(self, case: Case) -> None:
        # graphql-core's own completion (no executor class given) serializes every value.
        assert orjson.dumps(run_stamps(case, FixedDocumentExecutor).data) == orjson.dumps(run_stamps(case, None).data)

    def test_the_schemas_executor_serializes_every_datetime(self, case: Case) -> None:
        assert run_stamps(case, PlainFieldExecutor).data == run_stamps(case, None).data


# --- only the executions that asked for it ---------------------------------------------------


SESSIONS_DOCUMENT = """query($id: ID!) {
  sessions(limit: 5) { data { id createdAt recordingDate } }
  session(id: $id) { createdAt updatedAt }
}"""


async def test_prepared_documents_carry_datetimes_only_when_their_data_goes_to_orjson(db: AsyncSession) -> None:
    campaign = await add_campaign(db)
    stored = await add_session(
        db, campaign_id=campaign.id, created_at=UTC_VALUE, recording_date=UTC_VALUE, updated_at=UTC_VALUE
    )
    context = CampaignContext(db=db, scope=CampaignScope(campaign_id=campaign.id))
    variables: dict[str, Any] = {"id": stored.id}

    to_orjson = await PreparedQuery(CAMPAIGN_SCHEMA, SESSIONS_DOCUMENT, data_to_orjson=True).execute(
        variables=variables, context=context
    )
    prepared = await PreparedQuery(CAMPAIGN_SCHEMA, SESSIONS_DOCUMENT).execute(variables=variables, context=context)
    through_strawberry = await CAMPAIGN_SCHEMA.execute(
        SESSIONS_DOCUMENT, variable_values=variables, context_value=context
    )

    serialized = "2024-05-01T19:00:00.250000+00:00"
    expected = {
        "sessions": {"data": [{"id": stored.id, "createdAt": serialized, "recordingDate": serialized}]},
        "session": {"createdAt": serialized, "updatedAt": serialized},
    }
    assert prepared.errors is None and prepared.data == expected
    assert through_strawberry.errors is None and through_strawberry.data == expected
    assert to_orjson.errors is None and to_orjson.data is not None
    [row] = to_orjson.data["sessions"]["data"]
    assert type(row["createdAt"]) is datetime and row["createdAt"] == UTC_VALUE
    assert type(to_orjson.data["session"]["updatedAt"]) is datetime
    assert orjson.dumps(to_orjson.data) == orjson.dumps(expected)
