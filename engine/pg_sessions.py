"""How a read connection's session is set up, straight to PostgreSQL or through a pooler.

The request path needs two session settings, a statement timeout and the UTC time zone,
and psycopg prepares a statement on the server once a connection has run it a few times.
Neither survives a transaction pooler such as PgBouncer in its usual mode, where each
transaction (here: each autocommit statement) may run on a different server connection
shared with other clients: a startup `options` parameter is refused outright, a session
`SET` would change other clients' sessions, and a statement prepared on one server
connection is missing on the next (or, under the same name, a different statement: one
endpoint answered with another's rows).

So nothing is sent in the startup packet, and a new connection first asks which server
process it talks to. PostgreSQL tells a client its process id when the connection opens;
a pooler tells it an id of its own, since the server process changes under it. When
they are the same, the session is the client's own: both settings are set for it once,
and psycopg prepares statements as usual. When they differ, the connection is pooled:
it runs unnamed statements only (planned per execution, which cannot collide), its
timestamps arrive in the server's own time zone (the column type converts them to UTC),
and the pool bounds each statement itself, cancelling it on the server at the timeout.
"""

from __future__ import annotations

from typing import Any

import psycopg

from engine.read_pool import Opened

_SERVER_PROCESS = "SELECT pg_backend_pid()"
_SESSION_SETTINGS = "SELECT set_config('statement_timeout', %s, false), set_config('TimeZone', 'UTC', false)"


async def set_up_session(connection: psycopg.AsyncConnection[Any], *, statement_timeout_ms: int) -> Opened:
    """`connection`, made ready for the request path's statements (see the module's text)."""
    cursor = await connection.execute(_SERVER_PROCESS)
    row = await cursor.fetchone()
    if row is not None and row[0] == connection.info.backend_pid:
        await connection.execute(_SESSION_SETTINGS, (f"{statement_timeout_ms}ms",))
        return Opened(connection)
    connection.prepare_threshold = None
    return Opened(connection, statement_deadline_s=statement_timeout_ms / 1000)
