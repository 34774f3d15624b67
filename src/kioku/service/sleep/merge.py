"""Phase 3: merge near-duplicates by the cosine of their stored vectors, never two facts.

Among the newest ``max_memories`` live memories of the context, pairs of one trust tier,
neither pinned, with cosine ≥ ``merge_threshold`` are merged, most similar first: the newer
wins, the older is superseded (``superseded_by``), its tags and edges go to the winner. A
memory superseded in this run takes part in no further merge (no chains).

A vector cannot tell INV-1001 from INV-1002 (cosine 0.99 with the bundled model), so before
any merge, whoever proposed it (this phase or the LLM judgement), the two texts are compared
(``search/facts.py``): a pair that differs in an identifier, version, date, time, amount,
number, negation or name is kept apart, and the report lists it as a ``rejected`` action
whose note says why ("kept apart (cosine 0.9963): they differ in identifier INV-1001 vs
INV-1002") and whose ``after`` holds the differences (docs/sleep.md).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

import numpy as np

from kioku.search.facts import Facts, describe, differing_facts, facts_of
from kioku.service.sleep.log import sleep_merge
from kioku.service.sleep.rules import is_pinned, newer_first, refusal, stated_text
from kioku.service.sleep.runner import RunContext
from kioku.storage.records import MemoryRow

Outcome = Literal["merged", "kept_apart", "refused", "unchanged"]
KEPT_APART_LISTED = 200
"""Kept-apart pairs a run's merge phase lists in its report; beyond, they are only counted
(a context of templated notes, "build 1234 passed" × 2,000, holds millions of such pairs)."""


def similar_pairs(
    rows: list[MemoryRow], vectors: np.ndarray, threshold: float
) -> list[tuple[float, MemoryRow, MemoryRow]]:
    """Pairs of one trust tier with cosine ≥ ``threshold``, most similar first (ties by ids)."""
    found: list[tuple[float, MemoryRow, MemoryRow]] = []
    if len(rows) < 2:
        return found
    sims = vectors @ vectors.T
    tiers = np.array([row.trust_tier for row in rows])
    same_tier = tiers[:, None] == tiers[None, :]
    upper = np.triu(np.ones_like(sims, dtype=bool), k=1)
    for i, j in zip(*np.nonzero((sims >= threshold) & same_tier & upper), strict=True):
        found.append((float(sims[i, j]), rows[i], rows[j]))
    found.sort(
        key=lambda item: (-item[0], min(item[1].id, item[2].id), max(item[1].id, item[2].id))
    )
    return found


def candidates(run: RunContext) -> tuple[list[MemoryRow], np.ndarray]:
    """The live, unpinned memories a run considers, with their vectors (one model per
    context, so all of one dimension)."""
    found = run.store.sleep_candidates(run.workspace_id, run.context.id, run.config.max_memories)
    kept = [(row, vector) for row, vector in found if not is_pinned(row)]
    if not kept:
        return [], np.zeros((0, 0), dtype=np.float32)
    return [row for row, _ in kept], np.stack([vector for _, vector in kept]).astype(np.float32)


def read_facts(run: RunContext, memory: MemoryRow) -> Facts:
    """What a memory states, read once a run (again if its text changed)."""
    text = stated_text(memory)
    cached = run.read_facts.get(memory.id)
    if cached is None or cached[0] != text:
        cached = (text, facts_of(text))
        run.read_facts[memory.id] = cached
    return cached[1]


def merge_pair(
    run: RunContext, phase: str, a: MemoryRow, b: MemoryRow, note: str, *, listed: bool = True
) -> Outcome:
    """Merge two memories under the rules (newer wins) unless they state different facts
    (then logged as a ``rejected`` action, if ``listed``)."""
    target = f"{a.id}|{b.id}"
    reason = refusal(run.context.id, a, b)
    if reason is not None:
        run.reject(phase, target, reason)
        return "refused"
    differences = differing_facts(read_facts(run, a), read_facts(run, b))
    if differences:
        if not listed:
            return "kept_apart"
        run.reject(
            phase, target, f"kept apart ({note}): they differ in {describe(differences)}",
            {"kept_apart": [a.id, b.id], "differences": [asdict(d) for d in differences]},
        )  # fmt: skip
        return "kept_apart"
    winner, loser = newer_first(a, b)
    actions = sleep_merge(
        run.store,
        run.workspace_id,
        run.run_id,
        phase,
        loser.id,
        winner.id,
        run.now,
        run.tokens_of,
        note,
        compared={a.id: stated_text(a), b.id: stated_text(b)},
    )
    return "merged" if actions else "unchanged"


def merge_duplicates(run: RunContext) -> dict[str, Any]:
    """Merge every near-duplicate pair above the threshold that states one fact."""
    rows, vectors = candidates(run)
    merged: set[str] = set()
    count = kept_apart = 0
    for cosine, a, b in similar_pairs(rows, vectors, run.config.merge_threshold):
        if a.id in merged or b.id in merged:
            continue
        listed = kept_apart < KEPT_APART_LISTED
        outcome = merge_pair(run, "merge", a, b, f"cosine {cosine:.4f}", listed=listed)
        if outcome == "merged":
            merged.add(newer_first(a, b)[1].id)
            count += 1
        kept_apart += outcome == "kept_apart"
    counts = {"considered": len(rows), "merged": count, "kept_apart": kept_apart}
    if kept_apart > KEPT_APART_LISTED:
        counts["kept_apart_unlisted"] = kept_apart - KEPT_APART_LISTED
    return counts
