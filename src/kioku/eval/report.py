"""Markdown for the gate's results: the retrieval table per bucket and arm, the leak counts."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.eval.baseline import Breach
from kioku.eval.golden import BUCKETS, UNANSWERABLE
from kioku.eval.lanes import LaneReport
from kioku.eval.leakage import Leak
from kioku.eval.metrics import RANKING_METRICS
from kioku.eval.retrieval import OVERALL, RetrievalReport

CHECKS = {
    "exact": "confident",
    "negative": "abstain",
    "absent": "abstain",
    "trusted-only": "clean",
    "temporal": "newer_first",
    "newer-first": "wanted_first",
    "pinned-vs-recall": "pinned_lane",
}
"""Each bucket's own check, shown beside the ranking metrics."""


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_retrieval(
    report: RetrievalReport, breaches: Sequence[Breach], command: str, heading: str = "##"
) -> str:
    """The per-bucket × per-arm table, the bucket checks, and the verdict."""
    arms = list(report.metrics)
    lines = [
        f"{heading} Retrieval (golden set)",
        "",
        f"Produced by `{command}`. nDCG@10 per bucket and arm; the last column is the bucket's "
        "own check (docs/eval.md).",
        "",
        "| bucket | n | " + " | ".join(arms) + " | check |",
        "|---|---:|" + "---:|" * len(arms) + "---|",
    ]
    for bucket in [*BUCKETS, OVERALL]:
        rows = [report.metrics[arm].get(bucket) for arm in arms]
        if all(row is None for row in rows):
            continue
        n = next(int(row["n"]) for row in rows if row is not None)
        check = CHECKS.get(bucket)
        if bucket in UNANSWERABLE:
            cells = ["–"] * len(arms)
        else:
            cells = [_cell(row.get("ndcg@10") if row else None) for row in rows]
        checks = ""
        if check:
            values = ", ".join(
                f"{arm} {_cell(row.get(check) if row else None)}"
                for arm, row in zip(arms, rows, strict=True)
            )
            checks = f"{check}: {values}"
        lines.append(f"| {bucket} | {n} | " + " | ".join(cells) + f" | {checks} |")
    lines += ["", f"{heading}# Every ranking metric", ""]
    lines.append("| arm | bucket | " + " | ".join(RANKING_METRICS) + " |")
    lines.append("|---|---|" + "---:|" * len(RANKING_METRICS))
    for arm in arms:
        for bucket in [*BUCKETS, OVERALL]:
            row = report.metrics[arm].get(bucket)
            if row is None or bucket in UNANSWERABLE:
                continue
            cells = " | ".join(_cell(row.get(metric)) for metric in RANKING_METRICS)
            lines.append(f"| {arm} | {bucket} | {cells} |")
    lines += ["", _verdict(breaches), ""]
    return "\n".join(lines)


def _verdict(breaches: Sequence[Breach]) -> str:
    if not breaches:
        return (
            "**Pass**: every committed floor holds, and the product arm is below none of its legs."
        )
    listed = "\n".join(f"- {breach.describe()}" for breach in breaches)
    return f"**Fail**: {len(breaches)} floor(s) breached:\n\n{listed}"


def render_leakage(leaks: Sequence[Leak], lanes: LaneReport | None, heading: str = "##") -> str:
    """The leak counts (each must be 0) and the leaks found, if any."""
    lines = [f"{heading} Leakage", "", "| check | count |", "|---|---:|"]
    kinds = ("token_overlap", "rare_ngram")
    for kind in kinds:
        lines.append(f"| query/answer: {kind} | {sum(1 for leak in leaks if leak.kind == kind)} |")
    if lanes is not None:
        for kind, count in lanes.counts.items():
            lines.append(f"| lane: {kind} | {count} |")
    lines.append("")
    if lanes is not None:
        lines += [f"{lanes.probes} lane probes.", ""]
    for leak in leaks:
        lines.append(f"- {leak.kind}: {leak.query_id} → {leak.doc_id} ({leak.detail})")
    if lanes is not None:
        for kind, examples in lanes.examples.items():
            lines += [f"- {kind}: {example}" for example in examples]
    return "\n".join(lines).rstrip() + "\n"
