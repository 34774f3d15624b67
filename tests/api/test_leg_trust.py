"""``search_config.leg_trust`` through REST: stored, shown, and a bad value is a 422 naming it.
What it does to the ranking is tests/integration/test_leg_trust_recall.py (real model)."""

from __future__ import annotations

from tests.conftest import SyncASGIClient

API = "/api/v1"


def test_leg_trust_is_a_search_setting(client: SyncASGIClient) -> None:
    made = client.post(
        f"{API}/contexts", json={"name": "t", "search_config": {"leg_trust": "fixed"}}
    )
    assert made.status_code == 201 and made.json()["search_config"] == {"leg_trust": "fixed"}
    bad = client.post(f"{API}/contexts", json={"name": "u", "search_config": {"leg_trust": "x"}})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "search_config.leg_trust"
