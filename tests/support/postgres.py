"""A fresh PostgreSQL database per test, on the server that ``AUTOTUNE_TEST_POSTGRES_URL`` names.

``.ci/postgres`` starts a server on localhost and prints that URL; ``.ci/run`` runs it and also
sets ``AUTOTUNE_REQUIRE_POSTGRES=1``, so that in CI a test needing PostgreSQL fails instead of
skipping when the server is missing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

URL_ENV = "AUTOTUNE_TEST_POSTGRES_URL"
REQUIRE_ENV = "AUTOTUNE_REQUIRE_POSTGRES"


def server_url() -> str:
    """The server's URL (its maintenance database); skips the test, or fails it in CI."""
    url = os.environ.get(URL_ENV)
    if url:
        return url
    reason = (
        f"needs a PostgreSQL server: set {URL_ENV} (for example to the URL that .ci/postgres "
        "prints after starting one)"
    )
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the test {reason}")
    pytest.skip(reason)


def fresh_database() -> Iterator[str]:
    """Creates an empty database on the server, yields its URL, drops it afterwards."""
    import sqlalchemy

    base = sqlalchemy.engine.make_url(server_url())
    name = f"autotune_test_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
