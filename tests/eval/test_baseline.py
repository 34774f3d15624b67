"""Floors: a breach names arm, bucket, metric, measured and floor; a vanished metric breaches."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kioku.eval.baseline import (
    DEFAULT_BASELINE,
    BaselineError,
    Breach,
    check_floors,
    check_legs,
    dump_floors,
    load_baseline,
    suggest_floors,
)
from kioku.eval.retrieval import ARMS, RetrievalReport


def report(**buckets: dict[str, float]) -> RetrievalReport:
    return RetrievalReport(metrics={"hybrid+rerank": dict(buckets)})


def test_a_run_at_or_above_every_floor_passes() -> None:
    measured = report(exact={"n": 15, "p@1": 0.9333, "confident": 1.0})
    floors = {"hybrid+rerank": {"exact": {"p@1": 0.9333, "confident": 1.0}}}
    assert check_floors(measured, floors) == []


def test_below_a_floor_is_a_breach_that_says_where() -> None:
    measured = report(exact={"n": 15, "p@1": 0.8, "confident": 1.0})
    floors = {"hybrid+rerank": {"exact": {"p@1": 0.9, "confident": 1.0}}}
    assert check_floors(measured, floors) == [Breach("hybrid+rerank", "exact", "p@1", 0.8, 0.9)]
    assert check_floors(measured, floors)[0].describe() == (
        "hybrid+rerank / exact / p@1: 0.8000 < floor 0.9000"
    )


def legs_report(product: float, lexical: float, vector: float) -> RetrievalReport:
    def row(p1: float) -> dict[str, float]:
        return {"n": 15, "p@1": p1, "ndcg@10": 0.8}

    return RetrievalReport(
        metrics={
            "hybrid+rerank": {"japanese": row(product)},
            "hybrid": {"japanese": row(0.1)},  # the plain arm is not the product: not checked
            "lexical": {"japanese": row(lexical)},
            "vector": {"japanese": row(vector)},
        }
    )


def test_the_product_arm_below_one_of_its_legs_is_a_breach_that_names_the_leg() -> None:
    assert check_legs(legs_report(0.6, 0.2667, 0.6)) == []  # level with a leg is not below it
    breaches = check_legs(legs_report(0.5333, 0.2667, 0.6))
    assert breaches == [Breach("hybrid+rerank", "japanese", "p@1", 0.5333, 0.6, "vector")]
    assert breaches[0].describe() == (
        "hybrid+rerank / japanese / p@1: 0.5333 < the vector leg's 0.6000"
    )
    # Below both legs: one breach per leg. No slack: 0.0008 below is below.
    pinned = RetrievalReport(
        metrics={
            "hybrid+rerank": {"pinned-vs-recall": {"n": 15, "ndcg@10": 0.8036}},
            "lexical": {"pinned-vs-recall": {"n": 15, "ndcg@10": 0.9}},
            "vector": {"pinned-vs-recall": {"n": 15, "ndcg@10": 0.8044}},
        }
    )
    assert [(b.leg, b.floor) for b in check_legs(pinned)] == [("lexical", 0.9), ("vector", 0.8044)]


def test_the_leg_check_needs_the_product_arm_and_both_legs() -> None:
    only_product = RetrievalReport(metrics={"hybrid+rerank": {"exact": {"n": 1, "p@1": 0.0}}})
    assert check_legs(only_product) == []


def test_a_metric_the_run_did_not_produce_is_a_breach() -> None:
    floors = {"hybrid+rerank": {"temporal": {"newer_first": 0.2}}, "vector": {"exact": {"p@1": 1}}}
    breaches = check_floors(report(exact={"n": 1, "p@1": 1.0}), floors)
    assert [(b.arm, b.bucket, b.measured) for b in breaches] == [
        ("hybrid+rerank", "temporal", None),
        ("vector", "exact", None),
    ]
    assert "missing" in breaches[0].describe()


def test_suggested_floors_leave_one_query_of_slack_but_none_on_lane_checks() -> None:
    measured = report(
        paraphrase={"n": 16, "ndcg@10": 0.8661},
        overall={"n": 107, "ndcg@10": 0.7351},
        **{"trusted-only": {"n": 15, "clean": 1.0, "p@1": 0.4}},
    )
    floors = suggest_floors(measured)["hybrid+rerank"]
    assert floors["paraphrase"]["ndcg@10"] == 0.80  # 0.8661 - 1/16, rounded down
    assert floors["overall"]["ndcg@10"] == 0.70  # 0.7351 - 0.03 (1/107 is less)
    assert floors["trusted-only"] == {"clean": 1.0, "p@1": 0.33}
    text = dump_floors(suggest_floors(measured), "line one\n\nline three")
    assert text.startswith("# line one\n#\n# line three\n")
    assert yaml.safe_load(text)["floors"]["hybrid+rerank"]["paraphrase"]["ndcg@10"] == 0.80


def test_the_committed_baseline_names_every_arm() -> None:
    floors = load_baseline()
    assert set(floors) == set(ARMS)
    assert floors["hybrid+rerank"]["trusted-only"]["clean"] == 1.0
    assert "a commit that says why" in DEFAULT_BASELINE.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("floors: {}", "non-empty 'floors'"),
        ("floors: {hybrid: [1, 2]}", "floors.hybrid must map buckets"),
        ("floors: {hybrid: {exact: {p@1: 1.5}}}", "must map metrics to (0, 1]"),
        ("floors: {hybrid: {exact: {p@1: 0.0}}}", "a floor of 0 cannot fail"),
        ("floors: {hybrid: {exact: {p@1: 'not gated'}}}", "'not gated: <why>'"),
        ("floors: {hybrid: {exact: {p@1: 'skip'}}}", "'not gated: <why>'"),
        ("floors: [unclosed", "not valid YAML"),
    ],
)
def test_an_invalid_baseline_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "baseline.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as error:
        load_baseline(path)
    assert message in str(error.value)


def test_a_missing_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="cannot read baseline"):
        load_baseline(tmp_path / "absent.yaml")


def test_a_metric_marked_not_gated_is_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yaml"
    path.write_text(
        "floors: {lexical: {cross-lingual: {p@1: 'not gated: no shared words', ndcg@10: 0.2}}}",
        encoding="utf-8",
    )
    floors = load_baseline(path)
    measured = RetrievalReport(
        metrics={"lexical": {"cross-lingual": {"n": 16, "p@1": 0.0, "ndcg@10": 0.1}}}
    )
    assert check_floors(measured, floors) == [
        Breach("lexical", "cross-lingual", "ndcg@10", 0.1, 0.2)
    ]


def test_a_suggested_floor_that_would_be_0_says_not_gated() -> None:
    floors = suggest_floors(report(**{"cross-lingual": {"n": 16, "p@1": 0.0625, "p@5": 0.2}}))
    bucket = floors["hybrid+rerank"]["cross-lingual"]
    assert bucket["p@5"] == 0.13
    assert bucket["p@1"] == "not gated: measured 0.0625, no floor can fail"


def test_the_committed_baseline_has_no_floor_of_0() -> None:
    for buckets in load_baseline().values():
        for metrics in buckets.values():
            assert all(value != 0 for value in metrics.values())
