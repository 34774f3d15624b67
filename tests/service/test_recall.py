from __future__ import annotations

import pytest

from kioku.errors import InvalidInputError, NotFoundError
from kioku.models import BatchCreate, ContextCreate, MemoryCreate, RecallFilters, RecallRequest
from kioku.runtime import Runtime
from kioku.service.principal import Principal


def seed(runtime: Runtime, principal: Principal, context: str = "default") -> list[str]:
    items = [
        {"summary": "The deploy runs every Friday at 5pm", "type": "fact", "tags": ["ops"]},
        {"summary": "Alice prefers tea over coffee", "type": "preference", "importance": 0.9},
        {"summary": "東京都の本社は渋谷にある", "type": "fact", "tags": ["office"]},
        {"summary": "Never force-push to main", "type": "rule", "delivery_mode": "always"},
    ]
    result = runtime.memories.remember_batch(principal, context, BatchCreate(items=items))
    return [r.memory_id or "" for r in result.results]


def ask(runtime: Runtime, principal: Principal, query: str, **kw: object):
    return runtime.recall.recall(principal, "default", RecallRequest(query=query, **kw))  # type: ignore[arg-type]


def test_recall_finds_the_matching_memory_with_a_breakdown(
    runtime: Runtime, principal: Principal
) -> None:
    ids = seed(runtime, principal)
    result = ask(runtime, principal, "when does the deploy run?")
    top = result.results[0]
    assert top.id == ids[0]
    assert top.score_breakdown.lexical_rank == 1
    assert top.score_breakdown.vector is not None
    assert top.score == pytest.approx(
        top.score_breakdown.fused * top.score_breakdown.rerank, rel=1e-5
    )
    assert result.legs == ["lexical", "vector"]
    assert result.confidence in {"high", "moderate"}


def test_japanese_query_matches_a_differently_phrased_memory(
    runtime: Runtime, principal: Principal
) -> None:
    ids = seed(runtime, principal)
    assert ask(runtime, principal, "東京の本社").results[0].id == ids[2]


def test_recall_is_deterministic(runtime: Runtime, principal: Principal) -> None:
    seed(runtime, principal)
    first = ask(runtime, principal, "tea coffee deploy", k=4).model_dump()
    for _ in range(3):
        assert ask(runtime, principal, "tea coffee deploy", k=4).model_dump() == first


def test_k_caps_the_results(runtime: Runtime, principal: Principal) -> None:
    seed(runtime, principal)
    assert len(ask(runtime, principal, "the", k=1).results) <= 1


def test_nothing_found_is_confidence_none(runtime: Runtime, principal: Principal) -> None:
    result = runtime.recall.recall(principal, "default", RecallRequest(query="anything"))
    assert result.results == [] and result.confidence == "none"


def test_filters_narrow_recall(runtime: Runtime, principal: Principal) -> None:
    ids = seed(runtime, principal)
    result = ask(runtime, principal, "deploy tea office", k=10, filters=RecallFilters(type="fact"))
    assert {hit.id for hit in result.results} == {ids[0], ids[2]}
    result = ask(runtime, principal, "deploy", k=10, filters=RecallFilters(delivery_mode="always"))
    assert {hit.id for hit in result.results} <= {ids[3]}


def test_trusted_filter_excludes_external_memories(runtime: Runtime, principal: Principal) -> None:
    runtime.contexts.create_context(principal, ContextCreate(name="inbox", trust_tier="external"))
    runtime.memories.remember(
        principal, "inbox", MemoryCreate(summary="refunds are always allowed")
    )
    trusted = runtime.memories.remember(
        principal, "default", MemoryCreate(summary="refunds need approval")
    )
    both = RecallFilters(context_ids=["inbox"])
    everything = ask(runtime, principal, "refunds", k=10, filters=both)
    assert {hit.trust_tier for hit in everything.results} == {"trusted", "external"}
    only = ask(runtime, principal, "refunds", k=10,
               filters=RecallFilters(context_ids=["inbox"], trust_tier="trusted"))  # fmt: skip
    assert [hit.id for hit in only.results] == [trusted.id]


def test_forgotten_memories_are_not_recalled(runtime: Runtime, principal: Principal) -> None:
    ids = seed(runtime, principal)
    runtime.memories.forget(principal, "default", ids[1])
    assert all(hit.id != ids[1] for hit in ask(runtime, principal, "tea coffee", k=10).results)


def test_recall_in_another_workspace_context_is_404(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    seed(runtime, principal)
    default_id = runtime.contexts.resolve(principal, "default").id
    with pytest.raises(NotFoundError):
        runtime.recall.recall(other_principal, default_id, RecallRequest(query="tea"))
    runtime.contexts.create_context(other_principal, ContextCreate(name="mine"))
    with pytest.raises(NotFoundError):
        runtime.recall.recall(
            other_principal, "mine",
            RecallRequest(query="tea", filters=RecallFilters(context_ids=[default_id])),
        )  # fmt: skip


def test_empty_filter_ranges_are_rejected(runtime: Runtime, principal: Principal) -> None:
    with pytest.raises(InvalidInputError) as info:
        ask(runtime, principal, "x", filters=RecallFilters(importance_min=0.8, importance_max=0.2))
    assert info.value.field == "filters.importance_min"


def test_lexical_recall_works_before_embedding(runtime: Runtime, principal: Principal) -> None:
    runtime.memories.embedding = None  # as if the worker had not got to it yet
    memory = runtime.memories.remember(principal, "default", MemoryCreate(summary="quokka facts"))
    assert memory.embedding_status == "pending"
    assert ask(runtime, principal, "quokka").results[0].id == memory.id
