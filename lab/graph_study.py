"""Does the association graph help recall? A held-out study of ``search_config.graph_boost``.

Each LoCoMo conversation's questions are split alternately into a *warm-up* half and a
*held-out* half (as the feedback study does). The held-out half is asked first on an empty
graph (the baseline). Then the graph learns from use on the warm-up half only:

1. ``recall``: every warm-up question is recalled (top ``WARMUP_K``); the top 3 strengthen
   their pairwise edges, as in production;
2. ``recall+feedback``: an oracle agent then marks the top ``FEEDBACK_DEPTH`` results of each
   warm-up question helpful if gold evidence, unhelpful otherwise; co-helpful memories of a
   question get linked (the feedback rule of ``service/graph.py``).

After each stage the held-out half is asked again with the boost at several strengths (learning
off while measuring, so the questions being scored never teach the graph). Any change is the
graph generalising across questions, not answers memorised. Run it from the checkout with::

    .venv/bin/python lab/graph_study.py --data ../shared/data/locomo [--json out.json]

(``KIOKU_EMBEDDER=none`` for BM25 only.) Result: docs/graph.md, "Measurement".

Reads kioku internals: ``benchmark.{data,feedback,ingest,metrics}`` (the halves, the write
path, the scores), the runtime's services (``recall``, ``feedback``, ``contexts``), the graph's
``associations.settings`` (learning switched off while measuring) and ``Store.list_edges``;
``study_cli.py`` (a sibling in ``lab/``) for the command line.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from study_cli import study_main

from kioku.benchmark.data import Corpus, Question
from kioku.benchmark.feedback import split_halves
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.metrics import evaluate
from kioku.models import ContextUpdate, FeedbackCreate, RecallRequest
from kioku.runtime import Runtime

KS = (5, 10)
EVAL_K = 10
WARMUP_K = 10
FEEDBACK_DEPTH = 5
BOOSTS = (0.0, 0.25, 0.5, 1.0)
STAGES = ("recall", "recall+feedback")


def _set_learning(runtime: Runtime, learn: bool) -> None:
    associations = runtime.graph.associations
    associations.settings = replace(associations.settings, learn=learn)


def _set_boost(runtime: Runtime, corpora: Sequence[Corpus], beta: float) -> None:
    principal = runtime.local_principal("cli")
    for corpus in corpora:
        update = ContextUpdate(search_config={"graph_boost": beta})
        runtime.contexts.update_context(principal, corpus.context, update)


def _rankings(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    questions: Mapping[str, Sequence[Question]],
    keys: Mapping[str, Mapping[str, str]],
) -> dict[str, list[str]]:
    principal = runtime.local_principal("import")
    rankings: dict[str, list[str]] = {}
    for corpus in corpora:
        for question in questions[corpus.context]:
            request = RecallRequest(query=question.text, k=EVAL_K)
            result = runtime.recall.recall(principal, corpus.context, request)
            key = keys[corpus.context]
            rankings[question.qid] = [key.get(hit.id, "?") for hit in result.results]
    return rankings


def _warm_up_recall(
    runtime: Runtime, corpora: Sequence[Corpus], warm: Mapping[str, Sequence[Question]]
) -> None:
    principal = runtime.local_principal("import")
    for corpus in corpora:
        for question in warm[corpus.context]:
            request = RecallRequest(query=question.text, k=WARMUP_K)
            runtime.recall.recall(principal, corpus.context, request)


def _warm_up_feedback(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    warm: Mapping[str, Sequence[Question]],
    keys: Mapping[str, Mapping[str, str]],
) -> dict[str, int]:
    principal = runtime.local_principal("import")
    counts = {"helpful": 0, "unhelpful": 0}
    for corpus in corpora:
        for question in warm[corpus.context]:
            request = RecallRequest(query=question.text, k=FEEDBACK_DEPTH)
            for hit in runtime.recall.recall(principal, corpus.context, request).results:
                good = keys[corpus.context].get(hit.id) in question.gold
                data = FeedbackCreate(memory_id=hit.id, helpful=good, query=question.text[:4000])
                runtime.feedback.feedback(principal, corpus.context, data)
                counts["helpful" if good else "unhelpful"] += 1
    return counts


def _edges(runtime: Runtime, corpora: Sequence[Corpus]) -> dict[str, int]:
    principal = runtime.local_principal("cli")
    counts = {"hebbian": 0, "declared": 0, "sleep": 0}
    for corpus in corpora:
        context = runtime.contexts.resolve(principal, corpus.context)
        for edge in runtime.store.list_edges(principal.workspace_id, context.id):
            counts[edge.origin] += 1
    return counts


def _scores(questions: Sequence[Question], rankings: Mapping[str, list[str]]) -> dict[str, Any]:
    scores = evaluate(questions, rankings, KS)
    return {name: scores[name] for name in ("all", "cat1") if name in scores}


def run_graph_study(runtime: Runtime, corpora: Sequence[Corpus], log: Any = None) -> dict[str, Any]:
    """Held-out recall with and without the graph boost, after each warm-up stage."""
    principal = runtime.local_principal("import")
    keys: dict[str, dict[str, str]] = {}
    for corpus in corpora:
        ensure_context(runtime, principal, corpus.context)
        keys[corpus.context], _ = remember_docs(runtime, principal, corpus.context, corpus.docs)
    drain_embeddings(runtime)
    halves = {corpus.context: split_halves(corpus.questions) for corpus in corpora}
    warm = {name: halves[name][0] for name in halves}
    held = {name: halves[name][1] for name in halves}
    held_out = [q for corpus in corpora for q in held[corpus.context]]
    _set_learning(runtime, False)
    results: dict[str, Any] = {
        "conversations": [c.context for c in corpora],
        "memories": sum(len(c.docs) for c in corpora),
        "warm_up_questions": sum(len(q) for q in warm.values()),
        "held_out_questions": len(held_out),
        "baseline": _scores(held_out, _rankings(runtime, corpora, held, keys)),
        "stages": {},
    }
    for stage in STAGES:
        began = time.perf_counter()
        _set_learning(runtime, True)
        if stage == "recall":
            _warm_up_recall(runtime, corpora, warm)
        else:
            results["feedback_events"] = _warm_up_feedback(runtime, corpora, warm, keys)
        _set_learning(runtime, False)
        entry: dict[str, Any] = {"edges": _edges(runtime, corpora), "boost": {}}
        for beta in BOOSTS:
            _set_boost(runtime, corpora, beta)
            entry["boost"][str(beta)] = _scores(held_out, _rankings(runtime, corpora, held, keys))
        _set_boost(runtime, corpora, 0.0)
        entry["seconds"] = round(time.perf_counter() - began, 1)
        results["stages"][stage] = entry
        if log is not None:
            log(f"{stage}: {entry['edges']}")
    return results


def markdown(results: Mapping[str, Any]) -> str:
    """The study as a table: recall@10 and MRR@10, overall and multi-hop (category 1)."""
    lines = [
        "| graph learned from | boost β | R@10 all | MRR@10 all | R@10 multi-hop "
        "| MRR@10 multi-hop |",
        "|---|---|---|---|---|---|",
    ]

    def row(label: str, beta: str, scores: Mapping[str, Any]) -> str:
        a, m = scores["all"], scores.get("cat1", {})
        return (
            f"| {label} | {beta} | {a['recall@10']:.3f} | {a['mrr@10']:.3f} | "
            f"{m.get('recall@10', 0):.3f} | {m.get('mrr@10', 0):.3f} |"
        )

    lines.append(row("nothing (empty graph)", "–", results["baseline"]))
    for stage, entry in results["stages"].items():
        for beta, scores in entry["boost"].items():
            lines.append(row(f"{stage} ({sum(entry['edges'].values())} edges)", beta, scores))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return study_main(argv, description, "graph", run_graph_study, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
