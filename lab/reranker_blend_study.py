"""How the model reranker's rank blend moves recall quality, on LoCoMo and JSQuAD.

No reranker whose weights ship in a package qualified (docs/benchmarks.md, "Model
reranker"), so this measures the blend itself with rerankers whose quality is known by
construction, over recall's real fused order (bundled model, SQLite, default settings):

- ``reverse``: scores the fused order backwards (a hostile or broken reranker: the bound).
- ``random``: seeded random scores (a reranker that knows nothing).
- ``bigrams``: the share of a candidate's character bigrams found in the query (the test
  suite's stand-in server: a real but weak lexical reranker).
- ``oracle+noise σ``: 1 for a gold candidate, 0 otherwise, plus Gaussian noise of σ
  (a simulated cross-encoder of known accuracy: how much of a good reranker's gain survives).

For each, the first ``TOP_N`` fused candidates are reordered by ``blend_head`` at several
weights, exactly as recall does. LoCoMo is reported per half of the conversations (the
default weight was chosen on the first half, ``CHOOSE``) and whole.

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python lab/reranker_blend_study.py \
        [--data ../shared/data] [--workdir /tmp/kioku-reranker-study] [--latency 300]
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kioku.benchmark.data import Corpus, load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.metrics import mrr_at_k, recall_at_k
from kioku.models import RecallRequest
from kioku.rerankers.blend import blend_head
from kioku.runtime import open_runtime
from kioku.settings import Settings

TOP_N = 30
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
CHOOSE = ("locomo-conv-26", "locomo-conv-30", "locomo-conv-41")

Scorer = Callable[[str, list[str], list[str], set[str], random.Random], list[float]]


def bigrams(text: str) -> set[str]:
    folded = "".join(unicodedata.normalize("NFKC", text).lower().split())
    return {folded[i : i + 2] for i in range(len(folded) - 1)}


def bigram_scores(
    query: str, keys: list[str], texts: list[str], gold: set[str], rng: random.Random
) -> list[float]:
    wanted = bigrams(query)
    return [len(bigrams(t) & wanted) / max(1, len(bigrams(t))) for t in texts]


def oracle(sigma: float) -> Scorer:
    def scores(
        query: str, keys: list[str], texts: list[str], gold: set[str], rng: random.Random
    ) -> list[float]:
        return [float(k in gold) + rng.gauss(0.0, sigma) for k in keys]

    return scores


SCORERS: dict[str, Scorer] = {
    "reverse": lambda q, keys, t, g, rng: [float(i) for i in range(len(keys))],
    "random": lambda q, keys, t, g, rng: [rng.random() for _ in keys],
    "bigrams": bigram_scores,
    "oracle+noise 0.5": oracle(0.5),
    "oracle+noise 1.0": oracle(1.0),
}


def fused_rankings(workdir: Path, name: str, corpora: Sequence[Corpus]) -> list[dict]:
    """Every question's fused top ``TOP_N`` (keys and texts), cached as JSON in ``workdir``."""
    cache = workdir / f"{name}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    settings = Settings(
        {"database": {"url": f"sqlite:///{workdir / name}.db"}, "embedder": {"background": True}}
    )
    runtime = open_runtime(settings)
    principal = runtime.local_principal("import")
    rows: list[dict] = []
    try:
        for corpus in corpora:
            ensure_context(runtime, principal, corpus.context)
            ids, _ = remember_docs(runtime, principal, corpus.context, corpus.docs)
            drain_embeddings(runtime)
            for question in corpus.questions:
                request = RecallRequest(query=question.text, k=TOP_N)
                result = runtime.recall.recall(principal, corpus.context, request)
                rows.append(
                    {
                        "corpus": corpus.context,
                        "query": question.text,
                        "gold": list(question.gold),
                        "keys": [ids[hit.id] for hit in result.results],
                        "texts": [f"{hit.summary}\n{hit.content}" for hit in result.results],
                    }
                )
    finally:
        runtime.close()
    cache.write_text(json.dumps(rows, ensure_ascii=False))
    return rows


