"""A memory's INSERT columns are named once (``storage/shared/rows.py``): a new column named
there is written by every path that creates a memory, on both engines.

The test plays the recipe of docs/architecture.md ("A new column"): a scratch migration adds
``scratch`` to ``memories`` with a default, the records gain a value for it, and its name is
added to ``MEMORY_INSERT``. Then each write primitive that creates memories must store the
record's value, not the column's default: ``insert_memories`` (remember, a batch),
``sync_memories`` (a connector's ingest), Sleep's ``insert_memory`` (its summaries) and
``restore_workspace`` (an import).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest

from kioku.service.sleep.log import sleep_insert_memory, start_sleep_run
from kioku.storage.base import Store
from kioku.storage.postgres.connection import ALL_WORKSPACES, SCOPE_SETTING
from kioku.storage.records import MemoryFields
from kioku.storage.shared import rows
from kioku.storage.sleep import SleepRunRow
from kioku.storage.transfer import MemoryDump
from tests.storage.test_contract import T0, new_context, new_memory


def _run(store: Store, statement: str) -> list[tuple[object, ...]]:
    """The test's own SQL, on its own connection (the schema change and the check)."""
    url: str = store.url
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute(statement).fetchall()
    with psycopg.connect(url, autocommit=True) as conn:
        # Row-level security shows the app role a workspace's rows only, or all with '*'.
        conn.execute("SELECT set_config(%s, %s, false)", (SCOPE_SETTING, ALL_WORKSPACES))
        cursor = conn.execute(statement.encode())
        return cursor.fetchall() if cursor.description else []


@pytest.fixture
def scratch(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The store after a scratch migration: ``memories.scratch``, named in ``MEMORY_INSERT``,
    which every memory record holds (``carried``)."""
    _run(store, "ALTER TABLE memories ADD COLUMN scratch TEXT NOT NULL DEFAULT 'default'")
    monkeypatch.setattr(rows, "MEMORY_INSERT", (*rows.MEMORY_INSERT, "scratch"))
    monkeypatch.setattr(MemoryFields, "scratch", "carried", raising=False)
    try:
        yield store
    finally:
        _run(store, "ALTER TABLE memories DROP COLUMN scratch")  # the session's database


def test_every_write_of_a_memory_writes_a_column_named_once(scratch: Store) -> None:
    store = scratch
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    store.insert_memories(ws, [new_memory(ctx.id, "remembered")])
    store.insert_memories(ws, [new_memory(ctx.id, "batch one"), new_memory(ctx.id, "two")])
    ingested = new_memory(ctx.id, "ingested", source_type="connector", external_id="page-1")
    store.sync_memories(ws, ctx.id, [ingested], [], [], T0)
    run_id = str(uuid.uuid4())
    start_sleep_run(store, ws, SleepRunRow(run_id, ws, ctx.id, "running", "manual", T0), T0)
    summary = new_memory(ctx.id, "sleep summary", source_type="sleep")
    sleep_insert_memory(store, ws, run_id, "llm_summary", summary, [], T0 + timedelta(seconds=1))
    # An import: another workspace restores Sleep's summary under new ids.
    target = store.ensure_workspace("imported").id
    context = store.get_context(ws, ctx.id)
    stored = store.get_memory(ws, summary.id)
    assert context is not None and stored is not None
    restored = replace(context, id=str(uuid.uuid4()), workspace_id=target, memory_count=None)
    dump = replace(stored, id=str(uuid.uuid4()), context_id=restored.id)
    store.restore_workspace(target, [restored, MemoryDump(dump, None, None, "sleep summary")])

    written = _run(store, "SELECT source_type, scratch FROM memories")
    assert sorted(str(source) for source, _ in written) == [
        "api", "api", "api", "connector", "sleep", "sleep"
    ]  # fmt: skip
    assert {value for _, value in written} == {"carried"}
