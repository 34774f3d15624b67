"""The issue's case through REST with the bundled model, on SQLite and PostgreSQL: Sleep
merged "Invoice INV-1001 from Acme was paid on March 3" into the same sentence about
INV-1002 (cosine 0.99), and one of two facts was gone from recall (issue 32).

Now the two stay live and recallable, the report lists the pair as kept apart with the
reason, and a true restatement of INV-1001 (full-width, ＩＮＶ−１００１) still merges.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.api import create_app
from kioku.embeddings.base import Embedder
from kioku.eval.corpus import load_embedder
from kioku.runtime import open_runtime
from tests.conftest import SyncASGIClient, backend_settings, portal_client

pytestmark = pytest.mark.integration
API = "/api/v1"
PAID_1001 = "Invoice INV-1001 from Acme was paid on March 3"
PAID_1002 = "Invoice INV-1002 from Acme was paid on March 3"
RESTATED_1001 = "Invoice ＩＮＶ−１００１ from Acme was paid on March 3."


@pytest.fixture(scope="module")
def default_model() -> Embedder:
    return load_embedder("bundled")


@pytest.fixture(params=["sqlite", "postgres"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, default_model: Embedder
) -> Iterator[SyncASGIClient]:
    runtime = open_runtime(backend_settings(request, tmp_path), embedder=default_model)
    try:
        with portal_client(create_app(runtime=runtime)) as rest:
            yield rest
    finally:
        runtime.close()


def memory(client: SyncASGIClient, memory_id: str) -> dict:
    answer = client.get(f"{API}/contexts/billing/memories/{memory_id}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_invoices_1001_and_1002_are_kept_apart_and_the_report_says_why(
    client: SyncASGIClient,
) -> None:
    answer = client.post(f"{API}/contexts", json={"name": "billing", "sleep_mode": "full"})
    assert answer.status_code == 201, answer.text
    items = [{"summary": text} for text in (PAID_1001, PAID_1002, RESTATED_1001)]
    answer = client.post(
        f"{API}/contexts/billing/memories/batch", json={"items": items, "wait": True}
    )
    assert answer.status_code == 200, answer.text
    paid_1001, paid_1002, restated = (item["memory_id"] for item in answer.json()["results"])

    answer = client.post(f"{API}/contexts/billing/sleep", json={})
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["status"] == "done", report["error"]

    # Both facts stay: INV-1002 is live, unsuperseded, and recall finds it.
    assert memory(client, paid_1002)["superseded_by"] is None
    # The restatement of INV-1001 is one fact said twice: merged, the newer wording wins.
    assert memory(client, paid_1001)["superseded_by"] == restated
    assert report["summary"]["merge"]["merged"] == 1
    found = client.post(f"{API}/contexts/billing/recall", json={"query": "INV-1002 paid", "k": 5})
    assert found.status_code == 200, found.text
    assert paid_1002 in [r["id"] for r in found.json()["results"]]

    # The report lists what Sleep skipped, with the reason.
    kept = report["kept_apart"]
    assert kept and report["summary"]["merge"]["kept_apart"] == len(kept)
    for pair in kept:
        assert paid_1002 in pair["memory_ids"] and pair["phase"] == "merge"
        (difference,) = pair["differences"]
        assert difference["kind"] == "identifier"
        assert sorted(difference["first"] + difference["second"]) == ["INV-1001", "INV-1002"]
        assert "they differ in identifier INV-100" in pair["reason"]
        assert pair["reason"].startswith("kept apart (cosine 0.9")
    logged = [a for a in report["actions"] if a["kind"] == "rejected"]
    assert [a["note"] for a in logged] == [pair["reason"] for pair in kept]
    assert all(a["target"] == "|".join(p["memory_ids"]) for a, p in zip(logged, kept, strict=True))
    # The report read later says the same.
    again = client.get(f"{API}/sleep/{report['run_id']}")
    assert again.status_code == 200 and again.json()["kept_apart"] == kept
