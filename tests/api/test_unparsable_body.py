"""A body FastAPI cannot parse at all is a 422 naming ``body`` like any bad JSON (issue 34):
JSON nested thousands of levels deep (Python's parser overflows its stack) and bytes that are
not UTF-8 each answered 400 with no field, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kioku.settings import Settings
from tests.conftest import SyncASGIClient, backend_settings

API = "/api/v1/contexts/default"
JSON = {"content-type": "application/json"}


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/memories", f'{{"summary": "x", "content": {deep(5_000)}}}', "deeper than 32"),
        ("/memories", deep(100_000), "deeper than 32"),
        ("/state/k", f'{{"value": {deep(5_000)}}}', "deeper than 32"),
        ("/recall", '{"query": "caf\xe9"}', "not UTF-8"),
    ],
)
def test_an_unparsable_body_is_422_naming_the_body(
    client: SyncASGIClient, path: str, body: str, says: str
) -> None:
    raw = body.encode("latin-1") if "\xe9" in body else body.encode()
    method = "PUT" if path.startswith("/state") else "POST"
    answer = client.request(method, API + path, content=raw, headers=JSON)
    assert answer.status_code == 422, answer.text[:300]
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", "body")
    assert says in error["message"]
    assert client.get(f"{API}/memories").json()["items"] == []
    assert client.get(f"{API}/state").json()["items"] == []
