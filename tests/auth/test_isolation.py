"""Workspace B against workspace A on every surface, generated from the operation table:
nothing of A is read, changed or even confirmed to exist."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import pytest
from mcp import Client as MCPClient

from kioku import Client, NotFoundError
from kioku.api import create_app
from kioku.mcp import build_mcp
from tests.auth.conftest import Tenants
from tests.auth.operations import MEMORY_OPS, OPERATIONS, Ids
from tests.test_parity import service_operations

API = "/api/v1"


def test_the_table_covers_every_operation() -> None:
    assert set(OPERATIONS) == service_operations()


def rest(t: Tenants, who: str, ids: Ids, name: str) -> Any:
    method, path, body = OPERATIONS[name].rest(ids)
    return t.client.request(method, API + path, json=body, headers=t.as_(who))


def a_is_untouched(t: Tenants) -> None:
    a = t.a_owner
    assert (
        t.runtime.memories.get_memory(a, t.ids["ctx"], t.ids["memory"]).summary
        == "Alpha secret plan"
    )
    assert t.runtime.state.get_state(a, t.ids["ctx"], "plan").value == {"alpha": "secret"}
    assert t.runtime.contexts.get_context(a, t.ids["ctx"]).description == ""
    assert t.runtime.stats.stats(a, t.ids["ctx"]).memories == 2
    assert [k.revoked_at for k in t.runtime.keys.list_keys(a).items] == [None] * 5


def a_leaks(t: Tenants, text: str) -> list[str]:
    secrets = [
        t.ids["ctx"],
        t.ids["memory"],
        t.ids["key:member"],
        t.ids["run"],
        "Alpha secret",
        'alpha": "secret',
    ]
    return [s for s in secrets if s in text]


def without_ids(text: str, ids: list[str]) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return text


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_rest_as_b_on_a_answers_like_nothing_exists(tenants: Tenants, name: str) -> None:
    t, op = tenants, OPERATIONS[name]
    answer = rest(t, "B:owner", t.ids, name)
    if op.workspace_level:
        assert answer.status_code in (200, 201), answer.text
        assert a_leaks(t, answer.text) == []
    else:
        assert answer.status_code == 404, answer.text
        # The refusal is word for word the one for an id that never existed.
        fake = {k: str(uuid.uuid4()) for k in t.ids}
        unknown = rest(t, "B:owner", fake, name)
        assert unknown.status_code == 404
        real_ids, fake_ids = list(t.ids.values()), list(fake.values())
        assert without_ids(answer.text, real_ids) == without_ids(unknown.text, fake_ids)
    if name in MEMORY_OPS:  # A's memory through B's own context, and A's purged id
        for memory in (t.ids["memory"], t.ids["purged"]):
            mixed = {**t.ids, "ctx": t.ids["b_ctx"], "memory": memory}
            assert rest(t, "B:owner", mixed, name).status_code == 404
    a_is_untouched(t)


def test_rest_recall_mixing_two_workspaces_in_context_ids_is_404(tenants: Tenants) -> None:
    t = tenants
    body = {"query": "alpha secret plan", "filters": {"context_ids": [t.ids["ctx"]]}}
    answer = t.client.post(
        f"{API}/contexts/{t.ids['b_ctx']}/recall", json=body, headers=t.as_("B:owner")
    )
    assert answer.status_code == 404 and answer.json()["error"]["field"] == "context_id"
    listed = t.client.get(
        f"{API}/contexts/{t.ids['b_ctx']}/feedback",
        params={"memory_id": t.ids["memory"]},
        headers=t.as_("B:owner"),
    )
    assert listed.status_code == 200 and listed.json()["items"] == []


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_sdk_as_b_on_a_raises_not_found(tenants: Tenants, name: str) -> None:
    t, op = tenants, OPERATIONS[name]
    with Client(app=create_app(runtime=t.runtime), api_key=t.keys["B:owner"]) as sdk:
        if op.workspace_level:
            result = op.sdk(sdk, t.ids)
            assert a_leaks(t, result.model_dump_json()) == []
        else:
            with pytest.raises(NotFoundError):
                op.sdk(sdk, t.ids)
    a_is_untouched(t)


MCP_OPS = sorted(name for name, op in OPERATIONS.items() if op.mcp is not None)


@pytest.mark.parametrize("name", MCP_OPS)
def test_mcp_as_b_on_a_is_a_not_found_tool_error(tenants: Tenants, name: str) -> None:
    t, op = tenants, OPERATIONS[name]
    assert op.mcp is not None
    b = t.runtime.keys.authenticate(t.keys["B:owner"], "mcp")
    tool, arguments = op.mcp(t.ids)

    async def call() -> Any:
        async with MCPClient(build_mcp(t.runtime, principal_of=lambda ctx: b)) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    text = result.content[0].text
    if op.workspace_level:
        assert not result.is_error, text
        assert a_leaks(t, text) == []
    else:
        assert result.is_error and "not_found" in text, text
    a_is_untouched(t)


def test_b_sees_only_its_own_audit_and_keys(tenants: Tenants) -> None:
    t = tenants
    for name in ("get_memory", "forget", "set_state"):
        rest(t, "B:owner", t.ids, name)
    audit = t.client.get(f"{API}/audit", headers=t.as_("A:owner")).json()["items"]
    assert all(line["actor"].startswith(("local:", "key:")) for line in audit)
    b_audit = json.dumps(t.client.get(f"{API}/audit", headers=t.as_("B:owner")).json())
    assert a_leaks(t, b_audit) == []
