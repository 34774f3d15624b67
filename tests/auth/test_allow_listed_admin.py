"""An admin key with a context allow-list administers its contexts and nothing else: every
operation of the table, then the keys, the audit log and the workspace-wide operations one by
one, over REST (the real app) and MCP. Workspace A's victim objects live in context ``alpha``;
the confined admin may reach only ``default``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from mcp import Client as MCPClient

from kioku.mcp import build_mcp
from kioku.models import KeyCreate, MemoryCreate
from kioku.service.guard import allow_listed_of
from tests.auth.conftest import Tenants
from tests.auth.operations import OPERATIONS
from tests.test_parity import SERVICES

BOTH = pytest.mark.parametrize("tenants", ["sqlite", "postgres"], indirect=True)
API = "/api/v1"
UNRESTRICTED = ("owner", "admin", "member", "viewer", "connector")


@dataclass
class Confined:
    t: Tenants
    default_id: str
    headers: dict[str, str]
    """The admin allowed only ``default``."""
    own_key: str
    sub_key: str
    """A viewer key confined to ``default``: one the confined admin manages."""

    def get(self, path: str, headers: dict[str, str] | None = None) -> Any:
        answer = self.t.client.get(f"{API}{path}", headers=headers or self.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def confined(tenants: Tenants) -> Confined:
    t = tenants
    keys = t.runtime.keys
    admin = keys.create_key(
        t.a_owner, KeyCreate(name="default-admin", role="admin", context_ids=["default"])
    )
    sub = keys.create_key(
        t.a_owner, KeyCreate(name="default-viewer", role="viewer", context_ids=["default"])
    )
    default_id = t.runtime.contexts.resolve(t.a_owner, "default").id
    return Confined(t, default_id, {"Authorization": f"Bearer {admin.key}"}, admin.id, sub.id)


def test_the_table_says_what_every_operation_declares_for_an_allow_list() -> None:
    declared = {
        name: allow_listed_of(method)
        for service in SERVICES
        for name, method in inspect.getmembers(service, inspect.isfunction)
        if allow_listed_of(method) is not None
    }
    assert declared == {name: op.allow_listed for name, op in OPERATIONS.items()}
    assert declared["create_context"] == "refused"


def _alpha_untouched(t: Tenants) -> None:
    alpha = t.runtime.contexts.get_context(t.a_owner, t.ids["ctx"])
    assert alpha.description != "pwned"
    assert t.runtime.memories.get_memory(t.a_owner, alpha.id, t.ids["memory"]).summary == (
        "Alpha secret plan"
    )
    live = {k.id for k in t.runtime.keys.list_keys(t.a_owner).items if k.revoked_at is None}
    assert {t.ids[f"key:{role}"] for role in UNRESTRICTED} <= live


@BOTH
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_rest_a_confined_admin_reaches_nothing_outside_its_contexts(
    confined: Confined, name: str
) -> None:
    t, op = confined.t, OPERATIONS[name]
    method, path, body = op.rest(t.ids)
    if name == "create_context":
        body = {"name": "gamma"}  # a free name: the refusal must not depend on it
    answer = t.client.request(method, f"{API}{path}", json=body, headers=confined.headers)
    if op.allow_listed == "refused":
        assert answer.status_code == 403, answer.text
        denied = t.runtime.audit.list_audit(t.a_owner).items[0]
        assert (denied.action, denied.outcome) == (name, "denied")
        assert denied.detail["needs"] == "no context allow-list"
    elif op.allow_listed == "resolves" or answer.status_code == 404:
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "not_found"
    else:
        assert answer.status_code < 300, answer.text
        foreign = [t.ids["ctx"], "alpha", *(t.ids[f"key:{role}"] for role in UNRESTRICTED)]
        assert not [value for value in foreign if value in answer.text], answer.text
    _alpha_untouched(t)


@BOTH
def test_keys_a_confined_admin_lists_and_revokes_only_keys_within_its_contexts(
    confined: Confined,
) -> None:
    t = confined.t
    names = {k["name"] for k in confined.get("/keys")["items"]}
    assert names == {"default-admin", "default-viewer"}
    everyone = {k["name"] for k in confined.get("/keys", t.as_("A:admin"))["items"]}
    assert names | {f"a-{role}" for role in UNRESTRICTED} <= everyone
    for role in UNRESTRICTED:  # an unrestricted key is not there to revoke: 404, like a typo
        key_id = t.ids[f"key:{role}"]
        gone = t.client.delete(f"{API}/keys/{key_id}", headers=confined.headers)
        assert gone.status_code == 404, (role, gone.text)
    _alpha_untouched(t)
    revoked = t.client.delete(f"{API}/keys/{confined.sub_key}", headers=confined.headers)
    assert revoked.status_code == 204
    # A key it makes stays within its contexts, and it cannot name another one.
    made = t.client.post(
        f"{API}/keys", json={"name": "ci", "role": "member"}, headers=confined.headers
    )
    assert made.status_code == 201 and made.json()["context_ids"] == [confined.default_id]
    wider = t.client.post(
        f"{API}/keys",
        json={"name": "x", "role": "member", "context_ids": ["default", "alpha"]},
        headers=confined.headers,
    )
    assert wider.status_code == 404 and wider.json()["error"]["field"] == "context_id"


@BOTH
def test_audit_a_confined_admin_reads_only_its_contexts_and_keys(confined: Confined) -> None:
    t = confined.t
    owner = t.as_("A:owner")
    for ref in ("default", "alpha"):  # named by name: the lines still carry the context id
        wrote = t.client.post(
            f"{API}/contexts/{ref}/memories", json={"summary": f"{ref} note"}, headers=owner
        )
        assert wrote.status_code == 201
    t.client.delete(f"{API}/keys/{t.ids['key:viewer']}", headers=t.as_("A:admin"))
    t.client.post(f"{API}/contexts", json={"name": "gamma"}, headers=confined.headers)
    t.client.get(f"{API}/keys", headers=t.as_("A:viewer"))  # a refused, revoked key: 401

    lines = confined.get("/audit?limit=500")["items"]
    assert {line["context_id"] for line in lines} == {confined.default_id, None}
    seen = {(line["action"], line["context_id"] or line["target"]) for line in lines}
    assert ("remember", confined.default_id) in seen  # the owner's write in its context
    assert ("create_key", confined.sub_key) in seen  # a key it manages, made by the owner
    assert any(
        line["action"] == "create_context" and line["outcome"] == "denied" for line in lines
    )  # its own refusal
    assert t.ids["ctx"] not in str(lines)
    # A line about no context is about the keys it manages; a wider key shows up only as
    # the actor of a line about its own context (who changed it).
    managed = {confined.own_key, confined.sub_key}
    for line in lines:
        if line["context_id"] is None:
            assert line["actor"].removeprefix("key:") in managed or line["target"] in managed
    assert ("create_key", confined.own_key) in seen
    unrestricted = {t.ids[f"key:{role}"] for role in UNRESTRICTED}
    assert not [line for line in lines if line["target"] in unrestricted]
    paged, cursor = [], None  # the narrowing happens in the query: pages stay full
    while True:
        page = confined.get(f"/audit?limit=2{f'&cursor={cursor}' if cursor else ''}")
        assert len(page["items"]) == 2 or page["next_cursor"] is None
        paged += page["items"]
        if not (cursor := page["next_cursor"]):
            break
    assert paged == lines
    everything = confined.get("/audit?limit=500", t.as_("A:admin"))["items"]
    assert t.ids["ctx"] in str(everything) and len(everything) > len(lines)


@BOTH
def test_purge_source_without_a_context_erases_only_in_the_allowed_ones(
    confined: Confined,
) -> None:
    t = confined.t
    for ref in ("default", "alpha"):
        t.runtime.memories.remember(
            t.a_owner, ref, MemoryCreate(summary=f"{ref} page", source_uri="wiki://page")
        )
    purged = t.client.post(
        f"{API}/purge", json={"source_uri_prefix": "wiki://"}, headers=confined.headers
    )
    assert purged.status_code == 200 and purged.json()["memories"] == 1
    left = t.runtime.memories.list_memories(t.a_owner, "alpha").items
    assert "alpha page" in {m.summary for m in left}


@BOTH
def test_mcp_a_confined_admin_cannot_create_a_context(confined: Confined) -> None:
    t = confined.t
    token = confined.headers["Authorization"].removeprefix("Bearer ")
    principal = t.runtime.keys.authenticate(token, "mcp")

    async def call() -> tuple[Any, Any]:
        async with MCPClient(build_mcp(t.runtime, principal_of=lambda ctx: principal)) as client:
            made = await client.call_tool("create_context", {"name": "gamma"})
            listed = await client.call_tool("list_contexts", {})
            return made, listed

    made, listed = anyio.run(call)
    assert made.is_error and "forbidden" in made.content[0].text
    assert t.ids["ctx"] not in listed.content[0].text and "alpha" not in listed.content[0].text
    assert "gamma" not in {c.name for c in t.runtime.contexts.list_contexts(t.a_owner).items}


@BOTH
def test_a_confined_admin_cannot_rename_a_context_to_probe_names(confined: Confined) -> None:
    t = confined.t
    path = f"{API}/contexts/default"
    taken = t.client.patch(path, json={"name": "alpha"}, headers=t.as_("A:admin"))
    assert taken.status_code == 409  # what an unrestricted admin learns: the name is used
    for name in ("alpha", "never-used"):  # the same 403 whether the name is used or not
        answer = t.client.patch(path, json={"name": name}, headers=confined.headers)
        assert answer.status_code == 403, answer.text
    same = t.client.patch(path, json={"name": "default"}, headers=confined.headers)
    assert same.status_code == 200
    changed = t.client.patch(path, json={"description": "runbooks"}, headers=confined.headers)
    assert changed.status_code == 200 and changed.json()["description"] == "runbooks"
