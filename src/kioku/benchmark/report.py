"""The markdown report: every table is rendered from the raw results dict (see ``run.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kioku.benchmark import baselines
from kioku.service.ranking.pipeline import STAGE_NAMES

ARM_LABELS = {"hybrid": "kioku hybrid", "bm25": "kioku bm25", "vector": "kioku vector"}
THIS_RUN = "this run"
INGEST_HEADER = ["data set", "memories", "accepted/s", "write s", "drain s", "searchable/s"]

HOW_TO_READ = """\
## How to read

- Three **arms** run side by side on the same store: `hybrid` (kioku's default recall: BM25 +
  vectors, weighted fusion, bounded re-rank), `bm25` (lexical leg only) and `vector` (vector leg
  only), selected with `RecallService.recall(..., legs=...)`. Every question retrieves the top 20.
- **LoCoMo** recall@k is turn-level: the fraction of a question's evidence turns found in the top
  k, averaged over questions (micro); hit@10 = any evidence turn in the top 10; MRR@10 on the
  first evidence turn. **JSQuAD** has one gold paragraph per question, so recall@k = hit@k.
- **Latency** is the in-process wall time of one `recall` call, query embedding included, after
  5 warm-up queries per context. **items/s** is, for `bm25`, memories accepted per second by
  `remember_batch` (lexically searchable on return) and, for `vector`/`hybrid`, memories per
  second until vector-searchable (write + embedding drain). Peak RSS is one figure for the whole
  process (all arms share it).
