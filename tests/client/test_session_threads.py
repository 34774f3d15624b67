"""``ThreadSession(client, thread)``: every ``remember`` and batch item that names no thread goes to
the session's thread, in order; a named thread or a position wins; the async client alike."""

from __future__ import annotations

import anyio

from kioku import AsyncClient, Client
from kioku.api import create_app
from kioku.client import ThreadSession
from kioku.models import MemoryCreate
from kioku.runtime import Runtime


def test_a_session_writes_one_thread_in_order(runtime: Runtime) -> None:
    with Client(app=create_app(runtime=runtime)) as client:
        chat = ThreadSession(client)
        assert chat.thread.startswith("sdk:")
        first = chat.remember("default", "We chose PostgreSQL for staging")
        items = [
            {"summary": "Backups run nightly"},
            MemoryCreate(summary="Restores are tested monthly"),
            {"summary": "A doc section", "thread": "runbook"},
        ]
        chat.remember_batch("default", items)
        named = chat.remember("default", "Elsewhere", thread="other")
        assert first.thread == chat.thread and first.position == 0
        assert named.thread == "other"
        listed = client.list_memories("default", limit=20).items
        mine = sorted((m.position, m.summary) for m in listed if m.thread == chat.thread)
        assert [s for _, s in mine] == [
            "We chose PostgreSQL for staging", "Backups run nightly", "Restores are tested monthly"
        ]  # fmt: skip
        assert [m.thread for m in listed if m.summary == "A doc section"] == ["runbook"]
        assert chat.recall("default", "staging database").results  # the rest is the client


def test_an_async_session_binds_the_same_way(runtime: Runtime) -> None:
    async def main() -> tuple[str | None, str]:
        async with AsyncClient(app=create_app(runtime=runtime)) as client:
            chat = ThreadSession(client, "chat-42")
            memory = await chat.remember("default", "Carol owns the deploy scripts")
            return memory.thread, chat.thread

    assert anyio.run(main) == ("chat-42", "chat-42")
