"""The optional model reranker (SPEC §5.3) through REST, against a real reranking server on a
loopback port.

The server is a stand-in for TEI or a Cohere-shaped API: it computes a real, deterministic
relevance (the share of a text's character bigrams that also occur in the query: a short,
on-topic memory beats a long one that merely mentions the words), answers in the configured
wire format, and can be told to fail in the ways real services fail. Recall must follow it
when it answers, keep the fused order when it does not, say which happened, and never show
or log the API key.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import time
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.rerankers import blend_head
from kioku.runtime import Runtime, open_runtime
from kioku.service.model_rerank import ModelRerankConfig, ModelReranking
from kioku.settings.sections import RerankerSettings
from tests.api.test_metrics import scrape, value
from tests.conftest import SyncASGIClient, make_settings, portal_client
from tests.local_http import JSONHandler, serving
from tests.postgres import empty_postgres_database

API = "/api/v1"
KEY = "sk-rerank-secret-4f9a2c"

ENGLISH = [
    "The staging database listens on port 5433; the production database listens on port "
    "5432, and both sit behind the internal load balancer in the eu-west region",
    "Staging DB port: 5433",
    "Database backups of staging run nightly at two",
    "Alice drinks green tea every morning",
    "The staging web server was rebooted on Friday after the port scan",
    "Runbook: when the staging database port changes, update the staging database port in "
    "every service config, restart the staging database proxy, and tell the on-call team",
]
JAPANESE = [
    "ステージングのデータベースは5433番ポートで待ち受け、本番のデータベースは5432番ポートで"
    "待ち受けている。どちらも社内ロードバランサーの後ろにある",
    "ステージングDBのポートは5433",
    "ステージングのデータベースのバックアップは毎晩二時に走る",
    "田中さんは猫アレルギーです",
]


def bigrams(text: str) -> set[str]:
    folded = "".join(unicodedata.normalize("NFKC", text).lower().split())
    return {folded[i : i + 2] for i in range(len(folded) - 1)}


def relevance(query: str, text: str) -> float:
    """The share of the text's character bigrams that the query has too."""
    mine = bigrams(text)
    return len(mine & bigrams(query)) / len(mine) if mine else 0.0


