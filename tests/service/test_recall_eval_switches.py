"""The two switches the eval gate uses: recall without the re-ranker, and dated writes; and
the tie rule that makes a ranking independent of the uuids memories draw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kioku.models import MemoryCreate, RecallRequest
from kioku.runtime import Runtime
from kioku.service.principal import Principal


def remember(runtime: Runtime, principal: Principal, summary: str, **fields: object) -> str:
    data = MemoryCreate.model_validate({"summary": summary, **fields})
    return runtime.memories.remember(principal, "default", data).id


def test_rerank_false_keeps_the_fused_order(runtime: Runtime, principal: Principal) -> None:
    remember(runtime, principal, "the deploy checklist", importance=1.0)
    remember(runtime, principal, "the deploy calendar", importance=0.0)
    request = RecallRequest(query="deploy", k=5)
    plain = runtime.recall.recall(principal, "default", request, rerank=False)
    assert {hit.score_breakdown.rerank for hit in plain.results} == {1.0}
    assert all(hit.score == hit.score_breakdown.fused for hit in plain.results)
    nudged = runtime.recall.recall(principal, "default", request)
    assert len({hit.score_breakdown.rerank for hit in nudged.results}) == 2


def test_created_clock_dates_new_memories(runtime: Runtime, principal: Principal) -> None:
    when = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)
    runtime.memories.clock = lambda: when
    memory_id = remember(runtime, principal, "written last year")
    row = runtime.store.get_memory(principal.workspace_id, memory_id)
    assert row is not None and row.created_at == when


def test_equal_scores_go_to_the_newer_memory(runtime: Runtime, principal: Principal) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ids = []
    for days in (0, 30, 10):  # the same text thrice: identical scores on both legs
        runtime.memories.clock = lambda days=days: start + timedelta(days=days)
        ids.append(remember(runtime, principal, "standup is at ten"))
    request = RecallRequest(query="standup", k=3)
    result = runtime.recall.recall(principal, "default", request, rerank=False)
    assert [hit.id for hit in result.results] == [ids[1], ids[2], ids[0]]
