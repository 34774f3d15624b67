"""forget_by_query's confirmation across tenants and roles, over REST with real keys: a
confirmation A's owner obtained forgets nothing when B's owner or A's viewer sends it."""

from __future__ import annotations

from typing import Any

from tests.auth.conftest import Tenants
from tests.auth.test_isolation import a_is_untouched

API = "/api/v1"
QUERY = {"query": "alpha secret plan"}


def forget(t: Tenants, who: str, ctx: str, body: dict[str, Any]) -> Any:
    url = f"{API}/contexts/{ctx}/memories/forget"
    return t.client.post(url, json=body, headers=t.as_(who))


def a_preview(t: Tenants) -> dict[str, Any]:
    preview = forget(t, "A:owner", t.ids["ctx"], QUERY)
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert [m["id"] for m in body["matches"]] == [t.ids["memory"]]
    return body


def test_a_confirmation_from_workspace_a_is_useless_to_b(tenants: Tenants) -> None:
    t = tenants
    token = a_preview(t)["confirmation"]
    confirm = {**QUERY, "confirmation": token}
    on_a = forget(t, "B:owner", t.ids["ctx"], confirm)
    assert on_a.status_code == 404 and t.ids["memory"] not in on_a.text
    on_b = forget(t, "B:owner", t.ids["b_ctx"], confirm)  # B's own context, A's token
    assert on_b.status_code == 422 and on_b.json()["error"]["field"] == "confirmation"
    a_is_untouched(t)


def test_a_role_without_write_cannot_use_an_owners_confirmation(tenants: Tenants) -> None:
    t = tenants
    token = a_preview(t)["confirmation"]
    for role in ("viewer", "connector"):
        refused = forget(t, f"A:{role}", t.ids["ctx"], {**QUERY, "confirmation": token})
        assert refused.status_code == 403, refused.text
    a_is_untouched(t)
    done = forget(t, "A:member", t.ids["ctx"], {**QUERY, "confirmation": token})
    assert done.status_code == 200 and done.json()["forgotten_ids"] == [t.ids["memory"]]
