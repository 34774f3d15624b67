"""Threads through the MCP tools, with the official SDK client: remember and remember_batch
take thread/position, get_memory and recall show them, a bad position names the field."""

from __future__ import annotations

from mcp import Client

from kioku.mcp import build_mcp
from kioku.runtime import Runtime
from tests.mcp.test_tools import call, drive, fail


def test_remember_and_batch_place_memories_in_a_thread(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        asked = await call(client, "remember", {
            "summary": "田中: 週末の京都旅行は誰と行きましたか？", "thread": "旅行", "position": 0,
        })  # fmt: skip
        batch = await call(client, "remember_batch", {"items": [
            {"summary": "佐藤: 妹と二人で、日帰りでした。", "thread": "旅行"},
            {"summary": "会議は水曜日です。", "thread": "連絡"},
        ]})  # fmt: skip
        answer_id = batch["results"][0]["memory_id"]
        answer = await call(client, "get_memory", {"memory_id": answer_id})
        assert (answer["thread"], answer["position"]) == ("旅行", 1)
        found = await call(client, "recall", {"query": "京都旅行は誰と", "k": 2, "explain": True})
        ids = [hit["memory_id"] for hit in found["results"]]
        assert ids == [asked["memory_id"], answer_id]
        assert found["results"][1]["score_breakdown"]["thread"] > 0
        message = await fail(client, "remember", {"summary": "x", "position": 2})
        assert "position" in message

    drive(build_mcp(runtime), scenario)
