"""The command line shared by the LoCoMo studies (``graph_study.py``, ``sleep_study.py``,
``thread_study.py``, ``thread_score_study.py``, run from ``lab/``).

Reads kioku internals: ``benchmark.data.load_locomo``, ``benchmark.meta.configured_embedder``,
``benchmark.reproducible`` (the bench's standing clock and seeded memory ids) and
``open_runtime``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kioku.benchmark.data import Corpus, load_locomo
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.reproducible import import_clock, name_memories_reproducibly
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings

Study = Callable[[Runtime, Sequence[Corpus], Callable[[str], None]], dict[str, Any]]


def study_main(
    argv: Sequence[str] | None,
    description: str,
    name: str,
    study: Study,
    markdown: Callable[[Mapping[str, Any]], str],
) -> int:
    """Parse ``--data/--limit/--json``, run ``study`` on a scratch SQLite runtime with the
    configured embedder, print its Markdown table (and write the raw results as JSON)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", default="../shared/data/locomo", help="LoCoMo conv-*.json")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--json", default=None, help="Also write the raw results here.")
    args = parser.parse_args(argv)
    corpora = load_locomo(Path(args.data), args.limit)
    embedder = configured_embedder()
    with tempfile.TemporaryDirectory(prefix=f"kioku-{name}-bench-") as workdir:
        url = f"sqlite:///{workdir}/{name}.db"
        settings = Settings({"database": {"url": url}, "embedder": {"background": True}})
        runtime = open_runtime(settings, embedder=embedder, clock=import_clock)
        name_memories_reproducibly(runtime)  # the same store on every run, at any load
        try:
            results = study(runtime, corpora, lambda text: print(text, file=sys.stderr))
        finally:
            runtime.close()
    results["embedder"] = embedder.name if embedder is not None else "none (BM25 only)"
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(markdown(results))
    return 0
