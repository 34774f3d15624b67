"""KiokuStore over real HTTP: a LangGraph store talking to ``kioku serve`` on loopback, with
the clients it makes itself from ``base_url`` (sync and async)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kioku import Client
from kioku.integrations.langgraph import KiokuStore, context_name

pytestmark = pytest.mark.e2e


def test_the_store_over_http_sync_and_async(server: str) -> None:
    run = uuid.uuid4().hex[:8]  # the server is shared by the e2e tests
    namespace = ("e2e", run, "memories")
    store = KiokuStore(base_url=server)
    try:
        store.put(namespace, "tea", {"text": "Alice drinks green tea every morning"})
        store.put(namespace, "city", {"text": "Alice lives in Kyoto"})
        item = store.get(namespace, "tea")
        assert item is not None and item.value == {"text": "Alice drinks green tea every morning"}
        assert store.search(("e2e", run), query="green tea", limit=1)[0].key == "tea"
        assert store.list_namespaces(prefix=("e2e", run)) == [namespace]

        async def asynchronous() -> list[str]:
            await store.aput(namespace, "cello", {"text": "Alice plays the cello"})
            await store.adelete(namespace, "city")
            found = await store.asearch(("e2e", run), query="cello")
            listed = await store.asearch(namespace)
            await store.aclose()
            return [found[0].key, *sorted(i.key for i in listed)]

        assert asyncio.run(asynchronous()) == ["cello", "cello", "tea"]
    finally:
        store.close()
        with Client(server) as kioku:
            kioku.delete_context(context_name(namespace))
