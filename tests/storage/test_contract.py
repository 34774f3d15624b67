"""What every backend must do. Written against the ``Store`` protocol only."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kioku.embeddings.base import normalize_rows
from kioku.errors import ConflictError
from kioku.storage.base import Store
from kioku.storage.records import ContextRow, MemoryChanges, MemoryFilter, NewMemory
from kioku.vocabulary import TrustTier

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LIVE = MemoryFilter()


def new_context(
    store: Store, workspace_id: str, name: str, tier: TrustTier = "trusted"
) -> ContextRow:
    row = ContextRow(
        id=str(uuid.uuid4()), workspace_id=workspace_id, name=name, description="",
        trust_tier=tier, sleep_mode="edges_only", search_config={}, embedding_model=None,
        embedding_dim=None, created_at=T0, updated_at=T0,
    )  # fmt: skip
    return store.insert_context(workspace_id, row)


def new_memory(
    context_id: str, summary: str, *, tokens: str | None = None, **kw: object
) -> NewMemory:
    values: dict[str, object] = dict(
        id=str(uuid.uuid4()), context_id=context_id, summary=summary, content="", type="note",
        tags=[], importance=0.5, delivery_mode="on_recall", trigger_from=None,
        trigger_until=None, source_type="api", source_uri=None, trust_tier="trusted",
        lexical_tokens=tokens if tokens is not None else summary.lower(), created_at=T0,
    )  # fmt: skip
    values.update(kw)
    return NewMemory(**values)  # type: ignore[arg-type]


def vec(*values: float) -> np.ndarray:
    return normalize_rows(np.array([values], dtype=np.float32))[0]


@pytest.fixture
def ws(store: Store) -> str:
    return store.ensure_workspace("alpha").id


@pytest.fixture
def foreign_ws(store: Store) -> str:
    return store.ensure_workspace("beta").id


def test_ensure_workspace_is_idempotent(store: Store) -> None:
    assert store.ensure_workspace("alpha").id == store.ensure_workspace("alpha").id


def test_context_names_are_unique_per_workspace(store: Store, ws: str, foreign_ws: str) -> None:
    new_context(store, ws, "notes")
    with pytest.raises(ConflictError):
        new_context(store, ws, "notes")
    new_context(store, foreign_ws, "notes")  # another tenant may reuse the name


def test_context_is_invisible_from_another_workspace(
    store: Store, ws: str, foreign_ws: str
) -> None:
    ctx = new_context(store, ws, "notes")
    assert store.get_context(foreign_ws, ctx.id) is None
    assert store.get_context_by_name(foreign_ws, "notes") is None
    assert store.list_contexts(foreign_ws) == []
    assert store.delete_context(foreign_ws, ctx.id) is False
    assert store.get_context(ws, ctx.id) is not None


def test_insert_and_get_round_trip(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "東京の天気", tags=["天気", "tokyo"], importance=0.9,
                     delivery_mode="on_trigger", trigger_from=T0,
                     trigger_until=T0 + timedelta(days=1))  # fmt: skip
    store.insert_memories(ws, [row])
    got = store.get_memory(ws, row.id)
    assert got is not None
    assert (got.summary, got.tags, got.importance) == ("東京の天気", ["天気", "tokyo"], 0.9)
    assert got.trigger_from == T0 and got.trigger_until == T0 + timedelta(days=1)
    assert got.embedding_status == "pending" and got.created_at == T0


def test_memory_is_invisible_from_another_workspace(store: Store, ws: str, foreign_ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "secret plan")
    store.insert_memories(ws, [row])
    assert store.get_memory(foreign_ws, row.id) is None
    assert store.get_memories(foreign_ws, [row.id]) == {}
    assert store.soft_delete_memory(foreign_ws, row.id, T0) is False
    assert store.purge_memory(foreign_ws, row.id) is False
    assert store.update_memory(foreign_ws, row.id, MemoryChanges({"summary": "x"}), T0) is None
    assert store.lexical_search(foreign_ws, [ctx.id], ["secret"], LIVE, 10) == []
    assert store.get_memory(ws, row.id) is not None


def test_insert_is_all_or_nothing(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    good = new_memory(ctx.id, "fine")
    bad = new_memory(ctx.id, "x" * 501)  # violates the database CHECK
    with pytest.raises(Exception):  # noqa: B017 - the backend's own integrity error
        store.insert_memories(ws, [good, bad])
    assert store.get_memory(ws, good.id) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"summary": ""},
        {"importance": 1.5},
        {"delivery_mode": "sometimes"},
        {"source_type": "hacker"},
        {"trust_tier": "maybe"},
        {"delivery_mode": "on_trigger"},  # without trigger_from
        {"trigger_from": T0},  # a window on a non-trigger memory
    ],
)
def test_database_constraints_reject_invalid_rows(store: Store, ws: str, bad: dict) -> None:
    ctx = new_context(store, ws, "notes")
    with pytest.raises(Exception):  # noqa: B017
        store.insert_memories(ws, [new_memory(ctx.id, "s", **bad) if "summary" not in bad
                                   else new_memory(ctx.id, bad["summary"])])  # fmt: skip
    assert store.count_memories(ws, ctx.id) == 0


def test_lexical_search_ranks_by_bm25(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [
        new_memory(ctx.id, "a", tokens="apple apple banana"),
        new_memory(ctx.id, "b", tokens="apple cherry cherry cherry cherry cherry"),
        new_memory(ctx.id, "c", tokens="durian"),
    ]
    store.insert_memories(ws, rows)
    hits = store.lexical_search(ws, [ctx.id], ["apple"], LIVE, 10)
    assert [h.memory_id for h in hits] == [rows[0].id, rows[1].id]
    assert hits[0].score > hits[1].score > 0


def test_lexical_scores_never_move_with_another_workspace(
    store: Store, ws: str, foreign_ws: str
) -> None:
    """BM25's N, avgdl and df are the workspace's own: another tenant storing, updating or
    purging the very terms changes no score and no order (else scores leak its content)."""
    ctx, theirs = new_context(store, ws, "notes"), new_context(store, foreign_ws, "notes")
    store.insert_memories(
        ws,
        [
            new_memory(ctx.id, "a", tokens="rare word here"),
            new_memory(ctx.id, "b", tokens="rare rare common common common"),
            new_memory(ctx.id, "c", tokens="common filler text"),
        ],
    )

    def mine() -> list[tuple[str, float]]:
        return [(h.memory_id, h.score) for h in store.lexical_search(
            ws, [ctx.id], ["rare", "common"], LIVE, 10
        )]  # fmt: skip

    before = mine()
    flood = [
        new_memory(theirs.id, "t", tokens=f"rare {'common ' * (i % 5)}x{i}") for i in range(200)
    ]
    store.insert_memories(foreign_ws, flood)
    assert mine() == before
    store.update_memory(foreign_ws, flood[0].id, MemoryChanges({}, lexical_tokens="other"), T0)
    for row in flood[:100]:
        assert store.purge_memory(foreign_ws, row.id)
    assert mine() == before
    assert store.delete_context(foreign_ws, theirs.id)
    assert mine() == before


def test_lexical_search_excludes_deleted_unless_asked(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "x", tokens="zebra")
    store.insert_memories(ws, [row])
    store.soft_delete_memory(ws, row.id, T0)
    assert store.lexical_search(ws, [ctx.id], ["zebra"], LIVE, 10) == []
    with_deleted = MemoryFilter(include_deleted=True)
    assert len(store.lexical_search(ws, [ctx.id], ["zebra"], with_deleted, 10)) == 1


def test_filters_apply_to_lexical_search(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [
        new_memory(ctx.id, "a", tokens="topic", type="decision", tags=["x", "y"], importance=0.9),
        new_memory(ctx.id, "b", tokens="topic", type="note", tags=["y"], importance=0.2),
        new_memory(ctx.id, "c", tokens="topic", type="note", tags=[], importance=0.5,
                   created_at=T0 + timedelta(days=2)),
    ]  # fmt: skip
    store.insert_memories(ws, rows)

    def found(flt: MemoryFilter) -> set[str]:
        return {h.memory_id for h in store.lexical_search(ws, [ctx.id], ["topic"], flt, 10)}

    a, b, c = (r.id for r in rows)
    assert found(MemoryFilter(types=["decision"])) == {a}
    assert found(MemoryFilter(tags_any=["x", "y"])) == {a, b}
    assert found(MemoryFilter(tags_all=["x", "y"])) == {a}
    assert found(MemoryFilter(importance_min=0.5)) == {a, c}
    assert found(MemoryFilter(importance_max=0.5)) == {b, c}
    assert found(MemoryFilter(created_after=T0 + timedelta(days=1))) == {c}
    assert found(MemoryFilter(created_before=T0 + timedelta(days=1))) == {a, b}


def test_vector_search_finds_nearest_and_respects_filters(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, f"m{i}", type="a" if i % 2 else "b") for i in range(6)]
    store.insert_memories(ws, rows)
    vectors = [vec(1.0, i * 0.3, 0.0) for i in range(6)]
    landed = store.store_embeddings(
        ws, ctx.id, "model-x", list(zip([r.id for r in rows], vectors, strict=True))
    )
    assert landed == 6
    hits = store.vector_search(ws, [ctx.id], vec(1.0, 0.0, 0.0), LIVE, 3)
    assert [h.memory_id for h in hits] == [rows[0].id, rows[1].id, rows[2].id]
    typed = store.vector_search(ws, [ctx.id], vec(1.0, 0.0, 0.0), MemoryFilter(types=["a"]), 2)
    assert [h.memory_id for h in typed] == [rows[1].id, rows[3].id]


def test_vector_search_never_crosses_workspaces(store: Store, ws: str, foreign_ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "m")
    store.insert_memories(ws, [row])
    store.store_embeddings(ws, ctx.id, "model-x", [(row.id, vec(1, 0))])
    assert store.vector_search(foreign_ws, [ctx.id], vec(1, 0), LIVE, 5) == []
    assert store.store_embeddings(foreign_ws, ctx.id, "model-x", [(row.id, vec(0, 1))]) == 0


def test_a_context_never_mixes_embedding_models(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, "a"), new_memory(ctx.id, "b")]
    store.insert_memories(ws, rows)
    assert store.store_embeddings(ws, ctx.id, "model-x", [(rows[0].id, vec(1, 0))]) == 1
    assert store.store_embeddings(ws, ctx.id, "model-y", [(rows[1].id, vec(0, 1))]) == 0
    assert [j.memory_id for j in store.pending_embeddings("model-y", 10)] == []
    assert [j.memory_id for j in store.pending_embeddings("model-x", 10)] == [rows[1].id]
    assert store.reset_embeddings(ws, ctx.id) == 2
    assert {j.memory_id for j in store.pending_embeddings("model-y", 10)} == {r.id for r in rows}


def test_text_change_drops_the_vector(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a")
    store.insert_memories(ws, [row])
    store.store_embeddings(ws, ctx.id, "model-x", [(row.id, vec(1, 0))])
    changes = MemoryChanges({"summary": "b"}, lexical_tokens="b", text_changed=True)
    updated = store.update_memory(ws, row.id, changes, T0)
    assert updated is not None and updated.embedding_status == "pending"
    assert store.vector_search(ws, [ctx.id], vec(1, 0), LIVE, 5) == []
    assert store.lexical_search(ws, [ctx.id], ["b"], LIVE, 5)[0].memory_id == row.id


def test_soft_deleted_memory_leaves_the_vector_leg(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a")
    store.insert_memories(ws, [row])
    store.store_embeddings(ws, ctx.id, "model-x", [(row.id, vec(1, 0))])
    assert store.soft_delete_memory(ws, row.id, T0)
    assert store.vector_search(ws, [ctx.id], vec(1, 0), LIVE, 5) == []
    assert store.soft_delete_memory(ws, row.id, T0) is False  # already gone


def test_purge_erases_row_tokens_and_vector(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a", tokens="unicorn")
    store.insert_memories(ws, [row])
    store.store_embeddings(ws, ctx.id, "model-x", [(row.id, vec(1, 0))])
    assert store.purge_memory(ws, row.id)
    assert store.get_memory(ws, row.id) is None
    assert (
        store.lexical_search(ws, [ctx.id], ["unicorn"], MemoryFilter(include_deleted=True), 5) == []
    )
    assert store.vector_search(ws, [ctx.id], vec(1, 0), LIVE, 5) == []


def test_list_is_newest_first_and_keyset_paginated(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, f"m{i}", created_at=T0 + timedelta(seconds=i)) for i in range(5)]
    store.insert_memories(ws, rows)
    page1 = store.list_memories(ws, [ctx.id], LIVE, None, 2)
    assert [r.summary for r in page1] == ["m4", "m3"]
    page2 = store.list_memories(ws, [ctx.id], LIVE, (page1[-1].created_at, page1[-1].id), 2)
    assert [r.summary for r in page2] == ["m2", "m1"]


def test_deleting_a_context_removes_its_memories(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a", tokens="kiwi")
    store.insert_memories(ws, [row])
    assert store.delete_context(ws, ctx.id)
    assert store.get_memory(ws, row.id) is None
    other = new_context(store, ws, "other")
    assert store.lexical_search(ws, [other.id, ctx.id], ["kiwi"], LIVE, 5) == []


def test_record_access_counts(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a")
    store.insert_memories(ws, [row])
    store.record_access(ws, row.id, T0)
    store.record_access(ws, row.id, T0)
    got = store.get_memory(ws, row.id)
    assert got is not None and got.access_count == 2 and got.last_accessed_at == T0


def test_lexical_search_finds_in_scope_hits_behind_many_better_foreign_ones(
    store: Store, ws: str, foreign_ws: str
) -> None:
    """Out-of-scope rows that rank higher (other contexts, other tenants, deleted) never
    crowd an in-scope match out of the results."""
    mine = new_context(store, ws, "mine")
    other = new_context(store, ws, "other")
    theirs = new_context(store, foreign_ws, "theirs")
    strong = "needle needle needle"
    store.insert_memories(ws, [new_memory(other.id, "o", tokens=strong) for _ in range(300)])
    store.insert_memories(
        foreign_ws, [new_memory(theirs.id, "t", tokens=strong) for _ in range(300)]
    )
    deleted = [new_memory(mine.id, "d", tokens=strong) for _ in range(50)]
    store.insert_memories(ws, deleted)
    for row in deleted:
        store.soft_delete_memory(ws, row.id, T0)
    weak = new_memory(mine.id, "weak", tokens="needle hay hay hay hay hay hay hay")
    store.insert_memories(ws, [weak])
    hits = store.lexical_search(ws, [mine.id], ["needle"], LIVE, 5)
    assert [h.memory_id for h in hits] == [weak.id]


def test_pinned_and_upcoming_queries(store: Store, ws: str, foreign_ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    day = timedelta(days=1)
    rows = [
        new_memory(ctx.id, "always-low", delivery_mode="always", importance=0.1),
        new_memory(ctx.id, "always-high", delivery_mode="always", importance=0.9),
        new_memory(ctx.id, "open", delivery_mode="on_trigger", trigger_from=T0 - day,
                   trigger_until=T0 + day),
        new_memory(ctx.id, "later", delivery_mode="on_trigger", trigger_from=T0 + 5 * day),
        new_memory(ctx.id, "plain"),
    ]  # fmt: skip
    store.insert_memories(ws, rows)
    pinned, total = store.pinned_memories(ws, [ctx.id], LIVE, T0, 10)
    assert [r.summary for r in pinned] == ["always-high", "open", "always-low"] and total == 3
    first, total = store.pinned_memories(ws, [ctx.id], LIVE, T0, 1)
    assert [r.summary for r in first] == ["always-high"] and total == 3
    soon, _ = store.upcoming_memories(ws, [ctx.id], LIVE, T0, T0 + 10 * day, 10)
    assert [r.summary for r in soon] == ["open", "later"]
    assert store.pinned_memories(foreign_ws, [ctx.id], LIVE, T0, 10) == ([], 0)
