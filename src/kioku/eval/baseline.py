"""The committed thresholds (``data/baseline.yaml``) and the comparison that makes the gate.

A baseline holds floors ``arm → bucket → metric → minimum``. Every floor is checked; a metric
the run did not produce counts as a breach too (a bucket that vanished must not pass quietly).
A floor of 0 could never fail, so it is refused: a metric that cannot be gated (the lexical
leg across languages) says so instead, ``"not gated: <why>"``, and is left out of the check.
Changing a floor needs a commit that says why (docs/eval.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kioku.eval.golden import DATA, read_yaml
from kioku.eval.retrieval import RetrievalReport

DEFAULT_BASELINE = DATA / "baseline.yaml"
MARGIN = 0.03
"""How far below the measured figure ``--suggest-baseline`` puts a floor, at least; a bucket of
n queries gets 1/n (one query's worth) when that is more, so a single tie resolved the other
way on another CPU does not fail the gate, while a broken leg (many queries) always does."""
PRODUCT_ARM = "hybrid+rerank"
"""The arm every surface runs (``kioku.eval.retrieval.ARMS``)."""
LEGS = ("lexical", "vector")
LEG_METRICS = ("p@1", "ndcg@10")
"""What ``check_legs`` compares the product with its legs on, in every bucket."""
STRICT_METRICS = frozenset({"clean", "pinned_lane"})
"""Lane guarantees, not quality: their floor is the measured value itself (1.0 on main)."""


class BaselineError(Exception):
    """The baseline file is missing or invalid (exit 3)."""


@dataclass(frozen=True)
class Breach:
    """One floor the run fell below (``measured`` is ``None`` when it was not produced)."""

    arm: str
    bucket: str
    metric: str
    measured: float | None
    floor: float
    leg: str | None = None
    """Set when the floor is that leg's own figure (``check_legs``), not a committed one."""

    def describe(self) -> str:
        """One line for the terminal: where, measured vs floor."""
        got = "missing" if self.measured is None else f"{self.measured:.4f}"
        floor = f"the {self.leg} leg's {self.floor:.4f}" if self.leg else f"floor {self.floor:.4f}"
        return f"{self.arm} / {self.bucket} / {self.metric}: {got} < {floor}"


NOT_GATED = "not gated"
"""How a baseline marks a metric it deliberately does not check (followed by ``: <why>``)."""

Floors = dict[str, dict[str, dict[str, float | str]]]


def load_baseline(path: Path | str = DEFAULT_BASELINE) -> Floors:
    """Read the floors; any problem raises ``BaselineError``."""
    path = Path(path)
    data = read_yaml(path, "baseline", BaselineError)
    floors = data.get("floors") if isinstance(data, dict) else None
    if not isinstance(floors, dict) or not floors:
        raise BaselineError(f"{path}: expected a non-empty 'floors' mapping")
    for arm, buckets in floors.items():
        if not isinstance(buckets, dict):
            raise BaselineError(f"{path}: floors.{arm} must map buckets to metrics")
        for bucket, metrics in buckets.items():
            if not isinstance(metrics, dict) or not all(_valid_floor(v) for v in metrics.values()):
                raise BaselineError(
                    f"{path}: floors.{arm}.{bucket} must map metrics to (0, 1] or to "
                    f"'{NOT_GATED}: <why>' (a floor of 0 cannot fail)"
                )
    return floors


def _valid_floor(value: object) -> bool:
    if isinstance(value, str):
        return value.startswith(f"{NOT_GATED}:") and bool(value[len(NOT_GATED) + 1 :].strip())
    return isinstance(value, int | float) and not isinstance(value, bool) and 0.0 < value <= 1.0


def check_floors(
    report: RetrievalReport, floors: Mapping[str, Mapping[str, Mapping[str, float | str]]]
) -> list[Breach]:
    """Every floor the report falls below, in the baseline's order."""
    breaches: list[Breach] = []
    for arm, buckets in floors.items():
        for bucket, metrics in buckets.items():
            measured = report.metrics.get(arm, {}).get(bucket, {})
            for metric, floor in metrics.items():
                if isinstance(floor, str):  # "not gated: <why>"
                    continue
                value = measured.get(metric)
                # Means are rounded to 4 places; compare at that precision.
                if value is None or round(value, 4) < round(float(floor), 4):
                    breaches.append(Breach(arm, bucket, metric, value, float(floor)))
    return breaches


def check_legs(report: RetrievalReport) -> list[Breach]:
    """Every bucket where the product's arm (``PRODUCT_ARM``) ranks below one of its own legs
    on ``LEG_METRICS`` (issue 17: fusion must never lose to a leg). No slack: the run is
    deterministic and the target is "not below", so a single query lost to a leg breaches. Not
    checked when the run left out the product arm or a leg."""
    metrics = report.metrics
    if PRODUCT_ARM not in metrics or not all(leg in metrics for leg in LEGS):
        return []
    breaches: list[Breach] = []
    for bucket, measured in metrics[PRODUCT_ARM].items():
        for metric in LEG_METRICS:
            value = measured.get(metric)
            if value is None:
                continue
            for leg in LEGS:
                rival = metrics[leg].get(bucket, {}).get(metric)
                if rival is not None and round(value, 4) < round(rival, 4):
                    breaches.append(Breach(PRODUCT_ARM, bucket, metric, value, rival, leg))
    return breaches


def suggest_floors(report: RetrievalReport, margin: float = MARGIN) -> Floors:
    """Floors a little below this run (rounded down to 2 places): a proposal to review. A
    metric within its slack of 0 gets ``not gated`` with the figure, for a person to explain
    or to gate some other way."""
    floors: Floors = {}
    for arm, buckets in report.metrics.items():
        for bucket, metrics in buckets.items():
            one_query = 1.0 / metrics["n"] if metrics.get("n") else 0.0
            for metric, value in metrics.items():
                if metric == "n":
                    continue
                slack = 0.0 if metric in STRICT_METRICS else max(margin, one_query)
                floor = math.floor((value - slack) * 100 + 1e-9) / 100
                suggested: float | str = (
                    floor if floor > 0 else f"{NOT_GATED}: measured {value:.4f}, no floor can fail"
                )
                floors.setdefault(arm, {}).setdefault(bucket, {})[metric] = suggested
    return floors


def dump_floors(floors: Floors, header: str) -> str:
    """The YAML text of a baseline file, ``header`` as its leading comment."""
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    body: dict[str, Any] = {"floors": floors}
    return comment + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
