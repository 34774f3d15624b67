"""The association graph in the service: learning from recall and feedback, declared
links, explore, related memories, and the trust wall around all of them."""

from __future__ import annotations

import pytest

from kioku.errors import InvalidInputError, NotFoundError
from kioku.models import (
    BatchCreate,
    ContextCreate,
    FeedbackCreate,
    MemoryCreate,
    RecallFilters,
    RecallRequest,
)
from kioku.runtime import Runtime
from kioku.service.graph import GraphSettings
from kioku.service.hebbian import declare_edges
from kioku.service.principal import Principal

TRUSTED = RecallFilters(trust_tier="trusted")


def remember(
    runtime: Runtime, principal: Principal, summary: str, context: str = "default", **kw: object
) -> str:
    data = MemoryCreate(summary=summary, **kw)  # type: ignore[arg-type]
    return runtime.memories.remember(principal, context, data).id


def weights(runtime: Runtime, principal: Principal, context: str = "default") -> dict:
    ctx = runtime.contexts.resolve(principal, context)
    return {
        frozenset(edge.pair): edge.weight
        for edge in runtime.store.list_edges(principal.workspace_id, ctx.id)
    }


def test_recall_strengthens_the_top_three_pairwise(runtime: Runtime, principal: Principal) -> None:
    ids = [remember(runtime, principal, f"kiwi fruit note {n}") for n in range(5)]
    result = runtime.recall.recall(principal, "default", RecallRequest(query="kiwi fruit", k=5))
    top = [hit.id for hit in result.results[:3]]
    assert set(top) <= set(ids)
    learned = weights(runtime, principal)
    assert set(learned) == {frozenset((a, b)) for i, a in enumerate(top) for b in top[i + 1 :]}
    assert set(learned.values()) == {0.1}
    runtime.recall.recall(principal, "default", RecallRequest(query="kiwi fruit", k=5))
    assert sorted(weights(runtime, principal).values()) == pytest.approx([0.19] * 3)


def test_helpful_feedback_links_co_helpful_memories_and_unhelpful_weakens(
    runtime: Runtime, principal: Principal
) -> None:
    a, b, c = (remember(runtime, principal, f"note {x}") for x in "abc")
    query = "where is the staging database?"

    def vote(memory_id: str, helpful: bool, q: str | None = query) -> None:
        runtime.feedback.feedback(
            principal, "default", FeedbackCreate(memory_id=memory_id, helpful=helpful, query=q)
        )

    vote(a, True)
    assert weights(runtime, principal) == {}
    vote(b, True)
    assert weights(runtime, principal) == {frozenset((a, b)): 0.2}
    vote(c, True, q=None)  # no query: nothing to be co-helpful with
    vote(c, True, q="another question")
    assert weights(runtime, principal) == {frozenset((a, b)): 0.2}
    vote(a, False)  # a was not helpful after all: its links to b weaken
    assert weights(runtime, principal) == {frozenset((a, b)): pytest.approx(0.16)}


