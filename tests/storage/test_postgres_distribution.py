"""The schema is distributable by ``workspace_id`` (Citus), checked on the live schema.

The statements themselves are checked by the storage suite's autouse fixture
(``sql_stays_on_one_tenant`` in conftest.py); here: that every table has its place in
``kioku/storage/postgres/distribution.py``, that the distributed ones satisfy what
``create_distributed_table`` requires of their keys, and that the fixture really catches a
statement kioku's code would send without its tenant. PostgreSQL only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import psycopg
import pytest

import kioku
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.distribution import (
    COORDINATOR_LOCAL,
    DISTRIBUTED,
    DISTRIBUTION_COLUMN,
    REFERENCE,
    citus_statements,
)
from tests.sql_distribution import SqlRecorder
from tests.storage.conftest import empty_postgres_database


@pytest.fixture
def catalog(postgres_database: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(postgres_database) as conn:
        yield conn


def test_every_table_is_distributed_reference_or_local(
    catalog: psycopg.Connection[tuple[object, ...]],
) -> None:
    tables = {
        str(name)
        for (name,) in catalog.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') "
            "AND relnamespace = current_schema()::regnamespace"
        )
    }
    groups = [*DISTRIBUTED, *REFERENCE, *COORDINATOR_LOCAL]
    assert len(groups) == len(set(groups)), "a table in two groups"
    # A new table (a migration) must be placed: distributed if it holds a tenant's rows.
    assert tables == set(groups)


def test_distributed_tables_keys_lead_with_the_tenant(
    catalog: psycopg.Connection[tuple[object, ...]],
) -> None:
    """Citus enforces a unique constraint only if it includes the distribution column, and a
    foreign key between distributed tables only if both sides name it; a distributed table may
    point at a reference table, never at a local one, and a reference table at no distributed
    one. Parents are distributed before their children (the order of ``DISTRIBUTED``)."""
    for table in DISTRIBUTED:
        columns = {
            str(c)
            for (c,) in catalog.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attnum > 0 AND NOT attisdropped AND attnotnull",
                (table,),
            )
        }
        assert DISTRIBUTION_COLUMN in columns, table
        for (definition,) in catalog.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = %s::regclass AND indisunique",
            (table,),
        ):
            assert f"({DISTRIBUTION_COLUMN}," in str(definition), definition
    rows = catalog.execute(
        "SELECT conrelid::regclass::text, confrelid::regclass::text, pg_get_constraintdef(oid) "
        "FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace"
    ).fetchall()
    assert rows, "no foreign keys found: the catalog query is wrong"
    for child, parent, definition in rows:
        child, parent, definition = str(child), str(parent), str(definition)
        if child in DISTRIBUTED:
            assert parent in DISTRIBUTED or parent in REFERENCE, definition
            if parent in DISTRIBUTED:
                assert definition.startswith(f"FOREIGN KEY ({DISTRIBUTION_COLUMN},"), definition
                assert DISTRIBUTED.index(parent) < DISTRIBUTED.index(child), (child, parent)
        elif child in REFERENCE:
            assert parent in REFERENCE, definition


def test_citus_statements_name_every_table_once() -> None:
    statements = citus_statements()
    assert statements[: len(REFERENCE)] == [
        f"SELECT create_reference_table('{t}');" for t in REFERENCE
    ]
    assert (
        statements[len(REFERENCE)]
        == "SELECT create_distributed_table('connectors', 'workspace_id');"
    )
    assert len(statements) == len(REFERENCE) + len(DISTRIBUTED)
    for table, statement in zip(DISTRIBUTED[1:], statements[len(REFERENCE) + 1 :], strict=True):
        assert f"'{table}', 'workspace_id', colocate_with => 'connectors'" in statement


def test_the_suite_fixture_catches_a_query_kioku_sends_without_its_tenant(
    postgres_database: str, sql_stays_on_one_tenant: SqlRecorder
) -> None:
    """A statement sent from kioku's code (a module under kioku/, compiled here so) that
    forgets ``workspace_id`` is recorded with its scope and reported; the same with the tenant
    is not. The recorder is the one every storage test runs under."""
    empty_postgres_database(postgres_database)
    store = PostgresStore(postgres_database)
    fake_module = str(Path(kioku.__file__).parent / "storage" / "postgres" / "broken_lane.py")
    code = compile(
        "def run(db, workspace_id):\n"
        "    with db.transaction(workspace_id) as conn:\n"
        "        conn.execute('SELECT id FROM memories WHERE id = %s', ('m1',))\n"
        "        conn.execute('SELECT id FROM memories WHERE workspace_id = %s', [workspace_id])\n",
        fake_module,
        "exec",
    )
    namespace: dict[str, object] = {}
    exec(code, namespace)
    try:
        workspace = store.ensure_workspace("alpha")
        recorded = len(sql_stays_on_one_tenant.statements)
        cast(Callable[..., None], namespace["run"])(store.db, workspace.id)
        mine = sql_stays_on_one_tenant.statements[recorded:]
        assert [s.caller.rsplit("/", 1)[-1].split(":")[0] for s in mine] == [
            "connection.py",  # the transaction's set_config, which gives the scope
            "broken_lane.py",
            "broken_lane.py",
        ]
        assert {s.scope for s in mine} == {workspace.id}
        problems = sql_stays_on_one_tenant.problems()
        assert len(problems) == 1
        assert "broken_lane.py:3: memories memories: not restricted" in problems[0]
    finally:
        store.close()
        sql_stays_on_one_tenant.statements.clear()  # the deliberate breakage is not the suite's


def test_the_recorder_leaves_tests_own_sql_alone(postgres_database: str) -> None:
    recorder = SqlRecorder()
    with pytest.MonkeyPatch.context() as patch:
        recorder.install(patch)
        with psycopg.connect(postgres_database) as conn:
            conn.execute("SELECT count(*) FROM memories")
    assert recorder.statements == []
