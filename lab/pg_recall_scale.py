"""Whole recall at scale on ``lab/pg_scale_db.py``'s database, timed as ``kioku bench``
times its scale points (``scale._time_queries``: 5 warm-ups, the bench's seeded 200 LoCoMo
questions, hybrid; then ``recall_breakdown``'s steps over the first 50), with the ``kioku``
this runs with.

Usage: ``nice -n 10 .venv/bin/python lab/pg_recall_scale.py DIR [--data ../shared/data]``
(the server started with ``lab/pg_scale_db.py start DIR``). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from kioku.benchmark import scale
from kioku.benchmark.breakdown import recall_breakdown
from kioku.benchmark.data import load_locomo
from kioku.benchmark.latency import ARMS
from kioku.benchmark.meta import configured_embedder
from kioku.runtime import open_runtime
from kioku.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    port = (args.dir / "port").read_text().strip()
    url = f"postgresql://postgres@127.0.0.1:{port}/kioku"
    load = [os.getloadavg()]
    settings = Settings({"database": {"url": url}, "embedder": {"background": True}})
    runtime = open_runtime(settings, embedder=configured_embedder())
    try:
        principal = runtime.local_principal("import")
        questions = [q for c in load_locomo(args.data / "locomo") for q in c.questions]
        picked = np.random.default_rng(0).permutation(len(questions))[: scale.SCALE_QUERIES]
        queries = [questions[int(i)].text for i in picked]
        hybrid = scale._time_queries(runtime, [principal], queries, ARMS["hybrid"])
        steps = recall_breakdown(runtime, [principal], scale.CONTEXT, queries, scale.SCALE_K)
    finally:
        runtime.close()
    load.append(os.getloadavg())
    summary = {step: [value["p50"], value["p95"]] for step, value in steps.items()}
    print(json.dumps({"hybrid": hybrid, "steps_p50_p95": summary, "load": load}, indent=1))


if __name__ == "__main__":
    main()
