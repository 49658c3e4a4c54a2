"""Fixtures shared by the fault scenarios (tests/faults/common.py)."""

from tests.faults.common import seeded_postgres as seeded_postgres
from tests.faults.common import seeded_sqlite as seeded_sqlite
