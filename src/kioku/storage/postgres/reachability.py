"""Which failures to open PostgreSQL mean "the server is not there (or says no)", and which
mean "the server answered but the role may not do this"."""

from __future__ import annotations

import psycopg
import psycopg_pool
from sqlalchemy.exc import DBAPIError as SQLAlchemyDBAPIError
from sqlalchemy.exc import OperationalError as SQLAlchemyOperationalError


def unreachable_reason(exc: BaseException) -> str | None:
    """The driver's one-line reason when ``exc`` says the server could not be reached or
    refused the connection (name not resolved, nothing listening, authentication, no such
    database, pool timeout); ``None`` for any other error, which stays a traceback."""
    if isinstance(exc, SQLAlchemyOperationalError) and exc.orig is not None:
        exc = exc.orig
    if isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return lines[0] if lines else type(exc).__name__
    return None


def refusal_reason(exc: BaseException) -> str | None:
    """The server's one-line reason when it answered but refused what opening kioku's database
    needs (a role that may not create the tables or the ``vector`` extension, or read them);
    ``None`` for any other error."""
    if isinstance(exc, SQLAlchemyDBAPIError) and exc.orig is not None:
        exc = exc.orig
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return lines[0] if lines else type(exc).__name__
    return None
