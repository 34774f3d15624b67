"""Whole recalls on PostgreSQL with a recall's reads in shared transactions
(``Store.reads_together``) and without (each read its own), interleaved question by question
(issue 21).

Usage: ``.venv/bin/python lab/pg_recall_transactions.py URL CONTEXT [QUESTIONS]``, where
URL is a database built by ``lab/pg_scale_db.py build`` (``start`` prints it) and CONTEXT
one of its contexts (``scale``, ``mixed10`` ...). The first 10 questions warm up.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from kioku.benchmark.data import load_locomo
from kioku.models import RecallRequest
from kioku.runtime import open_runtime
from kioku.service.principal import Principal
from kioku.settings import Settings

WARM_UP = 10


def main() -> None:
    url, context = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 210
    runtime = open_runtime(Settings({"database": {"url": url}}))
    store: Any = runtime.store
    principal = Principal(
        workspace_id=store.ensure_workspace("default").id, role="owner", channel="rest"
    )
    questions = [q.text for c in load_locomo(Path("../shared/data/locomo")) for q in c.questions]
    random.Random(11).shuffle(questions)
    together = store.reads_together
    times: dict[str, list[float]] = {"apart": [], "together": []}
    print("load average at start", os.getloadavg())
    for i, question in enumerate(questions[:count]):
        for arm in ("apart", "together") if i % 2 else ("together", "apart"):
            store.reads_together = (
                together if arm == "together" else lambda _ws: contextlib.nullcontext()
            )
            began = time.perf_counter()
            runtime.recall.recall(principal, context, RecallRequest(query=question, k=10))
            if i >= WARM_UP:
                times[arm].append((time.perf_counter() - began) * 1000)
    for arm, values in times.items():
        values.sort()
        p50, p95 = values[len(values) // 2], values[int(len(values) * 0.95)]
        print(f"{arm}: n={len(values)} p50 {p50:.2f} p95 {p95:.2f} ms")
    print("load average at end", os.getloadavg())
    runtime.close()


if __name__ == "__main__":
    main()
