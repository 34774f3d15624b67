"""Phase 5 (optional): a chat model judges borderline duplicates, proposes edges between
related memories, and writes summaries of clusters.

The model only *proposes*. Its answer must parse against a strict schema (unknown keys, wrong
types, too many items: the whole answer is refused and logged). Each proposed action is then
checked like any Sleep change: labels must be of the batch shown, a merge must be one of the
pairs offered, and nothing may cross contexts or trust tiers or touch a pinned, deleted or
superseded memory (``rules.refusal``). Refusals are logged as ``rejected`` actions. A merge
still follows the deterministic rule (newer wins), whatever the model preferred. Summaries are
``source_type=sleep`` memories, linked to their sources by ``sleep`` edges, ``external`` if any
source is (taint, stored with the summary: it stays external whatever its context becomes).
A run makes at most ``max_calls`` calls.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import httpx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from kioku.errors import first_error
from kioku.models.base import MAX_SUMMARY_CHARS
from kioku.service.memories import judge_instructions
from kioku.service.sleep.config import LLMConfig
from kioku.service.sleep.llm import SYSTEM, ChatModel, fence, labelled
from kioku.service.sleep.log import sleep_insert_memory, sleep_write_edges
from kioku.service.sleep.merge import candidates, merge_pair, similar_pairs
from kioku.service.sleep.rules import refusal
from kioku.service.sleep.runner import Phase, RunContext
from kioku.storage.records import EdgeRow, MemoryRow, NewMemory

LabelRef = Annotated[StrictStr, Field(min_length=2, max_length=8, pattern=r"^M[0-9]{1,4}$")]
Pair = tuple[LabelRef, LabelRef]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Duplicates(_Answer):
    duplicates: list[Pair] = Field(max_length=50)


class Related(_Answer):
    related: list[Pair] = Field(max_length=50)


class Summary(_Answer):
    summary: StrictStr = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    content: StrictStr = Field(default="", max_length=4000)
    sources: list[LabelRef] = Field(min_length=2, max_length=50)


AnswerT = TypeVar("AnswerT", bound=BaseModel)


@dataclass
class Budget:
    """Chat calls left in this run."""

    left: int
    used: int = 0

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def ask(
    run: RunContext, chat: ChatModel, phase: str, prompt: str, schema: type[AnswerT]
) -> AnswerT | None:
    """One call; the parsed answer, or ``None`` (failure or refusal logged)."""
    try:
        text = chat.complete(SYSTEM, prompt)
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        run.reject(phase, run.context.id, f"model call failed: {type(exc).__name__}")
        return None
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        where, message = first_error(exc)
        run.reject(
            phase, run.context.id, f"answer refused by the schema: {where or 'answer'}: {message}",
            proposal=text[:2000],
        )  # fmt: skip
        return None


def resolve(
    run: RunContext, phase: str, batch: dict[str, MemoryRow], labels: list[str], proposal: Any
) -> list[MemoryRow] | None:
    """The memories behind labels, or ``None`` (logged) if one is not of the batch."""
    outside = [label for label in labels if label not in batch]
    if outside:
        run.reject(
            phase, run.context.id, f"names a label outside the batch: {outside[0]}", proposal
        )
        return None
    return [batch[label] for label in labels]


def judge_merges(run: RunContext, chat: ChatModel, llm: LLMConfig, budget: Budget) -> int:
    """Ask about pairs just under the merge threshold; merge the ones judged the same,
    unless they state different facts (``merge_pair``'s guard, whatever the model said)."""
    rows, vectors = candidates(run)
    pairs = [
        (a, b) for cosine, a, b in similar_pairs(rows, vectors, llm.judge_threshold)
        if cosine < run.config.merge_threshold
    ]  # fmt: skip
    merged = 0
    while pairs and budget.take():
        chunk: list[tuple[MemoryRow, MemoryRow]] = []
        members: dict[str, MemoryRow] = {}
        for a, b in list(pairs):
            if len(members | {a.id: a, b.id: b}) > llm.batch_size:
                break
            members |= {a.id: a, b.id: b}
            chunk.append((a, b))
            pairs.remove((a, b))
        batch = labelled(list(members.values()))
        label_of = {row.id: label for label, row in batch.items()}
        offered = {frozenset((label_of[a.id], label_of[b.id])) for a, b in chunk}
        listing = "\n".join(f"{label_of[a.id]} ~ {label_of[b.id]}" for a, b in chunk)
        prompt = (
            f"{fence(batch)}\n\nCandidate pairs:\n{listing}\n\nWhich candidate pairs say the "
            'same thing (one memory is redundant)? Answer {"duplicates": [["Ma", "Mb"], ...]} '
            "with candidate pairs only; [] if none."
        )
        answer = ask(run, chat, "llm_merge", prompt, Duplicates)
        for pair in answer.duplicates if answer else []:
            found = resolve(run, "llm_merge", batch, list(pair), list(pair))
            if found is None:
                continue
            if frozenset(pair) not in offered:
                run.reject("llm_merge", f"{found[0].id}|{found[1].id}", "not a candidate pair")
                continue
            outcome = merge_pair(run, "llm_merge", found[0], found[1], "model judged a duplicate")
            merged += outcome == "merged"
    return merged


def discover_edges(run: RunContext, chat: ChatModel, llm: LLMConfig, budget: Budget) -> int:
    """Show batches of memories (one trust tier each); link the pairs the model relates."""
    rows, _ = candidates(run)
    created = 0
    for tier in ("trusted", "external"):
        group = [row for row in rows if row.trust_tier == tier]
        for start in range(0, len(group), llm.batch_size):
            members = group[start : start + llm.batch_size]
            if len(members) < 2 or not budget.take():
                continue
            batch = labelled(members)
            prompt = (
                f"{fence(batch)}\n\nWhich pairs of these memories are about the same person, "
                'event or topic (related, not duplicates)? Answer {"related": [["Ma", "Mb"], '
                "...]}; [] if none."
            )
            answer = ask(run, chat, "llm_edges", prompt, Related)
            created += _link(run, batch, answer.related if answer else [], llm.edge_weight)
    return created


def _link(run: RunContext, batch: dict[str, MemoryRow], pairs: list[Pair], weight: float) -> int:
    rows: dict[tuple[str, str], EdgeRow] = {}
    for pair in pairs:
        found = resolve(run, "llm_edges", batch, list(pair), list(pair))
        if found is None:
            continue
        reason = refusal(run.context.id, *found)
        if reason is not None:
            run.reject("llm_edges", f"{found[0].id}|{found[1].id}", reason, list(pair))
            continue
        a, b = sorted(row.id for row in found)
        rows[(a, b)] = EdgeRow(
            run.workspace_id, run.context.id, a, b, weight, "sleep", found[0].trust_tier,
            run.now, run.now,
        )  # fmt: skip
    existing = {e.pair for e in run.store.edges_touching(run.workspace_id, [p[0] for p in rows])}
    new = [row for pair, row in sorted(rows.items()) if pair not in existing]
    if new:
        sleep_write_edges(run.store, run.workspace_id, run.run_id, "llm_edges", new, [], run.now)
    return len(new)


def clusters(rows: list[MemoryRow], vectors: np.ndarray, threshold: float, size: int):
    """Greedy clusters (newest seed first) of ≥ 3 memories of one tier, written by people."""
    taken: set[int] = set()
    sims = vectors @ vectors.T if len(rows) else vectors
    for i, seed in enumerate(rows):
        if i in taken or seed.source_type == "sleep":
            continue
        members = [
            j for j in np.argsort(-sims[i], kind="stable")
            if j not in taken and sims[i, j] >= threshold and rows[j].source_type != "sleep"
            and rows[j].trust_tier == seed.trust_tier
        ][:size]  # fmt: skip
        if len(members) >= 3:
            taken.update(int(j) for j in members)
            yield [rows[int(j)] for j in members]


def summarise(run: RunContext, chat: ChatModel, llm: LLMConfig, budget: Budget) -> int:
    """Write one ``source_type=sleep`` memory per cluster, linked to its sources."""
    rows, vectors = candidates(run)
    written = 0
    for cluster in clusters(rows, vectors, llm.cluster_threshold, llm.batch_size):
        if written >= llm.max_summaries or not _unsummarised(run, cluster) or not budget.take():
            continue
        batch = labelled(cluster)
        prompt = (
            f"{fence(batch)}\n\nWrite one memory that summarises what these memories say "
            'together. Answer {"summary": "one sentence, at most 500 characters", "content": '
            '"details, optional", "sources": ["Ma", "Mb", ...]} naming the memories you used.'
        )
        answer = ask(run, chat, "llm_summary", prompt, Summary)
        if answer is None:
            continue
        sources = resolve(run, "llm_summary", batch, answer.sources, answer.model_dump())
        if sources is None:
            continue
        reason = refusal(run.context.id, *sources)
        if reason is not None:
            run.reject("llm_summary", run.context.id, reason, answer.model_dump())
            continue
        _write_summary(run, answer, sources)
        written += 1
    return written


def _unsummarised(run: RunContext, cluster: list[MemoryRow]) -> bool:
    """False when every member already links (``sleep`` edge) to one Sleep summary."""
    ids = {row.id for row in cluster}
    linked: dict[str, set[str]] = {row.id: set() for row in cluster}
    for edge in run.store.edges_touching(run.workspace_id, sorted(ids)):
        if edge.origin == "sleep":
            for end in edge.pair:
                if end in linked:
                    linked[end].add(edge.other(end))
    common = set.intersection(*linked.values()) - ids
    return not common


def _write_summary(run: RunContext, answer: Summary, sources: list[MemoryRow]) -> None:
    external = run.context.trust_tier == "external" or any(
        row.trust_tier == "external" for row in sources
    )
    tier = "external" if external else "trusted"
    row = NewMemory(
        id=str(uuid.uuid4()), context_id=run.context.id, summary=answer.summary,
        content=answer.content, type="summary", tags=[], importance=0.5,
        delivery_mode="on_recall", trigger_from=None, trigger_until=None, source_type="sleep",
        source_uri=f"kioku:sleep/{run.run_id}", trust_tier=tier,
        lexical_tokens=run.tokens_of(answer.summary, answer.content, []), created_at=run.now,
        instruction_like=judge_instructions(tier, answer.summary, answer.content),
        tainted=external,
    )  # fmt: skip
    edges = [
        EdgeRow(
            run.workspace_id, run.context.id, min(row.id, source.id), max(row.id, source.id),
            0.5, "sleep", tier, run.now, run.now,
        )
        for source in sources
    ]  # fmt: skip
    sleep_insert_memory(
        run.store, run.workspace_id, run.run_id, "llm_summary", row, edges, run.now,
        note=f"summary of {len(sources)} memories",
    )  # fmt: skip


def llm_phases(chat: ChatModel, llm: LLMConfig) -> Phase:
    """Phase 5 as one phase function: judgement, then edges, then summaries, sharing
    ``max_calls`` (each gets a third, unused calls roll over)."""

    def phase(run: RunContext) -> dict[str, Any]:
        budget = Budget(0)
        total = llm.max_calls
        counts: dict[str, Any] = {}
        steps: list[tuple[str, Callable[..., int], int]] = [
            ("judged_merged", judge_merges, math.ceil(total / 3)),
            ("edges_created", discover_edges, math.ceil(total / 3)),
            ("summaries", summarise, total),
        ]
        for name, step, share in steps:
            budget.left = min(share, total - budget.used)
            counts[name] = step(run, chat, llm, budget)
        counts["calls"] = budget.used
        return counts

    return phase
