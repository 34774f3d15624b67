"""Alembic migrations, run on both backends by ``upgrade_database``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine

from kioku.storage.private_files import private_sqlite_file

MIGRATIONS_DIR = Path(__file__).parent


def _engine(sqlalchemy_url: str) -> Engine:
    """An engine on ``sqlalchemy_url``; a SQLite file is made private (0600) before it opens."""
    prefix = "sqlite:///"
    if sqlalchemy_url.startswith(prefix) and len(sqlalchemy_url) > len(prefix):
        private_sqlite_file(Path(sqlalchemy_url[len(prefix) :]).expanduser())
    return create_engine(sqlalchemy_url)


def upgrade_database(sqlalchemy_url: str, revision: str = "head") -> None:
    """Bring the database at ``sqlalchemy_url`` to ``revision`` (the newest by default)."""
    _run(sqlalchemy_url, command.upgrade, revision)


def downgrade_database(sqlalchemy_url: str, revision: str) -> None:
    """Take the database at ``sqlalchemy_url`` back to ``revision`` (tests and rollbacks)."""
    _run(sqlalchemy_url, command.downgrade, revision)


def _run(sqlalchemy_url: str, step: Callable[[Config, str], None], revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = _engine(sqlalchemy_url)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            step(config, revision)
    finally:
        engine.dispose()


def schema_revision(sqlalchemy_url: str) -> str | None:
    """The schema revision the database at ``sqlalchemy_url`` is at (``None``: not migrated)."""
    from alembic.runtime.migration import MigrationContext

    engine = _engine(sqlalchemy_url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()


def head_revision() -> str:
    """The newest revision this version of kioku knows."""
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def run_for_dialect(statements: dict[str, list[str]]) -> None:
    """Inside a migration: run the statements written for the connected backend's dialect."""
    from alembic import op

    dialect = op.get_bind().dialect.name
    if dialect not in statements:
        raise RuntimeError(f"kioku has no migration for the {dialect} backend")
    for statement in statements[dialect]:
        op.execute(statement)
