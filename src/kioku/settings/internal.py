"""Variables that are no user's setting: hand-offs between kioku's own processes and the
test suite's database. Standard library only (read in child processes and test fixtures).

``KIOKU_LOAD_HOSTS``: ``python -m kioku.benchmark.load`` hands its locust child the servers
to spread the agents over. ``KIOKU_TEST_DATABASE_URL``: a PostgreSQL server the tests (and
``kioku bench --backend postgres``) may create databases on, instead of a throwaway one.
Neither is listed by ``kioku config``.
"""

from __future__ import annotations

import os

LOAD_HOSTS = "KIOKU_LOAD_HOSTS"
TEST_DATABASE_URL = "KIOKU_TEST_DATABASE_URL"


def load_hosts() -> list[str]:
    """The base URLs in ``$KIOKU_LOAD_HOSTS`` (comma-separated), none when unset."""
    return [host for host in os.environ.get(LOAD_HOSTS, "").split(",") if host]


def postgres_test_url() -> str | None:
    """``$KIOKU_TEST_DATABASE_URL``, or None when it is unset or empty."""
    return os.environ.get(TEST_DATABASE_URL) or None
