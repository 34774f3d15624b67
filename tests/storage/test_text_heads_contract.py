"""``text_heads``: the start of a memory's text, for telling its language (every backend)."""

from __future__ import annotations

from kioku.storage.base import Store
from tests.storage.test_contract import new_context, new_memory


def test_text_heads_cut_summary_and_content_and_stay_in_the_workspace(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    long_one = new_memory(ctx.id, "アリスの好きな飲み物" * 50, content="jasmine tea " * 100)
    short = new_memory(ctx.id, "Alice's favourite drink is jasmine tea.")
    store.insert_memories(ws, [long_one, short])
    heads = store.text_heads(ws, [long_one.id, short.id, "no-such-id"], 12)
    assert heads == {
        long_one.id: "アリスの好きな飲み物アリ\njasmine tea ",
        short.id: "Alice's favo\n",
    }
    assert store.text_heads(other_ws, [long_one.id], 12) == {}
