"""Recall as a pipeline of named stages (issue 31): the declared stages are the documented
ones, the breakdown is built from them, each stage that runs is timed (``Server-Timing`` on
REST and the UI's search, ``/metrics``), and the ablation turns a stage off."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import MemoryCreate, RecallRequest, ScoreBreakdown
from kioku.runtime import Runtime, open_runtime
from kioku.service.ranking import pipeline
from tests.conftest import SyncASGIClient, make_settings, portal_client

ROOT = Path(__file__).resolve().parents[2]
API = "/api/v1/contexts/default"
LEG_FIELDS = {"lexical", "lexical_rank", "vector", "vector_rank"}
OUTSIDE_THE_PIPELINE = {"model_rerank"}  # the model reranker runs after it (service/recall.py)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    principal = runtime.local_principal("rest")
    for i, text in enumerate(["Alice drinks green tea", "Bob drinks coffee", "tea ceremony"]):
        runtime.memories.remember(
            principal, "default", MemoryCreate(summary=text, thread="t1", position=i)
        )
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def client(runtime: Runtime) -> Iterator[SyncASGIClient]:
    with portal_client(create_app(runtime=runtime)) as rest:
        yield rest


def test_the_documented_stage_table_is_the_declared_one() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- recall-stages[^>]*-->\n(.*?)<!-- /recall-stages -->", doc, re.S)
    assert found is not None, "docs/architecture.md lost its recall-stages markers"
    assert found.group(1).strip() == pipeline.markdown_table()


def test_every_breakdown_field_is_filled_by_a_declared_stage() -> None:
    filled = {stage.adds.field for stage in pipeline.STAGES if stage.adds is not None}
    fields = set(ScoreBreakdown.model_fields)
    assert filled == fields - LEG_FIELDS - OUTSIDE_THE_PIPELINE
    assert len(set(pipeline.STAGE_NAMES)) == len(pipeline.STAGES)


def server_timing(header: str) -> list[tuple[str, float]]:
    entries = []
    for part in header.split(", "):
        name, duration = part.split(";dur=")
        entries.append((name, float(duration)))
    return entries


def test_rest_recall_says_where_its_time_went(client: SyncASGIClient) -> None:
    response = client.post(f"{API}/recall", json={"query": "when did Alice drink tea"})
    assert response.status_code == 200
    entries = server_timing(response.headers["server-timing"])
    names = [name for name, _ in entries]
    assert names[0] == "scope"
    ran = [name for name in names if name in pipeline.STAGE_NAMES]
    # In pipeline order; every default stage ran except the knob-off graph boost and the
    # newer-fact-first stage (a question whose tense says nothing).
    assert ran == [s for s in pipeline.STAGE_NAMES if s not in ("graph_boost", "versions")]
    assert {"hits", "learn"} <= set(names)
    assert all(duration >= 0 for _, duration in entries)
    assert "Alice" not in response.headers["server-timing"]  # names, never data


def test_each_stage_has_its_histogram_on_metrics(client: SyncASGIClient) -> None:
    for query in ("Alice tea", "when did Bob drink coffee"):  # the second runs `versions`
        assert client.post(f"{API}/recall", json={"query": query}).status_code == 200
    text = client.get("/metrics").text
    counts = {
        sample.labels["stage"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "kioku_recall_stage_duration_seconds_count"
    }
    for stage in (*pipeline.STAGE_NAMES, "scope", "hits", "learn"):
        if stage == "graph_boost":
            continue  # off by default
        expected = 1 if stage == "versions" else 2
        assert counts.get(stage) == expected, (stage, counts)


def test_an_ablated_stage_does_not_run_and_rerank_off_turns_off_the_reranking(
    runtime: Runtime,
) -> None:
    principal = runtime.local_principal("rest")
    request = RecallRequest(query="Alice tea", k=3)
    full = runtime.recall.recall(principal, "default", request)
    assert "thread_neighbours" in full.timings
    ablated = runtime.recall.recall(
        principal, "default", request, ablate=frozenset({"thread_neighbours"})
    )
    assert "thread_neighbours" not in ablated.timings
    assert all(hit.score_breakdown.thread is None for hit in ablated.results) or any(
        hit.score_breakdown.thread != other.score_breakdown.thread
        for hit, other in zip(ablated.results, full.results, strict=False)
    )
    plain = runtime.recall.recall(principal, "default", request, rerank=False)
    assert not set(plain.timings) & pipeline.RERANKING
    assert all(hit.score_breakdown.rerank == 1.0 for hit in plain.results)
