"""Each stage of recall's pipeline off in turn: what it earns on held-out data, what it costs.

    .venv/bin/python scripts/ablation.py [--data ../shared/data] [--jsquad-questions N]

Writes LoCoMo (all six conversations, split into the development half 26/41/43 on which the
ranking's constants were chosen and the held-out half 30/42/44), JSQuAD (the validation set,
or its first N questions with their paragraphs and as many distractors) and the golden set
into scratch SQLite databases with the bundled model, reproducibly (fixed clock, seeded ids),
then asks every question once per variant: the full pipeline, and the pipeline with each
ablatable stage that is on by default turned off (``RecallService.ranking(ablate=...)``, no
side effect between variants). Prints a markdown table: recall@10 and MRR@10 per data set
and variant, and each stage's cost (mean ms per recall, in the full pipeline, from the
recall's own timings). The result is docs/benchmarks.md's *Recall stages: ablation*.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from kioku.benchmark.data import Corpus, load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.metrics import evaluate
from kioku.benchmark.reproducible import import_clock, name_memories_reproducibly
from kioku.eval.corpus import golden_runtime, load_embedder
from kioku.eval.golden import load_golden
from kioku.eval.retrieval import ARMS, Arm, run_retrieval
from kioku.models import RecallRequest, SearchConfig
from kioku.runtime import Runtime, open_runtime
from kioku.service.ranking.pipeline import ABLATABLE, STAGES
from kioku.settings import Settings

DEV = ("locomo-conv-26", "locomo-conv-41", "locomo-conv-43")
KS = (10,)


def default_on() -> list[str]:
    """The ablatable stages a context with the default ``search_config`` runs."""
    config = SearchConfig()
    found = []
    for stage in STAGES:
        if stage.name not in ABLATABLE:
            continue
        if stage.knob is not None:
            value = getattr(config, stage.knob)
            if (value == "off") if isinstance(value, str) else not value > 0:
                continue
        found.append(stage.name)
    return found


def ask_all(
    runtime: Runtime, corpora: Sequence[Corpus], keys: dict[str, dict[str, str]], off: str | None
) -> tuple[dict[str, list[str]], dict[str, list[float]]]:
    principal = runtime.local_principal("cli")
    rankings: dict[str, list[str]] = {}
    timings: dict[str, list[float]] = {}
    ablate = frozenset({off}) if off else frozenset()
    for corpus in corpora:
        ids = keys[corpus.context]
        for question in corpus.questions:
            request = RecallRequest(query=question.text, k=10)
            ranking = runtime.recall.ranking(principal, corpus.context, request, ablate=ablate)
            rankings[question.qid] = [ids.get(m, "?") for _, m in ranking.ranked[:10]]
            for stage, seconds in ranking.timings.items():
                timings.setdefault(stage, []).append(seconds * 1000.0)
    return rankings, timings


def written(runtime: Runtime, corpora: Sequence[Corpus]) -> dict[str, dict[str, str]]:
    principal = runtime.local_principal("import")
    keys: dict[str, dict[str, str]] = {}
    for corpus in corpora:
        ensure_context(runtime, principal, corpus.context)
        keys[corpus.context], _ = remember_docs(
            runtime, principal, corpus.context, corpus.docs, lambda n: None
        )
    drain_embeddings(runtime)
    return keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--jsquad-questions", type=int, default=None)
    args = parser.parse_args()
    variants: list[str | None] = [None, *default_on()]
    embedder = load_embedder("bundled")
    locomo = load_locomo(args.data / "locomo")
    options = {}
    if args.jsquad_questions:
        options = {
            "max_questions": args.jsquad_questions,
            "extra_paragraphs": args.jsquad_questions,
        }
    jsquad = load_jsquad(args.data / "jsquad" / "valid-v1.3.json", **options)
    scores: dict[str, dict[str | None, float]] = {}
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kioku-ablation-") as scratch:
        settings = Settings(
            {
                "database": {"url": f"sqlite:///{Path(scratch) / 'a.db'}"},
                "embedder": {"background": True},
            }
        )
        runtime = name_memories_reproducibly(
            open_runtime(settings, embedder=embedder, clock=import_clock)
        )
        try:
            keys = written(runtime, [*locomo, jsquad])
            sets = {
                "LoCoMo dev": [c for c in locomo if c.context in DEV],
                "LoCoMo held-out": [c for c in locomo if c.context not in DEV],
                "JSQuAD": [jsquad],
            }
            for name, corpora in sets.items():
                questions = [q for c in corpora for q in c.questions]
                assert questions, f"{name}: no questions (conversation names changed?)"
                for off in variants:
                    rankings, timings = ask_all(runtime, corpora, keys, off)
                    result = evaluate(questions, rankings, KS)["all"]
                    scores[f"{name} R@10"] = {**scores.get(f"{name} R@10", {}),
                                              off: result["recall@10"]}  # fmt: skip
                    scores[f"{name} MRR"] = {**scores.get(f"{name} MRR", {}),
                                             off: result["mrr@10"]}  # fmt: skip
                    if off is None and name != "LoCoMo dev":
                        for stage, values in timings.items():
                            costs.setdefault(stage, 0.0)
                            costs[stage] = max(costs[stage], statistics.fmean(values))
        finally:
            runtime.close()
    golden = load_golden()
    with golden_runtime(golden, embedder) as loaded:
        full = ARMS["hybrid+rerank"]
        arms = {str(off): Arm(full.legs, full.rerank, frozenset({off}) if off else frozenset())
                for off in variants}  # fmt: skip
        report = run_retrieval(loaded, golden, arms)
        for off in variants:
            overall = report.metrics[str(off)]["overall"]
            scores.setdefault("golden R@10", {})[off] = overall.get("recall@10", float("nan"))
            scores.setdefault("golden MRR", {})[off] = overall.get("mrr@10", float("nan"))
    header = ["variant", *scores, "stage ms (mean)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for off in variants:
        label = "full pipeline" if off is None else f"without `{off}`"
        cells = [f"{scores[column][off]:.3f}" for column in scores]
        cost = "" if off is None else f"{costs.get(off, 0.0):.2f}"
        print(f"| {label} | " + " | ".join(cells) + f" | {cost} |")
    print()
    print("stage costs (mean ms, full pipeline, held-out + JSQuAD): " + ", ".join(
        f"{stage} {ms:.2f}" for stage, ms in costs.items()))  # fmt: skip


if __name__ == "__main__":
    main()
