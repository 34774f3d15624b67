"""The SDK against ``kioku serve`` over real HTTP: Client, AsyncClient and ``$KIOKU_URL``."""

from __future__ import annotations

import anyio
import pytest

from kioku import AsyncClient, Client, NotFoundError

pytestmark = pytest.mark.e2e


def test_an_agent_loop_through_the_client(server: str) -> None:
    with Client(server, timeout=60) as kioku:
        kioku.create_context("sdk-http")
        kioku.remember("sdk-http", "Never promise a refund", delivery_mode="always")
        fact = kioku.remember(
            "sdk-http", "The quarterly report is due on the 15th", tags=["finance"], wait=True
        )
        assert fact.source_type == "api" and fact.embedding_status == "ready"
        assert [i.summary for i in kioku.load_pinned("sdk-http").items] == [
            "Never promise a refund"
        ]
        found = kioku.recall(
            "sdk-http", "when is the report due?", filters={"trust_tier": "trusted"}
        )
        assert found.results[0].id == fact.id and found.legs == ["lexical", "vector"]
        assert kioku.set_state("sdk-http", "run", {"step": 1}).expires_in_seconds in (86399, 86400)
        assert kioku.set_state("sdk-http", "keep", 1, ttl_seconds=None).expires_at is None
        kioku.feedback("sdk-http", fact.id, True, query="when is the report due?")
        assert kioku.stats("sdk-http").feedback == {"helpful": 1, "unhelpful": 0}
        with pytest.raises(NotFoundError) as caught:
            kioku.get_memory("sdk-http", "missing")
        assert (caught.value.status_code, caught.value.field) == (404, "memory_id")


def test_the_async_client_finds_the_server_through_kioku_url(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_URL", server)

    async def main() -> None:
        async with AsyncClient(timeout=60) as kioku:
            assert (await kioku.health()).status == "ok"
            await kioku.create_context("sdk-async")
            memory = await kioku.remember("sdk-async", "Lunch is at noon", wait=True)
            result = await kioku.recall("sdk-async", "when is lunch?")
            assert result.results[0].id == memory.id

    anyio.run(main)
