"""``/metrics``: what a Prometheus scrape sees after real requests, and who may scrape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import open_runtime
from tests.conftest import SyncASGIClient, make_settings, portal_client

API = "/api/v1/contexts/default"


def scrape(client: SyncASGIClient, **kwargs: object) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape by (name, labels)."""
    response = client.get("/metrics", **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[SyncASGIClient]:
    runtime = open_runtime(
        make_settings(tmp_path, embed_async=True, sleep_interval_seconds=0),
        embedder=FakeEmbedder(),
    )
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            yield client
    finally:
        runtime.close()


def test_requests_legs_queue_embeddings_and_sleep_are_measured(served: SyncASGIClient) -> None:
    before = scrape(served)
    assert ("kioku_embedding_queue_depth", frozenset()) in before
    made = served.post(f"{API}/memories", params={"wait": True}, json={"summary": "Alice: tea"})
    assert made.status_code == 201
    assert served.post(f"{API}/recall", json={"query": "what does Alice drink"}).status_code == 200
    assert served.get(f"{API}/memories/00000000-0000-0000-0000-000000000000").status_code == 404
    assert served.post(f"{API}/sleep", json={}).status_code in (200, 201)
    after = scrape(served)
    requests = "kioku_http_requests_total"
    assert value(after, requests, operation="recall", method="POST", status="200") == 1
    assert value(after, requests, operation="get_memory", method="GET", status="404") == 1
    assert value(after, requests, operation="remember", method="POST", status="201") == 1
    for leg in ("lexical", "vector"):
        assert value(after, "kioku_recall_leg_duration_seconds_count", leg=leg) == 1
    assert value(after, "kioku_http_request_duration_seconds_count", operation="recall") == 1
    assert value(after, "kioku_embeddings_total") >= 1
    assert value(after, "kioku_sleep_runs_total", trigger="manual", status="done") == 1
    assert ("kioku_embedding_queue_oldest_age_seconds", frozenset()) in after


def test_counters_and_histograms_have_no_created_twin(served: SyncASGIClient) -> None:
    # prometheus_client adds a ``*_created`` gauge to every counter and histogram unless
    # told not to: one more series each, which Prometheus's text format does not use.
    assert served.post(f"{API}/recall", json={"query": "anything"}).status_code == 200
    text = served.get("/metrics").text
    assert "kioku_http_requests_total{" in text
    assert "kioku_http_request_duration_seconds_count{" in text
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
    assert "kioku_http_requests_total" in names
    assert not [name for name in names if name.endswith("_created")]
    assert "_created gauge" not in text  # no ``# TYPE ..._created gauge`` either


def test_the_queue_depth_and_age_are_read_from_the_database(tmp_path: Path) -> None:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            batch = [{"summary": f"fact {i}"} for i in range(5)]
            assert client.post(f"{API}/memories/batch", json={"items": batch}).status_code == 200
            assert value(scrape(client), "kioku_embedding_queue_depth") == 0  # embedded inline
            principal = runtime.local_principal("cli")
            context = runtime.contexts.resolve(principal, "default")
            runtime.store.reset_embeddings(principal.workspace_id, context.id)  # all pending
            samples = scrape(client)
            assert value(samples, "kioku_embedding_queue_depth") == 5
            assert 0 < value(samples, "kioku_embedding_queue_oldest_age_seconds") < 600
    finally:
        runtime.close()


def test_rate_limit_refusals_are_counted_and_scrapes_are_never_refused(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, rate_limit_per_minute=60, rate_limit_burst=2)
    runtime = open_runtime(settings, embedder=FakeEmbedder())
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            statuses = [client.get("/api/v1/contexts").status_code for _ in range(4)]
            assert statuses.count(429) == 2
            samples = scrape(client)
            assert value(samples, "kioku_rate_limited_requests_total") == 2
            assert value(samples, "kioku_http_requests_total", operation="unmatched",
                         method="GET", status="429") == 2  # fmt: skip
    finally:
        runtime.close()


@pytest.mark.parametrize(
    ("settings", "headers", "allowed"),
    [
        ({}, {}, False),  # outside --dev: not public
        ({"metrics_token": "s3cret-scrape"}, {}, False),
        ({"metrics_token": "s3cret-scrape"}, {"Authorization": "Bearer wrong"}, False),
        ({"metrics_token": "s3cret-scrape"}, {"Authorization": "Bearer s3cret-scrape"}, True),
        ({"metrics_allow": "10.0.0.0/8"}, {}, False),  # the test client is 127.0.0.1
        ({"metrics_allow": "10.0.0.0/8, 127.0.0.0/8"}, {}, True),
    ],
)
def test_outside_dev_only_the_token_or_an_allowed_network_may_scrape(
    tmp_path: Path, settings: dict[str, str], headers: dict[str, str], allowed: bool
) -> None:
    runtime = open_runtime(
        make_settings(tmp_path, dev=False, rate_limit_per_minute=0, **settings),
        embedder=FakeEmbedder(),
    )
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            response = client.get("/metrics", headers=headers)
            assert (response.status_code == 200) is allowed, response.text
            if not allowed:
                assert response.status_code == 403
                assert "KIOKU_METRICS_TOKEN" in response.json()["error"]["message"]
    finally:
        runtime.close()


def test_a_real_server_serves_metrics(tmp_path: Path) -> None:
    from tests.e2e.conftest import running_server

    with running_server(tmp_path, "--dev", env={"KIOKU_EMBEDDER": "none"}) as base:
        httpx.post(f"{base}{API}/recall", json={"query": "anything"})
        text = httpx.get(f"{base}/metrics").text
    assert 'kioku_http_requests_total{method="POST",operation="recall",status="200"} 1.0' in text
    assert "kioku_embedding_queue_depth 0.0" in text
