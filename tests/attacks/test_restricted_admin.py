"""An admin key allowed only context ``ops`` tries to act workspace-wide: read the audit log
of ``default``, list and revoke the unrestricted keys, create contexts, mint a wider key,
purge outside ``ops``. Every attempt must stay inside ``ops`` (docs/security.md, "What an
allow-listed key may do")."""

from __future__ import annotations

from typing import Any

import httpx

from tests.attacks.conftest import Target

UNRESTRICTED = ("owner", "admin", "member", "viewer", "connector")


def call(target: Target, who: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, f"{target.base}/api/v1{path}", headers=target.headers(who), timeout=30, **kwargs
    )


def ids_of(target: Target) -> dict[str, str]:
    """The ids the owner sees: every context and every key, by name."""
    contexts = call(target, "owner", "GET", "/contexts").json()["items"]
    keys = call(target, "owner", "GET", "/keys").json()["items"]
    return {c["name"]: c["id"] for c in contexts} | {k["name"]: k["id"] for k in keys}


def test_the_audit_log_of_default_stays_unread(secured: Target) -> None:
    wrote = call(secured, "owner", "POST", "/contexts/default/memories", json={"summary": "x"})
    assert wrote.status_code == 201
    ids = ids_of(secured)
    everything = call(secured, "admin", "GET", "/audit", params={"limit": 500}).text
    assert ids["default"] in everything  # the line exists: an unrestricted admin reads it
    answer = call(secured, "ops-admin", "GET", "/audit", params={"limit": 500})
    assert answer.status_code == 200
    lines = answer.json()["items"]
    assert {line["context_id"] for line in lines} <= {ids["ops"], None}
    assert ids["default"] not in answer.text
    for role in UNRESTRICTED:  # no line about an unrestricted key (made, revoked, refused)
        assert not [line for line in lines if line["target"] == ids[f"attack-{role}"]]


def test_the_unrestricted_keys_are_neither_listed_nor_revocable(secured: Target) -> None:
    ids = ids_of(secured)
    listed = call(secured, "ops-admin", "GET", "/keys")
    assert listed.status_code == 200
    assert {k["name"] for k in listed.json()["items"]} <= {"ops-admin", "ops-made"}
    for role in UNRESTRICTED:
        key_id = ids[f"attack-{role}"]
        assert key_id not in listed.text
        revoked = call(secured, "ops-admin", "DELETE", f"/keys/{key_id}")
        assert revoked.status_code == 404, (role, revoked.text)
        assert revoked.json()["error"]["code"] == "not_found"
    for role in ("owner", "member"):  # ...and they still work
        assert call(secured, role, "GET", "/contexts").status_code == 200


def test_it_mints_keys_only_inside_ops(secured: Target) -> None:
    ids = ids_of(secured)
    made = call(secured, "ops-admin", "POST", "/keys", json={"name": "ops-made", "role": "member"})
    assert made.status_code == 201 and made.json()["context_ids"] == [ids["ops"]]
    for body in (
        {"name": "wide", "role": "member", "context_ids": ["default"]},
        {"name": "wide", "role": "member", "context_ids": ["ops", ids["default"]]},
    ):
        assert call(secured, "ops-admin", "POST", "/keys", json=body).status_code == 404
    owner = call(secured, "ops-admin", "POST", "/keys", json={"name": "up", "role": "owner"})
    assert owner.status_code == 403


def test_workspace_wide_administration_is_refused_or_confined(secured: Target) -> None:
    created = call(secured, "ops-admin", "POST", "/contexts", json={"name": "rogue"})
    assert created.status_code == 403 and created.json()["error"]["code"] == "forbidden"
    taken = call(secured, "ops-admin", "POST", "/contexts", json={"name": "default"})
    assert taken.status_code == 403  # the same answer for a name in use: no oracle
    assert "rogue" not in ids_of(secured)
    for method, path in (
        ("PATCH", "/contexts/default"),
        ("POST", "/contexts/default/purge"),
        ("DELETE", "/contexts/default"),
        ("GET", "/contexts/default/stats"),
    ):
        body = {"description": "pwned"} if method == "PATCH" else None
        answer = call(secured, "ops-admin", method, path, json=body)
        assert answer.status_code == 404, (method, path, answer.text)
    source = "attack://page"
    for context in ("default", "ops"):
        wrote = call(
            secured, "owner", "POST", f"/contexts/{context}/memories",
            json={"summary": f"{context} page", "source_uri": source},
        )  # fmt: skip
        assert wrote.status_code == 201
    purged = call(secured, "ops-admin", "POST", "/purge", json={"source_uri_prefix": source})
    assert purged.status_code == 200 and purged.json()["memories"] == 1
    left = call(secured, "owner", "GET", "/contexts/default/memories").json()["items"]
    assert "default page" in {m["summary"] for m in left}
    outside = call(
        secured, "ops-admin", "POST", "/purge",
        json={"source_uri_prefix": source, "context_id": "default"},
    )  # fmt: skip
    assert outside.status_code == 404


def test_a_rename_does_not_reveal_which_names_other_contexts_use(secured: Target) -> None:
    for name in ("default", "no-such-context"):
        answer = call(secured, "ops-admin", "PATCH", "/contexts/ops", json={"name": name})
        assert answer.status_code == 403, answer.text
    kept = call(secured, "ops-admin", "PATCH", "/contexts/ops", json={"description": "runbooks"})
    assert kept.status_code == 200 and kept.json()["name"] == "ops"
