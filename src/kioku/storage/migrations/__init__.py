"""Alembic migrations, run on both backends by ``upgrade_database``."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

MIGRATIONS_DIR = Path(__file__).parent


def upgrade_database(sqlalchemy_url: str) -> None:
    """Bring the database at ``sqlalchemy_url`` to the newest schema revision."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    engine = create_engine(sqlalchemy_url)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    finally:
        engine.dispose()
