"""The optional model reranker's step in recall (docs/concepts.md): after fusion and the feature
re-ranker, the first ``top_n`` candidates go to the configured ``Reranker``, and its order is
blended into theirs (``kioku.rerankers.blend``).

The step never makes recall fail: a reranker that errs, answers nonsense or is slower than
``timeout_seconds`` leaves the fused order as it is, and the response says so
(``RecallResult.reranker``). Candidates' text (summary and content, cut at ``max_chars``)
leaves the process for the configured URL: docs/security.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from kioku.models import RecallHit, RerankerReport
from kioku.rerankers import Reranker, RerankError, blend_head
from kioku.service import telemetry
from kioku.storage.ports import MemoryReads

log = logging.getLogger(__name__)

NO_ANSWER = "no answer within the timeout"


@dataclass(frozen=True)
class ModelRerankConfig:
    """How much of the fused order the reranker sees, and how much it may change."""

    top_n: int = 30
    weight: float = 0.25
    timeout_seconds: float = 1.0
    max_chars: int = 2000
    cooldown_seconds: float = 10.0
    """After a failure or a timeout, recalls skip the reranker this long: a reranker that
    hangs costs one recall its timeout, not every recall."""


@dataclass
class ModelRerankOutcome:
    """One recall's reranking: the new order, the reranker's scores, and the report."""

    ranked: list[tuple[float, str]]
    report: RerankerReport
    scores: dict[str, float] = field(default_factory=dict)

    def annotate(self, hits: Sequence[RecallHit]) -> None:
        """Put each result's model score into its ``score_breakdown``."""
        for hit in hits:
            hit.score_breakdown.model_rerank = self.scores.get(hit.id)


class ModelReranking:
    """Asks ``reranker`` about the head of each recall, within a deadline."""

    def __init__(self, reranker: Reranker, config: ModelRerankConfig) -> None:
        self.reranker = reranker
        self.config = config
        # Calls run on their own threads so that the deadline holds whatever the HTTP
        # client's per-phase timeouts do (a server trickling bytes never trips a read timeout).
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kioku-rerank")
        self._resume_at = 0.0
        self._last_failure = ""

    def apply(
        self, store: MemoryReads, workspace_id: str, query: str, ranked: list[tuple[float, str]]
    ) -> ModelRerankOutcome:
        """``ranked`` (best first) with its head reordered, or as it was if the reranker
        gave no usable answer in time."""
        head = ranked[: self.config.top_n]
        if time.monotonic() < self._resume_at:
            skipped = RerankerReport(
                reranker=self.reranker.name,
                status="skipped",
                candidates=0,
                reason=f"cooling down after: {self._last_failure}",
            )
            return ModelRerankOutcome(ranked, skipped)
        rows = store.get_memories(workspace_id, [memory_id for _, memory_id in head])
        sent = [memory_id for _, memory_id in head if memory_id in rows]
        texts = [text_of(rows[memory_id].summary, rows[memory_id].content) for memory_id in sent]
        texts = [text[: self.config.max_chars] for text in texts]
        report = RerankerReport(reranker=self.reranker.name, status="applied", candidates=len(sent))
        began = time.perf_counter()
        try:
            answer = self._pool.submit(self.reranker.score, query, texts)
            scores = answer.result(timeout=self.config.timeout_seconds)
            if len(scores) != len(texts):
                raise RerankError(f"malformed reply: {len(scores)} scores for {len(texts)} texts")
        except FutureTimeout:
            return self._fallback(ranked, report, "timeout", NO_ANSWER)
        except RerankError as exc:  # the HTTP client's own timeout reads as the deadline's
            if exc.reason == "timed out":
                return self._fallback(ranked, report, "timeout", NO_ANSWER)
            return self._fallback(ranked, report, "failed", exc.reason)
        except Exception as exc:  # a reranker's own bug must not fail recall either
            log.exception("reranker %s raised", report.reranker)
            return self._fallback(ranked, report, "failed", f"error ({type(exc).__name__})")
        finally:
            telemetry.recall_leg("reranker", time.perf_counter() - began)
        by_id = {memory_id: score for memory_id, score in zip(sent, scores, strict=True)}
        head_scores = [by_id.get(memory_id) for _, memory_id in head]
        order = blend_head(head_scores, self.config.weight)
        # The head's scores are handed out again in the new order, so ``score`` still falls
        # down the list and nothing below the head moves.
        reordered = [(head[slot][0], head[position][1]) for slot, position in enumerate(order)]
        known = {memory_id: score for memory_id, score in by_id.items() if score is not None}
        return ModelRerankOutcome(reordered + ranked[len(head) :], report, known)

    def _fallback(
        self, ranked: list[tuple[float, str]], report: RerankerReport, status: str, reason: str
    ) -> ModelRerankOutcome:
        log.warning(
            "reranker %s %s: %s; recall keeps the fused order", report.reranker, status, reason
        )
        self._last_failure = reason
        self._resume_at = time.monotonic() + self.config.cooldown_seconds
        failed = report.model_copy(update={"status": status, "reason": reason})
        return ModelRerankOutcome(ranked, failed)

    def close(self) -> None:
        """Stop the worker threads and close the reranker (its connections)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        close = getattr(self.reranker, "close", None)
        if close is not None:
            close()


def text_of(summary: str, content: str) -> str:
    """What the reranker reads of a memory: its summary, then its content if any."""
    return summary if not content else f"{summary}\n{content}"