def test_linked_memory_ids_declare_edges_in_the_same_context_only(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    admin = principal
    runtime.contexts.ensure_context(other_principal, "default")
    runtime.contexts.create_context(admin, ContextCreate(name="other"))
    runtime.contexts.create_context(admin, ContextCreate(name="slack", trust_tier="external"))
    a = remember(runtime, principal, "the release checklist")
    b = remember(runtime, principal, "the rollback plan", linked_memory_ids=[a, a])
    assert weights(runtime, principal) == {frozenset((a, b)): 0.5}
    detail = runtime.memories.get_memory(principal, "default", a)
    assert [(e.memory_id, e.weight, e.origin) for e in detail.edges] == [(b, 0.5, "declared")]
    elsewhere = remember(runtime, principal, "a note elsewhere", "other")
    external = remember(runtime, principal, "from slack", "slack")
    foreign = remember(runtime, other_principal, "the tenant next door")
    gone = remember(runtime, principal, "forgotten")
    runtime.memories.forget(principal, "default", gone)
    for bad in (elsewhere, external, foreign, gone, "no-such-id"):
        with pytest.raises(NotFoundError) as err:
            remember(runtime, principal, "orphan", linked_memory_ids=[a, bad])
        assert err.value.field == "linked_memory_ids"
    assert [m.summary for m in runtime.memories.list_memories(principal, "default").items] == [
        "the rollback plan",
        "the release checklist",
    ]  # nothing was written by the refused calls ("forgotten" is soft-deleted)
    batch = BatchCreate(
        items=[
            {"summary": "ok", "linked_memory_ids": [a]},
            {"summary": "bad", "linked_memory_ids": [foreign]},
        ]
    )
    result = runtime.memories.remember_batch(principal, "default", batch)
    assert [r.status for r in result.results] == ["created", "error"]
    assert result.results[1].error == {
        "code": "not_found",
        "field": "items[1].linked_memory_ids",
        "message": f"memory {foreign!r} not found",
    }
    assert len(weights(runtime, principal)) == 2


def test_a_trusted_memory_may_link_to_an_external_one_but_the_edge_is_external(
    runtime: Runtime, principal: Principal
) -> None:
    connector = Principal(workspace_id=principal.workspace_id, channel="connector")
    external = remember(runtime, connector, "a customer's claim about refunds")
    trusted = remember(runtime, principal, "our refund policy", linked_memory_ids=[external])
    [edge] = runtime.memories.get_memory(principal, "default", trusted).edges
    assert (edge.memory_id, edge.trust_tier) == (external, "external")
    assert runtime.graph.explore(principal, "default", trusted, filters=TRUSTED).neighbours == []
    assert [n.id for n in runtime.graph.explore(principal, "default", trusted).neighbours] == [
        external
    ]


def test_explore_spreads_activation_with_paths(runtime: Runtime, principal: Principal) -> None:
    ctx = runtime.contexts.resolve(principal, "default")
    ws = principal.workspace_id
    a, b, c, d = (remember(runtime, principal, f"memory {x}") for x in "abcd")
    now = runtime.clock()
    declare_edges(runtime.store, ws, ctx.id, [(a, b)], 0.8, now)
    declare_edges(runtime.store, ws, ctx.id, [(b, c)], 0.5, now)
    declare_edges(runtime.store, ws, ctx.id, [(c, d)], 0.9, now)
    declare_edges(runtime.store, ws, ctx.id, [(a, c)], 0.3, now)
    result = runtime.graph.explore(principal, "default", a, depth=3)
    got = [(n.id, n.activation, n.hops, n.path) for n in result.neighbours]
    assert got == [
        (b, 0.8, 1, [a, b]),
        (c, 0.4, 2, [a, b, c]),  # 0.8 · 0.5 beats the direct 0.3
        (d, 0.36, 3, [a, b, c, d]),
    ]
    shallow = runtime.graph.explore(principal, "default", a, depth=1)
    assert [(n.id, n.activation) for n in shallow.neighbours] == [(b, 0.8), (c, 0.3)]
    assert [
        n.id for n in runtime.graph.explore(principal, "default", a, min_weight=0.6).neighbours
    ] == [b]
    assert len(runtime.graph.explore(principal, "default", a, depth=3, limit=1).neighbours) == 1
    for bad in ({"depth": 4}, {"depth": 0}, {"limit": 0}, {"min_weight": 2.0}):
        with pytest.raises(InvalidInputError):
            runtime.graph.explore(principal, "default", a, **bad)  # type: ignore[arg-type]


def test_explore_of_a_missing_foreign_or_deleted_memory_is_not_found(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    mine = remember(runtime, principal, "mine")
    runtime.contexts.ensure_context(other_principal, "default")
    with pytest.raises(NotFoundError):
        runtime.graph.explore(other_principal, "default", mine)
    runtime.memories.forget(principal, "default", mine)
    with pytest.raises(NotFoundError):
        runtime.graph.explore(principal, "default", mine)
    with pytest.raises(NotFoundError):
        runtime.graph.explore(principal, "default", "no-such-id")


def test_recall_include_related_returns_neighbours_not_results(
    runtime: Runtime, principal: Principal
) -> None:
    hit = remember(runtime, principal, "the quarterly kiwi report")
    linked = remember(runtime, principal, "budget owner is Dana", linked_memory_ids=[hit])
    request = RecallRequest(query="kiwi report", k=1, include_related=True)
    result = runtime.recall.recall(principal, "default", request)
    assert [h.id for h in result.results] == [hit]
    assert [(n.id, n.path) for n in result.related] == [(linked, [hit, linked])]
    plain = runtime.recall.recall(principal, "default", RecallRequest(query="kiwi report"))
    assert plain.related == []
    both = runtime.recall.recall(
        principal, "default", RecallRequest(query="kiwi report budget Dana", include_related=True)
    )
    assert {h.id for h in both.results} == {hit, linked} and both.related == []


def test_graph_boost_is_off_by_default_and_only_reorders_candidates(
    runtime: Runtime, principal: Principal
) -> None:
    from kioku.models import ContextUpdate

    ctx = runtime.contexts.resolve(principal, "default")
    top = remember(runtime, principal, "kiwi kiwi kiwi harvest")
    low = remember(runtime, principal, "kiwi notes")
    mid = remember(runtime, principal, "kiwi kiwi season")
    runtime.graph.associations.settings = GraphSettings(learn=False)
    declare_edges(runtime.store, principal.workspace_id, ctx.id, [(top, low)], 1.0, runtime.clock())
    request = RecallRequest(query="kiwi", k=3)
    plain = runtime.recall.recall(principal, "default", request)
    assert plain.results[0].score_breakdown.graph is None
    first, *_ = plain.results
    # Each end of the edge gains β × the other end's score / the top score: ``low`` gets the
    # full boost from ``top``, and ``top`` what ``low`` scored (the rank term of fusion gives
    # a memory every leg ranks last a score above 0).
    score = {h.id: h.score for h in plain.results}
    partner = {top: low, low: top}
    factor = {
        h.id: 1.0 + score[partner[h.id]] / first.score if h.id in partner else 1.0
        for h in plain.results
    }
    expected = sorted(plain.results, key=lambda h: (-h.score * factor[h.id], h.id))
    runtime.contexts.update_context(
        principal, "default", ContextUpdate(search_config={"graph_boost": 1.0})
    )
    boosted = runtime.recall.recall(principal, "default", request)
    assert [h.id for h in boosted.results] == [h.id for h in expected]
    graph = {h.id: h.score_breakdown.graph for h in boosted.results}
    assert graph == pytest.approx(factor, abs=1e-6)
    assert factor[low] == pytest.approx(2.0)
    assert {mid, low, top} == set(factor)
