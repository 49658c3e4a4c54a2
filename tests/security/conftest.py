"""The two-campaign world (tests/security/world.py) for the in-process isolation and
secrecy tests, and the seeded PostgreSQL database (tests/faults/common.py) for the log test
against a real server."""

from tests.faults.common import seeded_postgres as seeded_postgres
from tests.security.world import world as world
from tests.security.world import world_database_url as world_database_url
