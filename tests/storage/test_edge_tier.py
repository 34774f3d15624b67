"""An edge's tier is one rule: ``joint_tier`` on a write, its SQL form on a read, both built
from ``TIERS_BY_TRUST``. Every combination of the ends' tiers and the stored one must come
back from the database as ``joint_tier`` says, on both engines."""

from __future__ import annotations

import uuid
from itertools import product

from kioku.storage.base import Store
from kioku.storage.graph import TIERS_BY_TRUST, joint_tier
from kioku.storage.records import EdgeRow
from tests.storage.test_contract import T0, new_context, new_memory


def test_an_edge_read_has_the_tier_joint_tier_gives_on_both_engines(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    cases = list(product(TIERS_BY_TRUST, repeat=3))  # (source's, target's, stored)
    pairs = [tuple(sorted(str(uuid.uuid4()) for _ in range(2))) for _ in cases]
    store.insert_memories(
        ws,
        [
            new_memory(ctx.id, f"end {n}", id=memory_id, trust_tier=tier)
            for n, ((source, target, _), pair) in enumerate(zip(cases, pairs, strict=True))
            for memory_id, tier in zip(pair, (source, target), strict=True)
        ],
    )
    with store.edge_transaction(ws) as tx:
        tx.upsert(
            [
                EdgeRow(ws, ctx.id, a, b, 0.5, "declared", stored, T0, T0)
                for (a, b), (_, _, stored) in zip(pairs, cases, strict=True)
            ]
        )
    expected = {pair: joint_tier(*case) for pair, case in zip(pairs, cases, strict=True)}
    listed = {edge.pair: edge.trust_tier for edge in store.list_edges(ws, ctx.id)}
    assert listed == expected
    touching = store.edges_touching(ws, [a for a, _ in pairs])
    assert {edge.pair: edge.trust_tier for edge in touching} == expected
    assert set(expected.values()) == set(TIERS_BY_TRUST)  # both sides of the boundary seen
