"""What schema fuzzing found, pinned down: each was a 500 before it was fixed."""

from __future__ import annotations

import pytest

from kioku.runtime import Runtime
from tests.conftest import SyncASGIClient

API = "/api/v1/contexts/default"


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/memories?type=", "type"),
        ("/memories?tag=", "tag[0]"),
        ("/pinned?type=", "type"),
    ],
)
def test_an_empty_filter_in_the_query_is_422_naming_it(
    client: SyncASGIClient, path: str, field: str
) -> None:
    answer = client.get(API + path)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field


@pytest.mark.parametrize("when", ["0001-01-05T00:01:01Z", "9999-12-31T23:00:00-05:00"])
def test_a_timestamp_far_outside_any_calendar_use_is_422_and_stores_nothing(
    client: SyncASGIClient, runtime: Runtime, when: str
) -> None:
    created = client.post(f"{API}/memories", json={"summary": "window"}).json()
    answer = client.patch(
        f"{API}/memories/{created['id']}",
        json={"delivery_mode": "on_trigger", "trigger_from": when},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "trigger_from"
    # The memory is unchanged and still readable (a year-1 value used to be stored unreadable).
    again = client.get(f"{API}/memories/{created['id']}")
    assert again.status_code == 200 and again.json()["delivery_mode"] == "on_recall"


def test_every_api_route_documents_its_error_answers(client: SyncASGIClient) -> None:
    spec = client.get("/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            declared = set(operation["responses"])
            assert {"401", "403", "404", "422"} <= declared, (method, path, declared)
            error = operation["responses"]["404"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
