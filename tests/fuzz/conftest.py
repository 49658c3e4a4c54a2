"""The two-campaign world (tests/security/world.py) for the in-process hostile-input tests,
and the seeded SQLite database (tests/faults/common.py) for those against a real server."""

from tests.faults.common import seeded_sqlite as seeded_sqlite
from tests.security.world import world as world
from tests.security.world import world_database_url as world_database_url
