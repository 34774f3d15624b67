"""Does Sleep keep recall intact? LoCoMo recall before and after consolidation.

Two stores, each with every LoCoMo conversation in its own context:

1. ``as is``: the conversations as they are. Sleep should find (almost) nothing to merge
   and must not cost recall: what it does change (importance re-scoring, merges of turns
   that really say the same) is measured, not assumed.
2. ``with restated copies``: every ``COPY_EVERY``-th turn is remembered a second time, later,
   as an agent re-importing a session would (same words, same gold key). Before Sleep the
   copies crowd the top k (one fact, two slots); Sleep should merge each pair (the newer
   copy wins, the older is superseded) and recall should come back to the ``as is`` figure.

Recall is scored strictly on gold keys: a result counts if its memory carries the gold key
(a copy carries its original's key, so finding the winner of a merge counts; a *different*
turn that absorbed a gold turn does not). Deterministic phases only (no LLM), mode ``full``.
Run it from the checkout with::

    .venv/bin/python lab/sleep_study.py --data ../shared/data/locomo [--json out.json]

Result: docs/benchmarks.md, "Sleep: recall before and after consolidation". Reads kioku
internals: ``benchmark.{data,ingest,metrics}``, the runtime's services (``sleep``, ``recall``,
``contexts``); ``study_cli.py`` (a sibling in ``lab/``) for the command line.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from study_cli import study_main

from kioku.benchmark.data import Corpus, Doc
from kioku.benchmark.ingest import drain_embeddings, remember_docs
from kioku.benchmark.metrics import evaluate
from kioku.models import ContextCreate, RecallRequest
from kioku.models.sleep import SleepRequest
from kioku.runtime import Runtime

KS = (5, 10)
EVAL_K = 10
COPY_EVERY = 5
SCENARIOS = ("as is", "with restated copies")


def with_copies(corpus: Corpus, every: int = COPY_EVERY) -> list[Doc]:
    """The corpus's turns, then a second copy of every ``every``-th one (same key, new uri)."""
    copies = [
        Doc(doc.key, doc.text, f"{doc.source_uri}:copy") for doc in corpus.docs[every - 1 :: every]
    ]
    return [*corpus.docs, *copies]


def _rankings(
    runtime: Runtime, corpora: Sequence[Corpus], keys: Mapping[str, Mapping[str, str]]
) -> dict[str, list[str]]:
    principal = runtime.local_principal("import")
    rankings: dict[str, list[str]] = {}
    for corpus in corpora:
        for question in corpus.questions:
            request = RecallRequest(query=question.text, k=EVAL_K)
            result = runtime.recall.recall(principal, corpus.context, request)
            rankings[question.qid] = [keys[corpus.context].get(h.id, "?") for h in result.results]
    return rankings


def _scores(corpora: Sequence[Corpus], rankings: Mapping[str, list[str]]) -> dict[str, Any]:
    questions = [q for corpus in corpora for q in corpus.questions]
    scores = evaluate(questions, rankings, KS)
    return {name: scores[name] for name in ("all", "cat1") if name in scores}


def _sleep_all(
    runtime: Runtime, corpora: Sequence[Corpus], keys: Mapping[str, Mapping[str, str]]
) -> dict[str, Any]:
    """One full Sleep run per context; what the runs did, and which merges lost a gold key."""
    principal = runtime.local_principal("cli")
    kinds: Counter[str] = Counter()
    merges = same_key = 0
    gold_keys_absorbed: list[str] = []
    began = time.perf_counter()
    for corpus in corpora:
        gold = {key for question in corpus.questions for key in question.gold}
        report = runtime.sleep.sleep(principal, corpus.context, SleepRequest(mode="full"))
        for action in report.actions:
            kinds[action.kind] += 1
            if action.kind != "supersede":
                continue
            merges += 1
            loser = keys[corpus.context].get(action.target)
            winner = keys[corpus.context].get(action.after["superseded_by"])
            if loser == winner:
                same_key += 1
            elif loser in gold:
                gold_keys_absorbed.append(f"{corpus.context}:{loser}")
    return {
        "seconds": round(time.perf_counter() - began, 1),
        "actions": dict(sorted(kinds.items())),
        "merges": merges,
        "merges_of_copies": same_key,
        "gold_turns_absorbed_by_another_turn": gold_keys_absorbed,
    }


def run_scenario(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    docs_of: Callable[[Corpus], list[Doc]],
    suffix: str,
) -> dict[str, Any]:
    """Ingest, score, Sleep every context, score again."""
    principal = runtime.local_principal("import")
    named = [Corpus(c.context + suffix, c.docs, c.questions, c.evidence) for c in corpora]
    keys: dict[str, dict[str, str]] = {}
    for corpus, original in zip(named, corpora, strict=True):
        runtime.contexts.create_context(principal, ContextCreate(name=corpus.context))
        keys[corpus.context], _ = remember_docs(
            runtime, principal, corpus.context, docs_of(original)
        )
    drain_embeddings(runtime)
    before = _scores(named, _rankings(runtime, named, keys))
    sleep = _sleep_all(runtime, named, keys)
    after = _scores(named, _rankings(runtime, named, keys))
    return {
        "memories": sum(len(k) for k in keys.values()),
        "before": before,
        "after": after,
        "sleep": sleep,
    }


def run_sleep_study(
    runtime: Runtime, corpora: Sequence[Corpus], log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Both scenarios in one runtime (distinct contexts), with the questions they share."""
    results: dict[str, Any] = {
        "conversations": [c.context for c in corpora],
        "questions": sum(len(c.questions) for c in corpora),
        "scenarios": {},
    }
    plans: list[tuple[str, Callable[[Corpus], list[Doc]], str]] = [
        ("as is", lambda c: c.docs, ""),
        ("with restated copies", with_copies, "-copies"),
    ]
    for name, docs_of, suffix in plans:
        results["scenarios"][name] = run_scenario(runtime, corpora, docs_of, suffix)
        if log is not None:
            log(f"{name}: {results['scenarios'][name]['sleep']['actions']}")
    return results


def markdown(results: Mapping[str, Any]) -> str:
    """The study as a table: recall@5/10 and MRR@10 before and after, merges per scenario."""
    lines = [
        "| store | memories | Sleep | R@5 | R@10 | MRR@10 | R@10 multi-hop | merges |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results["scenarios"].items():
        for when in ("before", "after"):
            a, m = entry[when]["all"], entry[when].get("cat1", {})
            merges = "–" if when == "before" else str(entry["sleep"]["merges"])
            lines.append(
                f"| {name} | {entry['memories']} | {when} | {a['recall@5']:.3f} | "
                f"{a['recall@10']:.3f} | {a['mrr@10']:.3f} | {m.get('recall@10', 0):.3f} | "
                f"{merges} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return study_main(argv, description, "sleep", run_sleep_study, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
