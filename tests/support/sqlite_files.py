"""Reading a data dir's SQLite files from tests, as an operator with the sqlite3 shell would."""

import sqlite3
from contextlib import closing
from pathlib import Path


def rows(path: str | Path, sql: str, *params) -> list[tuple]:
    """Every row of ``sql`` on the file at ``path`` (the connection is closed after)."""
    with closing(sqlite3.connect(path)) as connection:
        return connection.execute(sql, params).fetchall()