class Reranking(JSONHandler):
    """``POST /rerank`` in TEI's or Cohere's shape, or one of the failures in ``mode``."""

    mode: ClassVar[str] = "tei"
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.json_body()
        self.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        texts = body.get("texts") or body.get("documents") or []
        scores = [relevance(body["query"], text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        tei = [{"index": i, "score": scores[i]} for i in order]
        cohere = {"results": [{"index": i, "relevance_score": scores[i]} for i in order]}
        replies: dict[str, tuple[int, str]] = {
            "tei": (200, json.dumps(tei)),
            "cohere": (200, json.dumps(cohere)),
            "http-500": (500, json.dumps({"error": f"model crashed, key was {KEY}"})),
            "http-401": (401, json.dumps({"error": "bad key"})),
            "not-json": (200, "<html>gateway</html>"),
            "wrong-shape": (200, json.dumps(cohere)),  # Cohere's shape where TEI's is due
            "index-out-of-range": (200, json.dumps([{"index": 99, "score": 1.0}])),
            "repeated-index": (200, json.dumps([{"index": 0, "score": 1.0}] * 2)),
            "nan-score": (200, json.dumps([{"index": 0, "score": math.nan}])),
            "text-score": (200, json.dumps([{"index": 0, "score": "high"}])),
            "empty": (200, "[]"),
        }
        if self.mode == "slow":
            time.sleep(1.5)
            status, data = replies["tei"]
        else:
            status, data = replies[self.mode]
        self.answer(data, status)


@pytest.fixture
def rerank_url() -> Iterator[str]:
    Reranking.mode, Reranking.requests = "tei", []
    with serving(Reranking, path="/rerank") as url:
        yield url


@contextmanager
def client_for(tmp_path: Path, url: str, **settings: object) -> Iterator[SyncASGIClient]:
    config = make_settings(
        tmp_path,
        reranker_url=url,
        reranker_api_key=KEY,
        reranker_timeout_seconds=0.5,
        **({"reranker_cooldown_seconds": 0} | settings),
    )
    runtime = open_runtime(config, embedder=FakeEmbedder())
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            yield client
    finally:
        runtime.close()


def remember_all(client: SyncASGIClient, texts: list[str]) -> None:
    for text in texts:
        response = client.post(f"{API}/contexts/default/memories", json={"summary": text})
        assert response.status_code == 201, response.text


def recall(client: SyncASGIClient, query: str) -> dict[str, Any]:
    response = client.post(f"{API}/contexts/default/recall", json={"query": query, "k": 10})
    assert response.status_code == 200, response.text
    return response.json()


def summaries(body: dict[str, Any]) -> list[str]:
    return [hit["summary"] for hit in body["results"]]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, object]:
    """Settings for one backend: the step reads candidates' text through the store."""
    if request.param == "sqlite":
        return {}
    url = request.getfixturevalue("postgres_database")
    empty_postgres_database(url)
    return {"database_url": url}


@pytest.mark.parametrize(
    ("wire", "texts", "query"),
    [
        ("tei", ENGLISH, "staging database port"),
        ("cohere", JAPANESE, "ステージングのデータベースのポート"),
    ],
)
def test_recall_follows_the_reranker_and_falls_back_to_the_fused_order(
    tmp_path: Path,
    rerank_url: str,
    backend: dict[str, object],
    wire: str,
    texts: list[str],
    query: str,
) -> None:
    Reranking.mode = wire
    setup = {"reranker_format": wire, "reranker_model": "rr-1", "reranker_weight": 1.0, **backend}
    with client_for(tmp_path, rerank_url, **setup) as client:
        remember_all(client, texts)
        Reranking.mode = "http-500"
        fused = recall(client, query)
        assert fused["reranker"]["status"] == "failed"
        Reranking.mode = wire
        reranked = recall(client, query)

    found = summaries(fused)
    by_relevance = sorted(found, key=lambda text: -relevance(query, text))
    assert summaries(reranked) == by_relevance != found  # it did reorder: the fused order differs
    assert reranked["reranker"] == {
        "reranker": f"{wire}:rr-1",
        "status": "applied",
        "candidates": len(found),
        "reason": None,
    }
    for hit in reranked["results"]:
        assert hit["score_breakdown"]["model_rerank"] == pytest.approx(
            relevance(query, hit["summary"])
        )
    scores = [hit["score"] for hit in reranked["results"]]
    assert scores == sorted(scores, reverse=True)  # scores still fall down the list
    sent = Reranking.requests[-1]
    assert sent["path"] == "/rerank" and sent["headers"]["authorization"] == f"Bearer {KEY}"
    if wire == "cohere":
        assert sent["body"] == {"query": query, "documents": found, "model": "rr-1"}
    else:
        assert sent["body"] == {"query": query, "texts": found, "truncate": True}


def test_the_default_weight_blends_the_two_orders(tmp_path: Path, rerank_url: str) -> None:
    query = "staging database port"
    with client_for(tmp_path, rerank_url) as client:
        remember_all(client, ENGLISH)
        Reranking.mode = "empty"
        fused = summaries(recall(client, query))
        Reranking.mode = "tei"
        blended = summaries(recall(client, query))
    default = RerankerSettings.model_fields["weight"].default
    order = blend_head([relevance(query, text) for text in fused], default)
    assert blended == [fused[i] for i in order] != fused


@pytest.mark.parametrize(
    ("mode", "status", "reason"),
    [
        ("http-500", "failed", "HTTP 500"),
        ("http-401", "failed", "HTTP 401 (check KIOKU_RERANKER_API_KEY)"),
        ("not-json", "failed", "malformed reply: not JSON"),
        ("wrong-shape", "failed", "malformed reply: expected a non-empty tei result list"),
        ("index-out-of-range", "failed", "an index is missing, repeated or out of range"),
        ("repeated-index", "failed", "an index is missing, repeated or out of range"),
        ("nan-score", "failed", "malformed reply: score is not finite"),
        ("text-score", "failed", "malformed reply: score is not a number"),
        ("empty", "failed", "malformed reply: expected a non-empty tei result list"),
        ("slow", "timeout", None),
    ],
)
def test_a_failing_reranker_leaves_the_fused_order_and_says_why(
    tmp_path: Path,
    rerank_url: str,
    caplog: pytest.LogCaptureFixture,
    mode: str,
    status: str,
    reason: str | None,
) -> None:
    query = "staging database port"
    caplog.set_level(logging.DEBUG)
    with client_for(tmp_path, rerank_url, reranker_weight=1.0) as client:
        remember_all(client, ENGLISH)
        Reranking.mode = "empty"
        fused = recall(client, query)
        Reranking.mode = mode
        began = time.perf_counter()
        body = recall(client, query)
        took = time.perf_counter() - began
    assert summaries(body) == summaries(fused)
    assert [hit["score"] for hit in body["results"]] == [hit["score"] for hit in fused["results"]]
    assert all(hit["score_breakdown"]["model_rerank"] is None for hit in body["results"])
    assert body["reranker"]["status"] == status
    assert reason is None or reason in body["reranker"]["reason"]
    if mode == "slow":  # the deadline holds: 0.5 s, not the server's 1.5 s
        assert took < 1.2
    assert f"reranker tei {status}" in caplog.text
    assert KEY not in json.dumps(body) and KEY not in caplog.text


def test_an_unreachable_reranker_leaves_the_fused_order(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with client_for(tmp_path, f"http://127.0.0.1:{port}/rerank") as client:
        remember_all(client, ENGLISH)
        body = recall(client, "staging database port")
    assert body["reranker"]["status"] == "failed"
    assert body["reranker"]["reason"] == "unreachable (ConnectError)"
    assert body["results"] and body["confidence"] != "none"


def test_without_a_reranker_recall_says_nothing_of_one(client: SyncASGIClient) -> None:
    remember_all(client, ENGLISH)
    body = recall(client, "staging database port")
    assert body["reranker"] is None
    assert all(hit["score_breakdown"]["model_rerank"] is None for hit in body["results"])


def test_after_a_timeout_recall_skips_the_reranker_for_the_cooldown(
    tmp_path: Path, rerank_url: str
) -> None:
    query = "staging database port"
    with client_for(tmp_path, rerank_url, reranker_cooldown_seconds=60) as client:
        remember_all(client, ENGLISH)
        Reranking.mode = "slow"
        timed_out = recall(client, query)
        Reranking.mode = "tei"
        asked = len(Reranking.requests)
        began = time.perf_counter()
        skipped = recall(client, query)
        took = time.perf_counter() - began
    assert timed_out["reranker"]["status"] == "timeout"
    assert skipped["reranker"] == {
        "reranker": "tei",
        "status": "skipped",
        "candidates": 0,
        "reason": "cooling down after: no answer within the timeout",
    }
    assert len(Reranking.requests) == asked and took < 0.5  # not asked, not waited for
    assert summaries(skipped) == summaries(timed_out)


class Broken:
    """A ``Reranker`` with a bug of its own (the protocol's fake: kioku must survive it)."""

    name = "broken"

    def score(self, query: str, texts: Sequence[str]) -> list[float | None]:
        return [1 / 0]


def test_a_reranker_that_raises_leaves_the_fused_order(
    runtime: Runtime, client: SyncASGIClient
) -> None:
    remember_all(client, ENGLISH)
    fused = recall(client, "staging database port")
    runtime.recall.model_rerank = ModelReranking(Broken(), ModelRerankConfig())
    try:
        body = recall(client, "staging database port")
    finally:
        runtime.recall.model_rerank.close()
    assert body["reranker"]["status"] == "failed"
    assert body["reranker"]["reason"] == "error (ZeroDivisionError)"
    assert summaries(body) == summaries(fused)


def test_the_reranker_call_is_a_leg_of_the_recall_metrics(tmp_path: Path, rerank_url: str) -> None:
    with client_for(tmp_path, rerank_url) as client:
        remember_all(client, ENGLISH)
        recall(client, "staging database port")
        Reranking.mode = "http-500"
        recall(client, "staging database port")
        samples = scrape(client)
    assert value(samples, "kioku_recall_leg_duration_seconds_count", leg="reranker") == 2
