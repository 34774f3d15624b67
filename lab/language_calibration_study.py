"""Does ``search_config.language_calibration`` move single-language benchmarks? And what does
telling each candidate's language cost a recall?

Writes the six LoCoMo conversations and JSQuAD into one SQLite file (bundled model, default
int8 runtime), then asks every question through ``RecallService.recall`` (k=20) once per
setting (``centered``, the default; ``shifted``, the rule before it; ``off``) and compares the
rankings question by question, with recall@10 / MRR@10 (LoCoMo) and recall@5 (JSQuAD) per
setting. Their contexts each hold one language, so every setting must rank alike.

Then, interleaved per LoCoMo question, it times a whole recall and, apart, the one store call
language-aware recall adds to every query: ``Store.text_heads`` on the vector leg's
candidates (what a stored per-memory language would save), and prints p50 / p95.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python lab/language_calibration_study.py \
        [--data ../shared/data] [--workdir /tmp/kioku-language-study] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from kioku.benchmark.data import Corpus, load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.metrics import latency_summary, mrr_at_k, recall_at_k
from kioku.models import ContextUpdate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from kioku.search.language import HEAD_CHARS
from kioku.service.principal import Principal
from kioku.settings import Settings

SETTINGS = ("centered", "shifted", "off")
K = 20


def rankings(
    runtime: Runtime, principal: Principal, corpus: Corpus, keys: dict[str, str], setting: str
) -> dict[str, list[str]]:
    """Each question's top ``K`` doc keys with the context set to ``setting``."""
    update = ContextUpdate(search_config={"language_calibration": setting})
    runtime.contexts.update_context(principal, corpus.context, update)
    found = {}
    for question in corpus.questions:
        result = runtime.recall.recall(
            principal, corpus.context, RecallRequest(query=question.text, k=K)
        )
        found[question.qid] = [keys[hit.id] for hit in result.results]
    return found


def timings(
    runtime: Runtime, principal: Principal, corpus: Corpus
) -> tuple[list[float], list[float]]:
    """Per question: a whole recall (ms), and ``text_heads`` on its vector candidates (ms)."""
    update = ContextUpdate(search_config={"language_calibration": "centered"})
    runtime.contexts.update_context(principal, corpus.context, update)
    whole, heads = [], []
    ws = principal.workspace_id
    for question in corpus.questions:
        request = RecallRequest(query=question.text, k=K)
        began = time.perf_counter()
        runtime.recall.recall(principal, corpus.context, request)
        whole.append((time.perf_counter() - began) * 1000)
        ranking = runtime.recall.ranking(principal, corpus.context, request)
        ids = [hit.memory_id for hit in ranking.ran.get("vector", [])]
        began = time.perf_counter()
        runtime.store.text_heads(ws, ids, HEAD_CHARS)
        heads.append((time.perf_counter() - began) * 1000)
    return whole, heads


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/kioku-language-study"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    database = args.workdir / "study.db"
    database.unlink(missing_ok=True)
    corpora = load_locomo(args.data / "locomo")
    corpora.append(load_jsquad(args.data / "jsquad" / "valid-v1.3.json"))
    runtime = open_runtime(
        Settings({"database": {"url": f"sqlite:///{database}"}, "embedder": {"background": True}})
    )
    report: dict[str, Any] = {"load": os.getloadavg()}
    try:
        principal = runtime.local_principal("cli")
        keys: dict[str, dict[str, str]] = {}
        for corpus in corpora:
            ensure_context(runtime, principal, corpus.context)
            keys[corpus.context], _ = remember_docs(runtime, principal, corpus.context, corpus.docs)
        drain_embeddings(runtime)
        for corpus in corpora:
            ranked = {
                s: rankings(runtime, principal, corpus, keys[corpus.context], s) for s in SETTINGS
            }
            moved = {
                s: sum(ranked[s][q.qid] != ranked["centered"][q.qid] for q in corpus.questions)
                for s in SETTINGS
            }
            at = 5 if corpus.context == "jsquad" else 10
            scores = {
                s: {
                    f"recall@{at}": round(
                        sum(recall_at_k(ranked[s][q.qid], q.gold, at) for q in corpus.questions)
                        / len(corpus.questions),
                        4,
                    ),
                    "mrr@10": round(
                        sum(mrr_at_k(ranked[s][q.qid], q.gold) for q in corpus.questions)
                        / len(corpus.questions),
                        4,
                    ),
                }
                for s in SETTINGS
            }
            report[corpus.context] = {
                "questions": len(corpus.questions),
                "rankings_differing_from_centered": moved,
                "scores": scores,
            }
            print(corpus.context, json.dumps(report[corpus.context]), flush=True)
        whole: list[float] = []
        heads: list[float] = []
        for corpus in corpora[:-1]:
            w, h = timings(runtime, principal, corpus)
            whole += w
            heads += h
        report["latency_ms"] = {
            "recall": latency_summary(whole),
            "text_heads": latency_summary(heads),
            "load_after": os.getloadavg(),
        }
        print(json.dumps(report["latency_ms"]), flush=True)
    finally:
        runtime.close()
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
