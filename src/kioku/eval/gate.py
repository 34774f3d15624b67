"""The two gate runs end to end: load, ingest, measure, compare. The CLI only prints and exits.

Exit codes are decided here, once: ``PASS`` (0), ``BREACH`` (1: a floor or a leak count), and
``INFRA`` (3: the gate could not measure: golden or baseline file, model, database).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kioku.eval.baseline import Breach, check_floors, check_legs, load_baseline
from kioku.eval.corpus import GoldenRuntime, golden_runtime, load_embedder
from kioku.eval.golden import GoldenSet, load_golden
from kioku.eval.lanes import LaneReport, check_lanes, plant
from kioku.eval.leakage import Leak, find_leaks
from kioku.eval.retrieval import ARMS, RetrievalReport, run_retrieval
from kioku.service.principal import Principal

PASS, BREACH, INFRA = 0, 1, 3


@dataclass
class RetrievalGate:
    """A retrieval run and its verdict."""

    golden: GoldenSet
    report: RetrievalReport
    breaches: list[Breach]
    model: str
    """The embedding model's id (what a context records), so a report says what it measured."""

    @property
    def exit_code(self) -> int:
        return BREACH if self.breaches else PASS

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: verdict, breaches, metrics and every query's ranking per arm."""
        sizes = {"documents": len(self.golden.documents), "queries": len(self.golden.queries)}
        return {
            "passed": not self.breaches,
            "golden": sizes,
            "model": self.model,
            "breaches": [breach.__dict__ for breach in self.breaches],
            **self.report.as_dict(),
        }


@dataclass
class LeakageGate:
    """Query/answer leaks and lane leak counts; every one must be zero."""

    leaks: list[Leak]
    lanes: LaneReport | None = None
    counts: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.counts = {
            "token_overlap": sum(1 for leak in self.leaks if leak.kind == "token_overlap"),
            "rare_ngram": sum(1 for leak in self.leaks if leak.kind == "rare_ngram"),
            **(self.lanes.counts if self.lanes is not None else {}),
        }

    @property
    def exit_code(self) -> int:
        return BREACH if any(self.counts.values()) else PASS

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: verdict, every count, the leaks and the lane examples."""
        return {
            "passed": self.exit_code == PASS,
            "counts": self.counts,
            "leaks": [leak.__dict__ for leak in self.leaks],
            "lane_examples": self.lanes.examples if self.lanes is not None else {},
            "lane_probes": self.lanes.probes if self.lanes is not None else 0,
        }


def retrieval_gate(
    golden_path: Path | str,
    baseline_path: Path | str,
    embedder: str = "bundled",
    *,
    arms: list[str] | None = None,
    tamper: Callable[[GoldenRuntime], None] | None = None,
) -> RetrievalGate:
    """Run ``kioku eval retrieval``. ``tamper`` changes the loaded runtime before the queries
    (tests use it to break recall on purpose and watch the gate catch it)."""
    golden = load_golden(golden_path)
    floors = load_baseline(baseline_path)
    chosen = {name: ARMS[name] for name in arms} if arms else ARMS
    model = load_embedder(embedder)
    with golden_runtime(golden, model, prepare=tamper) as loaded:
        report = run_retrieval(loaded, golden, chosen)
    if arms:  # floors of arms that were not run are not checked
        floors = {arm: buckets for arm, buckets in floors.items() if arm in chosen}
    breaches = check_floors(report, floors) + check_legs(report)
    return RetrievalGate(golden, report, breaches, model.name)


def leakage_gate(
    golden_path: Path | str, embedder: str = "bundled", *, lanes: bool = True
) -> LeakageGate:
    """Run ``kioku eval leakage``: the query/answer detectors, then (unless ``lanes`` is
    off) the lane probes on a planted runtime."""
    golden = load_golden(golden_path)
    leaks = find_leaks(golden)
    if not lanes:
        return LeakageGate(leaks)
    intruders: list[Principal] = []
    with golden_runtime(
        golden,
        load_embedder(embedder),
        prepare=lambda loaded: intruders.append(plant(loaded, golden)),
    ) as loaded:
        report = check_lanes(loaded, golden, intruders[0])
    return LeakageGate(leaks, report)
