"""What recall reads about its candidates (every backend): the head of each text with its
signals, whether it waits for a vector, and the text to embed of those that do."""

from __future__ import annotations

import numpy as np

from kioku.storage.base import Store
from kioku.storage.records import EMBED_MAX_CHARS
from tests.storage.test_contract import new_context, new_memory


def test_signals_carry_text_heads_cut_and_stay_in_the_workspace(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    long_one = new_memory(ctx.id, "アリスの好きな飲み物" * 50, content="jasmine tea " * 100)
    short = new_memory(ctx.id, "Alice's favourite drink is jasmine tea.")
    store.insert_memories(ws, [long_one, short])
    signals = store.ranking_signals(ws, [long_one.id, short.id, "no-such-id"], 12)
    assert {m: s.head for m, s in signals.items()} == {
        long_one.id: "アリスの好きな飲み物アリ\njasmine tea ",
        short.id: "Alice's favo\n",
    }
    assert store.ranking_signals(other_ws, [long_one.id], 12) == {}
    assert store.ranking_signals(ws, [short.id])[short.id].head == ""  # not asked for


def test_pending_is_said_and_only_waiting_texts_are_read(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    waiting = new_memory(ctx.id, "Waiting for its vector", content="x" * (EMBED_MAX_CHARS * 3))
    embedded = new_memory(ctx.id, "Already embedded")
    store.insert_memories(ws, [waiting, embedded])
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    assert store.store_embeddings(ws, ctx.id, "fake", [(embedded.id, vector)]) == 1
    signals = store.ranking_signals(ws, [waiting.id, embedded.id])
    assert signals[waiting.id].pending and not signals[embedded.id].pending
    texts = store.pending_texts(ws, [waiting.id, embedded.id, "no-such-id"])
    assert set(texts) == {waiting.id}
    context_id, text = texts[waiting.id]
    assert context_id == ctx.id
    assert text.startswith("Waiting for its vector\nxxx") and len(text) == EMBED_MAX_CHARS
    assert store.pending_texts(other_ws, [waiting.id]) == {}
