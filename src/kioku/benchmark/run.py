"""``kioku bench``: load the data, ingest through the service, run the arms, write the report."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.progress import Progress

from kioku import __version__
from kioku.benchmark.backend import BenchBackend, SQLiteBench, open_backend
from kioku.benchmark.data import Corpus, EvidenceStats, load_jsquad, load_locomo
from kioku.benchmark.embedders import bundled_arms, compare_embedders
from kioku.benchmark.feedback import run_feedback_study
from kioku.benchmark.ingest import (
    IngestTiming,
    RecordingEmbedder,
    drain_embeddings,
    ensure_context,
    remember_docs,
)
from kioku.benchmark.latency import ARMS, ArmRun, available_arms, peak_rss_mb, run_arm
from kioku.benchmark.meta import command_line, configured_embedder, load_average, machine
from kioku.benchmark.metrics import JSQUAD_KS, LOCOMO_KS, evaluate, latency_summary
from kioku.benchmark.report import keep_tail, render
from kioku.benchmark.reproducible import (
    import_clock,
    name_memories_reproducibly,
    require_settled,
)
from kioku.benchmark.scale import run_scale
from kioku.embeddings import Embedder
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings

TOP_K = 20
QUICK_CONVERSATIONS = 1
QUICK_JSQUAD_QUESTIONS = 300
QUICK_JSQUAD_EXTRA = 200
DEFAULT_JSON = "bench/results/latest.json"
DEFAULT_OUT = {"sqlite": "docs/benchmarks.md", "postgres": "docs/benchmarks-postgres.md"}
DEFAULT_JSONS = {"sqlite": DEFAULT_JSON, "postgres": "bench/results/latest-postgres.json"}

Advance = Callable[[int], None]
Track = Callable[[str, int], Advance]


Checkpoint = Callable[[dict[str, Any]], None]


def _open(url: str, embedder: Embedder | None, *, reproducible: bool = False) -> Runtime:
    """A runtime on ``url``; ``reproducible`` for the quality figures: memories stamped at a
    fixed time and named by seeded ids, so load and luck cannot move a ranking
    (``benchmark/reproducible.py``)."""
    settings = Settings({"database": {"url": url}, "embedder": {"background": True}})
    if not reproducible:
        return open_runtime(settings, embedder=embedder)
    runtime = open_runtime(settings, embedder=embedder, clock=import_clock)
    return name_memories_reproducibly(runtime)


def _ingest(
    runtime: Runtime, corpora: Sequence[Corpus], track: Track, label: str
) -> tuple[dict[str, dict[str, str]], IngestTiming]:
    """Write every corpus into its own context, then drain embeddings; both timed."""
    principal = runtime.local_principal("import")
    timing = IngestTiming(items=sum(len(c.docs) for c in corpora))
    advance = track(f"ingest {label}", timing.items)
    keys: dict[str, dict[str, str]] = {}
    for corpus in corpora:
        ensure_context(runtime, principal, corpus.context)
        keys[corpus.context], seconds = remember_docs(
            runtime, principal, corpus.context, corpus.docs, advance
        )
        timing.accept_s += seconds
    if runtime.embedding is not None:
        pending = runtime.health.database_health().embedding_queue
        track(f"embed {label} ({pending} pending)", 0)
    timing.drain_s = drain_embeddings(runtime)
    require_settled(runtime, principal, [corpus.context for corpus in corpora])
    return keys, timing


def _arms(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    keys: dict[str, dict[str, str]],
    ks: Sequence[int],
    track: Track,
    label: str,
) -> dict[str, Any]:
    """Every available arm over every corpus: metrics and latency."""
    principal = runtime.local_principal("import")
    questions = [q for corpus in corpora for q in corpus.questions]
    out: dict[str, Any] = {}
    for arm in available_arms(runtime):
        run = ArmRun()
        advance = track(f"{arm} {label}", len(questions))
        for corpus in corpora:
            run_arm(
                runtime,
                principal,
                corpus.context,
                corpus.questions,
                keys[corpus.context],
                ARMS[arm],
                k=TOP_K,
                into=run,
                advance=advance,
            )
        out[arm] = {
            "metrics": evaluate(questions, run.rankings, ks),
            "latency": latency_summary(run.latencies_ms),
        }
    return out


def _evidence(corpora: Sequence[Corpus]) -> dict[str, Any]:
    total = EvidenceStats()
    for corpus in corpora:
        if corpus.evidence is not None:
            total.merge(corpus.evidence)
    return asdict(total)


@contextmanager
def _tracker(enabled: bool, console: Console) -> Iterator[Track]:
    with Progress(console=console, disable=not enabled, transient=False) as progress:

        def track(description: str, total: int) -> Advance:
            task = progress.add_task(description, total=total or None)
            if not total:
                return lambda n: None
            return lambda n: progress.advance(task, n)

        yield track


def run_suite(
    data: Path,
    *,
    scales: Sequence[int] = (),
    quick: bool = False,
    embedder: Embedder | None = None,
    workdir: Path,
    progress: bool = True,
    console: Console | None = None,
    backend: BenchBackend | None = None,
    checkpoint: Checkpoint | None = None,
    retrieval: bool = True,
    workspaces: int = 1,
) -> dict[str, Any]:
    """Run everything in ``workdir`` (a scratch directory) and return the raw results.

    ``retrieval=False`` skips the LoCoMo and JSQuAD arms (the scale run alone);
    ``workspaces`` spreads each scale point's memories over that many workspaces.

    ``backend`` holds the databases (default: SQLite files in ``workdir``); ``checkpoint`` is
    called with the results so far after the retrieval part and after every scale point, so a
    long run that is cut short still leaves its figures behind.
    """
    console = console or Console(stderr=True)
    backend = backend or SQLiteBench(workdir)
    locomo = load_locomo(data / "locomo", QUICK_CONVERSATIONS if quick else None)
    subset = {"max_questions": QUICK_JSQUAD_QUESTIONS, "extra_paragraphs": QUICK_JSQUAD_EXTRA}
    jsquad = load_jsquad(data / "jsquad" / "valid-v1.3.json", **(subset if quick else {}))
    base = embedder if embedder is not None else configured_embedder()
    recorder = RecordingEmbedder(base) if base is not None else None
    results: dict[str, Any] = {}
    if retrieval:
        with _tracker(progress, console) as track, backend.database("bench") as url:
            runtime = _open(url, recorder, reproducible=True)
            try:
                locomo_keys, locomo_ingest = _ingest(runtime, locomo, track, "locomo")
                jsquad_keys, jsquad_ingest = _ingest(runtime, [jsquad], track, "jsquad")
                results["peak_rss_after_ingest_mb"] = peak_rss_mb()
                results["locomo"] = {
                    "conversations": [c.context for c in locomo],
                    "memories": sum(len(c.docs) for c in locomo),
                    "questions": sum(len(c.questions) for c in locomo),
                    "evidence": _evidence(locomo),
                    "ingest": locomo_ingest.as_dict(),
                    "arms": _arms(runtime, locomo, locomo_keys, LOCOMO_KS, track, "locomo"),
                }
                if runtime.embedder is not None:  # last on LoCoMo: it writes feedback events
                    results["locomo"]["feedback"] = run_feedback_study(
                        runtime, locomo, locomo_keys, LOCOMO_KS, track
                    )
                results["jsquad"] = {
                    "paragraphs": len(jsquad.docs),
                    "questions": len(jsquad.questions),
                    "ingest": jsquad_ingest.as_dict(),
                    "arms": _arms(runtime, [jsquad], jsquad_keys, JSQUAD_KS, track, "jsquad"),
                }
                results["peak_rss_mb"] = peak_rss_mb()
            finally:
                runtime.close()
        if base is not None and base.name.startswith("bundled:"):
            results["embedder_arms"] = compare_embedders(
                bundled_arms(Settings().embedder.model_dir),
                [q.text for corpus in locomo for q in corpus.questions],
                [d.text for corpus in locomo for d in corpus.docs],
                [d.text for d in jsquad.docs],
            )
    results["embedder"] = recorder.name if recorder is not None else "none (BM25 only)"
    if checkpoint is not None:
        checkpoint(results)
    if scales:
        with _tracker(progress, console) as track, backend.database("scale") as url:
            if recorder is not None:
                recorder.serve = True
            runtime = _open(url, recorder)
            try:
                docs = [doc for corpus in locomo for doc in corpus.docs]
                questions = [q for corpus in locomo for q in corpus.questions]
                advance = track("scale fill", max(scales))
                principal = runtime.local_principal("import")
                points: list[dict[str, object]] = []
                results["scale"] = points

                def on_point(point: dict[str, object]) -> None:
                    points.append(point)
                    if checkpoint is not None:
                        checkpoint(results)

                run_scale(
                    runtime, principal, scales, docs, questions, advance,
                    bulk_load=lambda: backend.bulk_load(url), on_point=on_point,
                    workspaces=workspaces,
                )  # fmt: skip
            finally:
                runtime.close()
    return results


def run_benchmark(
    *,
    out: str | None = None,
    data: str,
    scales: Sequence[int],
    quick: bool,
    as_json: bool,
    embedder: Embedder | None = None,
    json_out: str | None = None,
    progress: bool = True,
    backend: str = "sqlite",
    postgres_url: str | None = None,
    scale_only: bool = False,
    workspaces: int = 1,
) -> dict[str, Any]:
    """The ``kioku bench`` command: run, write ``out`` (markdown) and ``json_out``, print.

    Both are rewritten after every phase (see ``run_suite``), marked partial until the end.
    """
    out = out or DEFAULT_OUT.get(backend, DEFAULT_OUT["sqlite"])
    json_out = json_out or DEFAULT_JSONS.get(backend, DEFAULT_JSON)
    if workspaces != 1 and json_out == DEFAULT_JSONS.get(backend, DEFAULT_JSON):
        json_out = json_out.replace(".json", "-workspaces.json")  # keep the one-context figures
    data_dir = Path(data)
    if not (data_dir / "locomo").is_dir() or not (data_dir / "jsquad").is_dir():
        raise SystemExit(f"error: {data_dir} must hold locomo/ and jsquad/ (see --data)")
    console = Console(stderr=True)
    started = datetime.now(UTC)
    load_before = load_average()
    if scale_only and not scales:
        raise SystemExit("error: --scale-only needs at least one --scale N")
    if workspaces < 1:
        raise SystemExit("error: --workspaces must be at least 1")
    command = command_line(
        out, data, scales, quick, as_json, backend, postgres_url, scale_only, workspaces
    )
    with (
        tempfile.TemporaryDirectory(prefix="kioku-bench-") as scratch,
        open_backend(backend, Path(scratch), postgres_url) as store_backend,
    ):
        database = store_backend.describe()

        def write(results: dict[str, Any], *, partial: bool = True) -> None:
            results["meta"] = {
                "command": command,
                "date": started.strftime("%Y-%m-%d %H:%M UTC"),
                "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
                "machine": machine(),
                "load_average": {"start": load_before, "end": load_average()},
                "kioku_version": __version__,
                "embedder": results.get("embedder"),
                "quick": quick,
                "json": json_out,
                "backend": backend,
                "database": database,
                "partial": partial,
            }
            _write(out, render(results), json_out, results)

        results = run_suite(
            data_dir,
            scales=scales,
            quick=quick,
            embedder=embedder,
            workdir=Path(scratch),
            progress=progress and not as_json,
            console=console,
            backend=store_backend,
            checkpoint=write,
            retrieval=not scale_only,
            workspaces=workspaces,
        )
        write(results, partial=False)
    if as_json:
        print(json.dumps(results, ensure_ascii=False))
    elif progress:
        Console().print(Markdown(render(results, full=False)))
        console.print(f"wrote {out} and {json_out}")
    return results


def _write(out: str, markdown: str, json_out: str, results: dict[str, Any]) -> None:
    """Write the report (keeping a hand-written tail of the old one, see ``report.py``)."""
    path = Path(out)
    previous = path.read_text(encoding="utf-8") if path.exists() else ""
    for target, text in ((path, keep_tail(markdown, previous)),
                         (Path(json_out), json.dumps(results, indent=2))):  # fmt: skip
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