- Rows marked *BASELINES.md (CEO's harness)* are copied from `BASELINES.md`: other systems,
  measured by a different harness on the same kind of machine. Timing differences under ~15% are
  noise. In `--quick` mode the question sets are subsets: do not compare them with those rows.
- Scale rows use **synthetic memories with synthetic vectors** (see the section); their latency
  is real, their retrieval quality means nothing and is not reported.
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def rate(value: float | None) -> str:
    """Items per second, whole numbers."""
    return "–" if value is None else f"{value:.0f}"


def ms(value: float | None) -> str:
    """Milliseconds (or seconds, or MB) with one decimal."""
    return "–" if value is None else f"{value:.1f}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _baseline_rows(source: Mapping[str, Sequence[str]], show: bool = True) -> list[list[str]]:
    if not show:
        return []
    return [[name, baselines.SOURCE, *values] for name, values in source.items()]


def _metric_row(label: str, metrics: Mapping[str, Any], columns: Sequence[str]) -> list[Any]:
    return [label, THIS_RUN, *(metrics.get(c) for c in columns)]


def locomo_section(locomo: Mapping[str, Any], show_baselines: bool = True) -> str:
    """Overall per arm (+ baselines), per category for hybrid, and the evidence clean-up."""
    arms = locomo["arms"]
    columns = baselines.LOCOMO_COLUMNS
    rows = [_metric_row(ARM_LABELS[a], arms[a]["metrics"]["all"], columns) for a in arms]
    names = ", ".join(locomo["conversations"])
    parts = [
        "## LoCoMo retrieval (categories 1-4, micro over questions, top 20)",
        f"Conversations: {names}; {locomo['memories']} memories (one per turn), "
        f"{locomo['questions']} questions.",
        table(
            ["system", "measured by", *columns],
            rows + _baseline_rows(baselines.LOCOMO, show_baselines),
        ),
    ]
    shown = "hybrid" if "hybrid" in arms else next(iter(arms), None)
    if shown is not None:
        metrics = arms[shown]["metrics"]
        cats = [key for key in metrics if key.startswith("cat")]
        names = {
            "cat1": "1 multi-hop",
            "cat2": "2 temporal",
            "cat3": "3 open-domain",
            "cat4": "4 single-hop",
        }
        cat_rows = [[names.get(c, c), *(metrics[c].get(col) for col in columns)] for c in cats]
        parts += [
            f"### LoCoMo per category ({ARM_LABELS[shown]})",
            table(["category", *columns], cat_rows),
        ]
    if locomo.get("feedback"):
        parts.append(feedback_section(locomo["feedback"]))
    parts.append(evidence_section(locomo["evidence"]))
    return "\n\n".join(parts)


def feedback_section(study: Mapping[str, Any]) -> str:
    """Hybrid before/after oracle feedback, on the held-out half and on the feedback half."""
    columns = ["recall@5", "recall@10", "mrr@10"]
    rows = []
    for half, label in (("held_out", "held-out half"), ("feedback_half", "feedback half")):
        for when in ("before", "after"):
            metrics = study[half][when]
            rows.append([label, when, metrics.get("n"), *(metrics.get(c) for c in columns)])
    events = study["events"]
    return "\n\n".join(
        [
            "### Feedback in the re-ranker (hybrid, LoCoMo)",
            "Alternate questions of each conversation form a feedback half and a held-out half. "
            f"An oracle agent marks each of the top {study['depth']} results of every "
            "feedback-half question helpful (gold evidence) or unhelpful "
            f"({events['helpful']} helpful, {events['unhelpful']} unhelpful events); then both "
            "halves are asked again. The held-out rows show whether the feature generalises or "
            "hurts; the feedback-half rows are the ceiling (the same questions again). The "
            "feature cannot move a score by more than the re-ranker's ±10 % bound.",
            table(["questions", "when", "n", *columns], rows),
        ]
    )


def _listing(items: Sequence[str]) -> str:
    return f" ({', '.join(f'`{item}`' for item in items)})" if items else ""


def evidence_section(evidence: Mapping[str, Any]) -> str:
    """What evidence normalisation repaired and dropped."""
    repaired = evidence["ids_repaired"]
    dropped = evidence["ids_dropped"]
    lost = evidence["questions_dropped"]
    return "\n".join(
        [
            "### Evidence normalisation",
            "",
            f"- questions of categories 1-4: {evidence['questions_seen']}; kept "
            f"{evidence['questions_kept']}; dropped for lack of valid evidence: {len(lost)}"
            + (f" ({', '.join(lost)})" if lost else ""),
            f"- evidence items: {evidence['ids_seen']}; repaired (split/zero-stripped/`D:`): "
            f"{len(repaired)}"
            + (f" ({', '.join(f'`{r}`' for r in repaired)})" if repaired else ""),
            f"- evidence ids dropped as nonexistent: {len(dropped)}" + _listing(dropped),
        ]
    )


def jsquad_section(jsquad: Mapping[str, Any], show_baselines: bool = True) -> str:
    """JSQuAD per arm (+ baselines)."""
    arms = jsquad["arms"]
    columns = baselines.JSQUAD_COLUMNS
    rows = [_metric_row(ARM_LABELS[a], arms[a]["metrics"]["all"], columns) for a in arms]
    return "\n\n".join(
        [
            "## JSQuAD retrieval (recall@k = hit@k)",
            f"{jsquad['paragraphs']} distinct paragraphs in one context; "
            f"{jsquad['questions']} questions.",
            table(
                ["system", "measured by", *columns],
                rows + _baseline_rows(baselines.JSQUAD, show_baselines),
            ),
        ]
    )


def _latency_row(label: str, per_s: float | None, lat: Mapping[str, Any], rss: Any) -> list[str]:
    return [label, THIS_RUN, rate(per_s), ms(lat.get("p50")), ms(lat.get("p95")),
            ms(lat.get("p99")), ms(rss)]  # fmt: skip


def ingest_section(results: Mapping[str, Any], show_baselines: bool = True) -> str:
    """Accepted/s (write path) and searchable/s (end to end) per data set, then latency per arm."""
    rows = []
    latency_rows = []
    for name in ("locomo", "jsquad"):
        ing = results[name]["ingest"]
        rows.append([name, ing["items"], rate(ing["accepted_per_s"]), ms(ing["accept_s"]),
                     ms(ing["drain_s"]), rate(ing["searchable_per_s"])])  # fmt: skip
        for arm, run in results[name]["arms"].items():
            per_s = ing["accepted_per_s"] if arm == "bm25" else ing["searchable_per_s"]
            label = f"{ARM_LABELS[arm]} ({name})"
            latency_rows.append(_latency_row(label, per_s, run["latency"], results["peak_rss_mb"]))
    return "\n\n".join(
        [
            "## Ingest and recall latency",
            "Ingest goes through `remember_batch` in batches of 100. *accepted/s* times the "
            "write path only (embedding deferred: memories are lexically searchable, vectors "
            "pending); *drain s* is `EmbeddingScheduler.drain()` embedding everything pending; "
            "*searchable/s* = memories / (write + drain). Target: ≥ 300 accepted/s.",
            table(INGEST_HEADER, rows),
            "Recall latency per query (top 20, query embedding included); items/s as in *How to "
            "read*. The baseline rows are LoCoMo only.",
            table(
                ["system", "measured by", *baselines.LATENCY_COLUMNS],
                latency_rows + _baseline_rows(baselines.LATENCY, show_baselines),
            ),
        ]
    )


SCALE_HEADER = ["memories", "real", "synthetic", "fill accepted/s", "fill vectors/s", "arm",
                "p50 ms", "p95 ms", "p99 ms", "queries", "first query", "peak RSS MB"]  # fmt: skip
STEPS = (
    "embed query (bare)", "scope", "lexical", "vector", "legs", *STAGE_NAMES[1:], "hits", "learn",
    "whole recall", "serialize",
)  # fmt: skip
"""The breakdown's rows: the bare model, then recall's own timings (``Server-Timing``'s
names: the legs, each stage of ``service/ranking/pipeline.py``, the steps around it)."""


def _steps_table(points: Sequence[Mapping[str, Any]]) -> str:
    """One row per step (those any point measured), one column per scale point."""
    measured = [step for step in STEPS if any(step in (p.get("steps") or {}) for p in points)]
    rows = [[step, *(_step((p.get("steps") or {}).get(step)) for p in points)] for step in measured]
    return table(["step", *(f"{p['memories']} memories" for p in points)], rows)


def _step(summary: Mapping[str, Any] | None) -> str:
    return "–" if not summary else f"{ms(summary.get('p50'))} / {ms(summary.get('p95'))}"


def _spread_note(spread: int) -> str:
    return (
        f"Each N is spread evenly over {spread} workspaces (one context each, N/{spread} "
        "memories; the first also holds the real turns and the pinned rules). Query i is "
        f"asked in workspace i mod {spread}, so consecutive queries never share a workspace's "
        "cached rows. `load_pinned` is timed in the first workspace."
    )


def scale_section(points: Sequence[Mapping[str, Any]]) -> str:
    """Latency at N memories in one context, or spread over W workspaces (hybrid k=10), then
    where the time goes."""
    spread = max((int(p.get("workspaces", 1)) for p in points), default=1)
    rows = []
    pinned = []
    for p in points:
        if p.get("load_pinned"):
            lp = p["load_pinned"]
            pinned.append([p["memories"], lp.get("pinned"), ms(lp.get("p50")), ms(lp.get("p95")),
                           ms(lp.get("p99")), lp.get("n")])  # fmt: skip
        arm = "hybrid" if p.get("hybrid") else "bm25"
        lat = p.get(arm) or {}
        rows.append([p["memories"], p["real"], p["synthetic"], rate(p["fill_accept_per_s"]),
                     rate(p["fill_vectors_per_s"]), arm, ms(lat.get("p50")), ms(lat.get("p95")),
                     ms(lat.get("p99")), lat.get("n"), ms(lat.get("first_ms")),
                     ms(p["peak_rss_mb"])])  # fmt: skip
    upkeep = [[p["memories"], p.get("fill_added"), ms(p.get("index_build_s")),
               ms(p.get("vacuum_analyze_s"))] for p in points if "index_build_s" in p]  # fmt: skip
    upkeep_parts = [
        "Bulk-load upkeep on PostgreSQL, after each fill: the HNSW index is dropped before the "
        "fill and built once after it (`maintenance_work_mem` 4GB), then `VACUUM ANALYZE "
        "memories` (planner statistics and visibility map for the new size). Not part of "
        "*fill accepted/s*.",
        table(["memories", "added by the fill", "HNSW build s", "VACUUM ANALYZE s"], upkeep),
    ]
    graphs = [[p["memories"], p.get("fill_added"), ms(p.get("graph_build_s"))]
              for p in points if "graph_build_s" in p]  # fmt: skip
    graph_parts = [
        "SQLite's HNSW graph (contexts above `EXACT_MAX` vectors), built after each fill: on "
        "a server it is built in the background on the first search, which the exact search "
        "answers until then; here it is waited for, so the latencies above are the graph's.",
        table(["memories", "added by the fill", "graph build s"], graphs),
    ]
    lexical = [[p["memories"], ms(p.get("lexical_index_build_s"))]
               for p in points if "lexical_index_build_s" in p]  # fmt: skip
    lexical_parts = [
        "The lexical index of a large scope (tantivy, in this process's memory: "
        "docs/scaling.md), built after each fill by reading the scope's memories from the "
        "database: on a server it is built in the background on the first search, which the "
        "database's own leg (PostgreSQL's GIN, SQLite's FTS5) answers until then; here it is "
        "waited for, so the latencies above are the index's.",
        table(["memories", "lexical index build s"], lexical),
    ]
    return "\n\n".join(
        [
            "## Recall latency at scale (one context, hybrid, k=10)"
            if spread == 1
            else f"## Recall latency at scale ({spread} workspaces, hybrid, k=10)",
            *([] if spread == 1 else [_spread_note(spread)]),
            "The real LoCoMo turns go through the service and the real embedder. The rest are "
            "**synthetic**: text drawn from the LoCoMo vocabulary and turn lengths (seeded), "
            "written through `remember_batch`, with **synthetic vectors** (a random real turn's "
            "embedding plus Gaussian noise, cosine ≈ 0.8, renormalised) stored with "
            "`Store.store_embeddings`. Queries are LoCoMo questions, after 5 warm-up queries; "
            "*first query* is the first warm-up (cold caches). Target: p95 < 50 ms at "
            "100k.",
            table(SCALE_HEADER, rows),
            "Where the time goes (p50 / p95 ms over the first 50 queries): the bare query "
            "embedding (the model alone), then each step as the recall timed it (the names of "
            "its `Server-Timing` header: `lexical` and `vector` run side by side inside `legs`; "
            "`vector` includes the query embedding), the whole call and the serialisation of "
            "its answer.",
            _steps_table(points),
            "`load_pinned` (the whole service call, cap 100) with the pinned memories among "
            "them. Target: under 5 ms.",
            table(["memories", "pinned", "p50 ms", "p95 ms", "p99 ms", "calls"], pinned),
            *(upkeep_parts if upkeep else []),
            *(graph_parts if graphs else []),
            *(lexical_parts if lexical else []),
        ]
    )


def embedders_section(arms: Mapping[str, Mapping[str, Any]]) -> str:
    """The bundled runtimes side by side (benchmark/embedders.py)."""
    rows = []
    for name, arm in arms.items():
        q = arm["query_embedding_ms"]
        rows.append([
            name, arm["model"], ms(q.get("p50")), ms(q.get("p95")),
            rate(arm["locomo_docs_per_s"]), rate(arm["jsquad_docs_per_s"]),
            f"{arm['locomo_cosine_vs_first']['min']:.4f}",
            f"{arm['jsquad_cosine_vs_first']['min']:.4f}",
        ])  # fmt: skip
    header = ["arm", "model id", "query embed p50", "p95", "LoCoMo turns/s",
              "JSQuAD paragraphs/s", "min cosine vs first arm (LoCoMo)", "(JSQuAD)"]  # fmt: skip
    return "## Embedding runtimes, side by side\n\n" + table(header, rows)


def render(results: Mapping[str, Any], *, full: bool = True) -> str:
    """The whole ``docs/benchmarks.md``; ``full=False`` is the console summary (this run only)."""
    parts = [header_section(results["meta"]), HOW_TO_READ.rstrip()] if full else []
    if "locomo" in results:
        parts.append(locomo_section(results["locomo"], full))
    if "jsquad" in results:
        parts.append(jsquad_section(results["jsquad"], full))
    if "locomo" in results and "jsquad" in results:
        parts.append(ingest_section(results, full))
    if results.get("embedder_arms"):
        parts.append(embedders_section(results["embedder_arms"]))
    if results.get("scale"):
        parts.append(scale_section(results["scale"]))
    return "\n\n".join(parts) + "\n"


def _load(meta: Mapping[str, Any], when: str) -> str:
    values = (meta.get("load_average") or {}).get(when)
    return "–" if not values else " / ".join(f"{v:.2f}" for v in values)


PARTIAL = "**Partial: the run was still going (or was cut short) when this was written.**"
TAIL_MARKER = "<!-- Hand-written below this line: `kioku bench` keeps it. -->"


def keep_tail(markdown: str, previous: str) -> str:
    """The new report, followed by the hand-written tail of the ``previous`` one (everything
    from ``TAIL_MARKER`` on), if it had one."""
    at = previous.find(TAIL_MARKER)
    return markdown if at < 0 else markdown + "\n" + previous[at:]


def header_section(meta: Mapping[str, Any]) -> str:
    """Title, command, date, machine, embedder, database."""
    machine = meta["machine"]
    on_postgres = meta.get("backend") == "postgres"
    return "\n".join(
        [
            "# kioku benchmarks" + (" on PostgreSQL" if on_postgres else ""),
            "",
            "<!-- Generated by `kioku bench`: the next run overwrites this whole file"
            + (" (up to the hand-written tail, if any)" if on_postgres else "")
            + ". -->",
            "",
            *([PARTIAL, ""] if meta.get("partial") else []),
            f"- command: `{meta['command']}`",
            f"- date: {meta['date']} ({meta['seconds']} s)"
            + (" — **quick mode (subsets)**" if meta["quick"] else ""),
            f"- machine: {machine['cpu_model']}, {machine['cpus']} CPUs visible, "
            f"Python {machine['python']}, {machine['platform']}",
            f"- load average (1/5/15 min) at start {_load(meta, 'start')}, at end "
            f"{_load(meta, 'end')} (above {machine['cpus']} would mean other processes competed "
            "for the CPUs and timings are inflated)",
            f"- kioku {meta['kioku_version']}; embedder: `{meta['embedder']}`; "
            f"database: {meta.get('database', 'SQLite (temporary file)')}",
            f"- raw figures: `{meta['json']}`",
        ]
    )
