"""``purge_context`` and ``purge_source`` through REST and the CLI: they say what they removed,
and afterwards nothing of it can be found, listed or recalled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.models import FeedbackCreate, IngestRequest, RecallRequest, StateSet
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from tests.conftest import SyncASGIClient

API = "/api/v1"


def seed(runtime: Runtime, principal: Principal) -> dict[str, str]:
    """Three memories from two sources in ``default``, with feedback, a state key, edges."""
    ops = [
        {"op": "upsert", "external_id": f"m{i}", "summary": summary, "source_uri": uri}
        for i, (summary, uri) in enumerate(
            [
                ("Alice said the launch moves to May", "slack://C1/1"),
                ("Alice's phone number is 555-0100", "slack://C1/2"),
                ("The wiki says launches need sign-off", "wiki://launch"),
            ]
        )
    ]
    result = runtime.connectors.ingest(principal, "default", IngestRequest(ops=ops, wait=True))
    ids = {r.external_id: r.memory_id or "" for r in result.results}
    runtime.feedback.feedback(
        principal, "default", FeedbackCreate(memory_id=ids["m1"], helpful=True, query="phone")
    )
    runtime.state.set_state(principal, "default", "cursor", StateSet(value=3))
    runtime.recall.recall(principal, "default", RecallRequest(query="Alice launch phone"))
    return ids


def test_purge_source_over_rest_reports_and_erases(
    runtime: Runtime, principal: Principal, client: SyncASGIClient
) -> None:
    ids = seed(runtime, principal)
    answer = client.post(f"{API}/purge", json={"source_uri_prefix": "slack://C1/"})
    assert answer.status_code == 200, answer.text
    counts = answer.json()
    assert (counts["memories"], counts["vectors"], counts["feedback"]) == (2, 2, 1)
    assert counts["state_keys"] == 0  # the context's state is not the source's
    for memory_id in (ids["m0"], ids["m1"]):
        gone = client.get(f"{API}/contexts/default/memories/{memory_id}?include_deleted=true")
        assert gone.status_code == 404
    found = client.post(f"{API}/contexts/default/recall", json={"query": "Alice phone number"})
    assert all("Alice" not in hit["summary"] for hit in found.json()["results"])
    assert runtime.state.get_state(principal, "default", "cursor").value == 3
    empty = client.post(f"{API}/purge", json={"source_uri_prefix": ""})
    assert empty.status_code == 422 and empty.json()["error"]["field"] == "source_uri_prefix"
    missing = client.post(
        f"{API}/purge", json={"source_uri_prefix": "x", "context_id": "no-such-context"}
    )
    assert missing.status_code == 404


def test_purge_context_over_rest_empties_it_and_keeps_it(
    runtime: Runtime, principal: Principal, client: SyncASGIClient
) -> None:
    seed(runtime, principal)
    answer = client.post(f"{API}/contexts/default/purge")
    assert answer.status_code == 200, answer.text
    counts = answer.json()
    assert (counts["memories"], counts["state_keys"], counts["feedback"]) == (3, 1, 1)
    assert client.get(f"{API}/contexts/default").json()["memory_count"] == 0
    assert client.get(f"{API}/contexts/default/state").json()["items"] == []
    assert client.post(f"{API}/contexts/default/purge").json()["memories"] == 0


def test_kioku_purge_says_what_it_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    runner = CliRunner()
    for text in ("one", "two"):
        assert runner.invoke(app, ["remember", text]).exit_code == 0
    refused = runner.invoke(app, ["purge", "--yes"])
    assert refused.exit_code == 1 and "--context" in refused.output
    result = runner.invoke(app, ["purge", "--context", "default", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["memories"] == 2
    listed = runner.invoke(app, ["list", "--json"])
    assert json.loads(listed.output)["items"] == []
