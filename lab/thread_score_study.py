"""Do thread scores help recall? LoCoMo with each session declared as a thread, asked with
each ``search_config.thread_score_weight`` in turn (0 = off), the neighbour share at its
default; the same store, questions and arms as ``thread_study.py`` (whose loop this reuses).

The weight was chosen on the *dev* half (``thread_study.DEV_CONVERSATIONS``) and is reported
on the held-out half and on all (docs/benchmarks.md, "Thread scores and multi-hop"). Run it
from the checkout with::

    .venv/bin/python lab/thread_score_study.py --data ../shared/data/locomo [--json out.json]

Reads kioku internals through its siblings in ``lab/`` (``thread_study.py``, ``study_cli.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from study_cli import study_main
from thread_study import markdown, run_thread_study

from kioku.benchmark.data import Corpus
from kioku.runtime import Runtime

WEIGHTS = (0.0, 0.2, 0.23, 0.26, 0.3)


def run_thread_score_study(
    runtime: Runtime, corpora: Sequence[Corpus], log: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Every question with every weight, hybrid and bm25 arms (see ``run_thread_study``)."""
    return run_thread_study(
        runtime,
        corpora,
        log,
        setting="thread_score_weight",
        weights=WEIGHTS,
        arm_names=("hybrid", "bm25"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    description = __doc__.splitlines()[0] if __doc__ else ""
    return study_main(argv, description, "thread-scores", run_thread_score_study, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
