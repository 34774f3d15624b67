"""Lane leakage: what must never cross a lane (docs/eval.md, "Leakage"), counted on a real runtime.

Beside the golden set the runtime gets state keys, feedback events with notes, a state key
that has expired, and a second workspace holding copies of golden documents. Every text planted
outside the memory lane carries a marker word, so a leak is found by looking for it. Then the
golden queries, plus adversarial ones naming the planted keys and notes, go through ``recall``
(with and without the trust filter, graph neighbours included), ``load_pinned`` (trusted),
``list_memories`` and the state lane, and each kind of leak is counted. Every count must be 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

from kioku.errors import KiokuError
from kioku.eval.corpus import GoldenRuntime, write_golden
from kioku.eval.golden import GoldenSet
from kioku.eval.metrics import DEPTH
from kioku.models import FeedbackCreate, Memory, RecallFilters, RecallRequest, StateSet
from kioku.service.principal import Principal

STATE_MARK = "zqstatemark"
FEEDBACK_MARK = "zqfeedbackmark"
INTRUDER_MARK = "zqintrudermark"
INTRUDER_WORKSPACE = "eval-intruder"
EXPIRED_KEY = "expired-run"
STATE_KEYS = {
    "deploy-progress": "step 3 of 5: canary rollout of the checkout flow, backups verified",
    "review-queue": "pull requests waiting for Haruka: payments webhook, staging database port",
    "作業メモ": "本番デプロイの前にバックアップを確認中",
}
ADVERSARIAL = (
    f"{STATE_MARK} deploy-progress canary rollout step",
    "review-queue pull requests waiting",
    f"{FEEDBACK_MARK} why was this memory unhelpful",
    f"{INTRUDER_MARK} copied notes from the other tenant",
    "作業メモ バックアップを確認中",
)
COUNTS = (
    "external_in_trusted_recall",
    "external_in_trusted_pinned",
    "state_in_results",
    "feedback_in_results",
    "cross_workspace_results",
    "expired_state_returned",
)


@dataclass
class LaneReport:
    """A count per kind of leak (all must be 0), a few examples of each, and the probe count."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    examples: dict[str, list[str]] = field(default_factory=dict)
    probes: int = 0

    def count(self, kind: str, example: str) -> None:
        """Record one leak."""
        self.counts[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < 5:
            shown.append(example)

    @property
    def total(self) -> int:
        """Leaks of every kind together."""
        return sum(self.counts.values())


def plant(loaded: GoldenRuntime, golden: GoldenSet) -> Principal:
    """Add the state keys, the feedback, the expired key and the second workspace; returns its
    owner. Run as ``golden_runtime(prepare=...)`` so the planted memories are embedded too."""
    runtime, principal = loaded.runtime, loaded.principal
    for key, text in STATE_KEYS.items():
        value = {"note": f"{text} {STATE_MARK}"}
        runtime.state.set_state(principal, golden.primary, key, StateSet(value=value))
    runtime.state.set_state(
        principal, golden.primary, EXPIRED_KEY, StateSet(value=STATE_MARK, ttl_seconds=60)
    )
    for query in golden.queries:
        for doc_id in query.relevant[:1]:
            context = golden.doc(doc_id).context
            for helpful in (True, False):
                note = f"{FEEDBACK_MARK} {'helped' if helpful else 'did not help'}: {query.query}"
                memory_id = loaded.memory_ids[doc_id]
                event = FeedbackCreate(
                    memory_id=memory_id, helpful=helpful, query=query.query, note=note
                )
                runtime.feedback.feedback(principal, context, event)
    intruder = runtime.workspaces.owner(INTRUDER_WORKSPACE, "cli", create=True)
    assert intruder is not None  # made if missing
    copies = GoldenSet(
        contexts=golden.contexts,
        primary=golden.primary,
        documents=tuple(
            replace(doc, summary=f"{doc.summary} {INTRUDER_MARK}") for doc in golden.documents
        ),
        queries=golden.queries,
    )
    write_golden(runtime, intruder, copies)
    if runtime.embedding is not None:
        runtime.embedding.drain()
    loaded.clock.now += timedelta(seconds=120)  # the expired key is now past its TTL
    return intruder


def _text(memory: Memory) -> str:
    return f"{memory.summary}\n{memory.content}"


def inspect_items(
    report: LaneReport,
    loaded: GoldenRuntime,
    items: Iterable[Memory],
    where: str,
    *,
    trusted: bool,
) -> None:
    """Count every leak in one result list read in the golden workspace (``trusted``: it was
    read with the trust filter, so anything external is a leak too)."""
    workspace = loaded.principal.workspace_id
    for item in items:
        text = _text(item)
        label = f"{where}: {item.summary[:60]!r}"
        if trusted and item.trust_tier != "trusted":
            report.count("external_in_trusted_recall", label)
        if STATE_MARK in text:
            report.count("state_in_results", label)
        if FEEDBACK_MARK in text:
            report.count("feedback_in_results", label)
        if item.workspace_id != workspace or INTRUDER_MARK in text:
            report.count("cross_workspace_results", label)
        elif item.id not in loaded.doc_ids:  # not a golden memory: where did it come from?
            report.count("state_in_results", f"{label} (unknown memory)")


def check_lanes(
    loaded: GoldenRuntime,
    golden: GoldenSet,
    intruder: Principal,
    queries: Sequence[str] | None = None,
) -> LaneReport:
    """Probe every read path of the planted runtime and count the leaks (``queries``: the
    recall probes, by default every golden query and the adversarial ones)."""
    runtime, principal = loaded.runtime, loaded.principal
    report = LaneReport()
    everywhere = [context.name for context in golden.contexts]
    if queries is None:
        queries = [q.query for q in golden.queries] + list(ADVERSARIAL)
    for text in queries:
        for tier in (None, "trusted"):
            filters = RecallFilters(context_ids=everywhere, trust_tier=tier)
            request = RecallRequest(query=text, k=DEPTH, filters=filters, include_related=True)
            result = runtime.recall.recall(principal, golden.primary, request)
            report.probes += 1
            items: list[Memory] = [*result.results, *result.related]
            where = f"recall[{tier or 'all'}] {text[:40]!r}"
            inspect_items(report, loaded, items, where, trusted=tier == "trusted")
        mine = runtime.recall.recall(intruder, golden.primary, RecallRequest(query=text, k=DEPTH))
        report.probes += 1
        for hit in mine.results:
            if hit.id in loaded.doc_ids or hit.workspace_id != intruder.workspace_id:
                report.count("cross_workspace_results", f"intruder recall: {hit.summary[:60]!r}")
    trusted = RecallFilters(trust_tier="trusted")
    for context in golden.contexts:
        pinned = runtime.delivery.load_pinned(principal, context.name, filters=trusted)
        listed = runtime.memories.list_memories(principal, context.name, limit=200)
        report.probes += 2
        for item in pinned.items:
            if item.trust_tier != "trusted":
                report.count("external_in_trusted_pinned", f"pinned: {item.summary[:60]!r}")
        inspect_items(report, loaded, pinned.items, f"load_pinned {context.name}", trusted=True)
        inspect_items(report, loaded, listed.items, f"list {context.name}", trusted=False)
        _probe_other_tenant(report, loaded, intruder, context.name)
    _probe_expired(report, loaded, golden)
    return report


def _probe_other_tenant(
    report: LaneReport, loaded: GoldenRuntime, intruder: Principal, context: str
) -> None:
    """The intruder names a golden context by id: it must not resolve."""
    row = loaded.runtime.contexts.resolve(loaded.principal, context)
    report.probes += 1
    try:
        found = loaded.runtime.recall.recall(intruder, row.id, RecallRequest(query=context))
    except KiokuError:
        return  # refused: the right answer
    for hit in found.results:
        report.count("cross_workspace_results", f"intruder by id: {hit.summary[:60]!r}")


def _probe_expired(report: LaneReport, loaded: GoldenRuntime, golden: GoldenSet) -> None:
    """An expired key is gone from ``get_state`` and ``list_state``."""
    state = loaded.runtime.state
    report.probes += 2
    try:
        state.get_state(loaded.principal, golden.primary, EXPIRED_KEY)
        report.count("expired_state_returned", f"get_state {EXPIRED_KEY!r}")
    except KiokuError:
        pass
    page = state.list_state(loaded.principal, golden.primary)
    if any(item.key == EXPIRED_KEY for item in page.items):
        report.count("expired_state_returned", f"list_state {EXPIRED_KEY!r}")