def measure(rows: list[dict], k: int) -> dict[str, dict[float, tuple[float, float]]]:
    """scorer → weight → (recall@k, MRR@10) averaged over ``rows``."""
    out: dict[str, dict[float, tuple[float, float]]] = {}
    for name, scorer in SCORERS.items():
        out[name] = {}
        for weight in WEIGHTS:
            rng = random.Random(7)  # the same noise for every weight: only the blend differs
            r_sum = m_sum = 0.0
            for row in rows:
                scores = scorer(row["query"], row["keys"], row["texts"], set(row["gold"]), rng)
                ranked = [row["keys"][i] for i in blend_head(scores, weight)]
                r_sum += recall_at_k(ranked, row["gold"], k)
                m_sum += mrr_at_k(ranked, row["gold"])
            out[name][weight] = (r_sum / len(rows), m_sum / len(rows))
    return out


def table(title: str, results: dict[str, dict[float, tuple[float, float]]], k: int) -> str:
    head = " | ".join(f"w={w:g}" for w in WEIGHTS)
    lines = [
        f"#### {title} (R@{k} / MRR@10)",
        "",
        f"| reranker | {head} |",
        "|---" * (len(WEIGHTS) + 1) + "|",
    ]
    for name, by_weight in results.items():
        cells = " | ".join(f"{r:.3f} / {m:.3f}" for r, m in by_weight.values())
        lines.append(f"| {name} | {cells} |")
    return "\n".join(lines) + "\n"


class Flat(BaseHTTPRequestHandler):
    """A TEI-shaped ``/rerank`` that scores every text 0: the HTTP round trip alone."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        data = json.dumps([{"index": i, "score": 0.0} for i in range(len(body["texts"]))])
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


class NoWork:
    """A reranker that costs nothing: what the step itself adds to recall."""

    name = "no-work"

    def score(self, query: str, texts: Sequence[str]) -> list[float | None]:
        return [0.0] * len(texts)


def latency(workdir: Path, data: Path, questions: int) -> None:
    """Recall p50/p95 on the LoCoMo database without the step, with a reranker that costs
    nothing, and with a TEI-shaped server on a loopback port; interleaved, one process."""
    from kioku.benchmark.metrics import latency_summary
    from kioku.rerankers.http import HTTPReranker
    from kioku.service.model_rerank import ModelRerankConfig, ModelReranking

    runtime = open_runtime(Settings({"database": {"url": f"sqlite:///{workdir / 'locomo'}.db"}}))
    principal = runtime.local_principal("import")
    corpora = load_locomo(data / "locomo")
    asked = [(c.context, q.text) for c in corpora for q in c.questions][:questions]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Flat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/rerank"
    try:
        arms = {
            "off": None,
            "no-work reranker": ModelReranking(NoWork(), ModelRerankConfig()),
            "loopback TEI server": ModelReranking(HTTPReranker(url), ModelRerankConfig()),
        }
        samples: dict[str, list[float]] = {name: [] for name in arms}
        for round_ in range(2):  # the first round warms up and is not kept
            for context, text in asked:
                for name, step in arms.items():
                    runtime.recall.model_rerank = step
                    began = time.perf_counter()
                    runtime.recall.recall(principal, context, RecallRequest(query=text, k=10))
                    if round_:
                        samples[name].append((time.perf_counter() - began) * 1000)
    finally:
        server.shutdown()
        runtime.close()
    for name, values in samples.items():
        summary = latency_summary(values)
        print(f"{name}: p50 {summary['p50']:.1f} ms, p95 {summary['p95']:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", default="../shared/data", help="Folder of locomo/ and jsquad/.")
    parser.add_argument("--workdir", default="/tmp/kioku-reranker-study")
    parser.add_argument("--latency", type=int, default=0, help="Time this many questions.")
    args = parser.parse_args()
    data, workdir = Path(args.data), Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.latency:
        latency(workdir, data, args.latency)
        return
    began = time.perf_counter()
    locomo = fused_rankings(workdir, "locomo", load_locomo(data / "locomo"))
    jsquad = fused_rankings(workdir, "jsquad", [load_jsquad(data / "jsquad" / "valid-v1.3.json")])
    chosen = [row for row in locomo if row["corpus"] in CHOOSE]
    held = [row for row in locomo if row["corpus"] not in CHOOSE]
    print(table(f"LoCoMo, choosing half {CHOOSE} ({len(chosen)} q)", measure(chosen, 10), 10))
    print(table(f"LoCoMo, other half ({len(held)} q)", measure(held, 10), 10))
    print(table(f"LoCoMo, all ({len(locomo)} q)", measure(locomo, 10), 10))
    print(table(f"JSQuAD ({len(jsquad)} q)", measure(jsquad, 5), 5))
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
