"""Do thread neighbours help recall? LoCoMo with each session declared as a thread.

Every conversation goes into its own context through ``remember_batch``, each turn with
``thread`` = its session and ``position`` = its place in it (what any client importing chat
transcripts would send; nothing here is specific to LoCoMo's questions). Then every question
is asked with each ``search_config.thread_weight`` in turn (0 = threads ignored), for each
arm, so all weights see the same store. The weight was chosen on the *dev* half
(``DEV_CONVERSATIONS``) and is reported on the held-out half and on all. Latency: the hybrid
arm's wall time per recall, the weights interleaved question by question. Run it from the
checkout with::

    .venv/bin/python lab/thread_study.py --data ../shared/data/locomo [--json out.json]

Result: docs/benchmarks.md, "Threads in recall". Reads kioku internals:
``benchmark.{data,ingest,latency,metrics}`` (the bench's arms and timed recall), the contexts
service (``search_config``); ``study_cli.py`` (a sibling in ``lab/``) for the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from study_cli import study_main

from kioku.benchmark.data import Corpus
from kioku.benchmark.ingest import drain_embeddings, remember_docs
from kioku.benchmark.latency import ARMS, available_arms, timed_recall
from kioku.benchmark.metrics import LOCOMO_KS, evaluate, latency_summary
from kioku.models import ContextCreate, ContextUpdate
from kioku.runtime import Runtime

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5)
DEV_CONVERSATIONS = ("locomo-conv-26", "locomo-conv-41", "locomo-conv-43")
"""Every other conversation in numeric order: where the weight was chosen."""
TOP_K = 20


def run_thread_study(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    log: Callable[[str], None] | None = None,
    *,
    setting: str = "thread_weight",
    weights: Sequence[float] = WEIGHTS,
    arm_names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every question, every weight of ``search_config[setting]``, every arm (``arm_names``,
    default all): metrics per half and category, latency."""
    principal = runtime.local_principal("import")
    keys: dict[str, dict[str, str]] = {}
    for corpus in corpora:
        runtime.contexts.create_context(principal, ContextCreate(name=corpus.context))
        keys[corpus.context], _ = remember_docs(runtime, principal, corpus.context, corpus.docs)
    drain_embeddings(runtime)
    arms = [arm for arm in available_arms(runtime) if arm_names is None or arm in arm_names]
    rankings: dict[tuple[float, str], dict[str, list[str]]] = {
        (w, arm): {} for w in weights for arm in arms
    }
    latencies: dict[float, list[float]] = {w: [] for w in weights}
    for corpus in corpora:
        for question in corpus.questions:
            for weight in weights:
                config = ContextUpdate(search_config={setting: weight})
                runtime.contexts.update_context(principal, corpus.context, config)
                for arm in arms:
                    ids, ms = timed_recall(
                        runtime, principal, corpus.context, question.text, TOP_K, ARMS[arm]
                    )
                    ranked = [keys[corpus.context].get(i, "?") for i in ids]
                    rankings[(weight, arm)][question.qid] = ranked
                    if arm == "hybrid":
                        latencies[weight].append(ms)
        if log is not None:
            log(f"{corpus.context}: done")
    halves = {
        "dev": [q for c in corpora if c.context in DEV_CONVERSATIONS for q in c.questions],
        "held-out": [q for c in corpora if c.context not in DEV_CONVERSATIONS for q in c.questions],
        "all": [q for c in corpora for q in c.questions],
    }
    results: dict[str, Any] = {
        "conversations": [c.context for c in corpora],
        "dev": list(DEV_CONVERSATIONS),
        "setting": setting,
        "weights": {},
    }
    for weight in weights:
        entry: dict[str, Any] = {"latency": latency_summary(latencies[weight]), "arms": {}}
        for arm in arms:
            entry["arms"][arm] = {
                half: evaluate(questions, rankings[(weight, arm)], LOCOMO_KS)
                for half, questions in halves.items()
            }
        results["weights"][str(weight)] = entry
    return results


def markdown(results: Mapping[str, Any]) -> str:
    """recall@10 per category, MRR@10 and hybrid latency, per weight, arm and half."""
    lines = [
        f"| {results.get('setting', 'thread_weight')} | arm | half | n | R@10 | MRR@10 "
        "| R@10 cat1 multi-hop | cat2 temporal | cat3 open-domain | cat4 single-hop "
        "| hybrid p50 ms | mean ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for weight, entry in results["weights"].items():
        latency = entry["latency"]
        for arm, halves in entry["arms"].items():
            for half, scores in halves.items():
                if not scores["all"]["n"]:  # a half with no conversation (a --limit run)
                    continue
                cats = [scores.get(f"cat{c}", {}).get("recall@10", 0.0) for c in (1, 2, 3, 4)]
                timing = (
                    f"{latency['p50']:.1f} | {latency['mean']:.1f}"
                    if arm == "hybrid" and half == "all"
                    else "|"
                )
                lines.append(
                    f"| {weight} | {arm} | {half} | {scores['all']['n']} | "
                    f"{scores['all']['recall@10']:.3f} | {scores['all']['mrr@10']:.3f} | "
                    + " | ".join(f"{c:.3f}" for c in cats)
                    + f" | {timing} |"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return study_main(argv, description, "threads", run_thread_study, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
