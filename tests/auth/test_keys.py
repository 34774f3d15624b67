"""API keys the way an attacker would probe them: missing, guessed, revoked, expired, too
narrow, too weak; secrets only ever shown once and never stored or logged in clear."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import KeyCreate
from kioku.runtime import open_runtime
from tests.auth.conftest import Tenants
from tests.conftest import ManualClock, make_settings, portal_client

API = "/api/v1"


def test_no_key_or_a_wrong_one_is_401_and_audited(tenants: Tenants) -> None:
    t = tenants
    bare = t.client.get(f"{API}/contexts")
    assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
    assert bare.json()["error"]["code"] == "unauthorized"
    guessed = t.keys["A:owner"][:-1] + ("A" if t.keys["A:owner"][-1] != "A" else "B")
    for token in (guessed, "kk_" + "0" * 43, "not-even-a-key", ""):
        answer = t.client.get(f"{API}/contexts", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 401, token
    denied = t.runtime.store.list_audit(None, None, 10)
    assert {d.detail["reason"] for d in denied} == {"unknown key"}
    assert all(guessed not in str(d) for d in denied)


def test_the_secret_is_shown_once_and_stored_only_as_a_hash(
    tmp_path: Path, tenants: Tenants
) -> None:
    t = tenants
    made = t.client.post(
        f"{API}/keys", json={"name": "ci", "role": "viewer"}, headers=t.as_("A:admin")
    )
    assert made.status_code == 201
    secret = made.json()["key"]
    assert secret.startswith("kk_") and len(secret) > 40
    listed = t.client.get(f"{API}/keys", headers=t.as_("A:admin")).text
    assert secret not in listed and made.json()["prefix"] in listed
    database = Path(t.runtime.settings.database.url.removeprefix("sqlite:///"))
    t.runtime.store.close()  # flush the WAL into the file before reading its bytes
    raw = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*") if p.is_file())
    assert secret.encode() not in raw and secret[10:].encode() not in raw


def test_revoked_and_expired_keys_stop_working_at_once(
    tenants: Tenants, clock: ManualClock
) -> None:
    t = tenants
    headers = t.as_("A:member")
    assert t.client.get(f"{API}/contexts", headers=headers).status_code == 200
    assert (
        t.client.delete(f"{API}/keys/{t.ids['key:member']}", headers=t.as_("A:admin")).status_code
        == 204
    )
    assert t.client.get(f"{API}/contexts", headers=headers).status_code == 401
    short = t.runtime.keys.create_key(
        t.a_owner, KeyCreate(name="short", role="viewer", expires_at=clock.now + timedelta(hours=1))
    )
    later = {"Authorization": f"Bearer {short.key}"}
    assert t.client.get(f"{API}/contexts", headers=later).status_code == 200
    clock.advance(hours=1)
    assert t.client.get(f"{API}/contexts", headers=later).status_code == 401
    lines = t.runtime.store.list_audit(t.a_owner.workspace_id, None, 50)
    reasons = [d.detail["reason"] for d in lines if d.action == "authenticate"]
    assert reasons == ["expired key", "revoked key"]


def test_a_context_allow_list_hides_every_other_context(tenants: Tenants) -> None:
    t = tenants
    narrow = t.client.post(
        f"{API}/keys", json={"name": "alpha-only", "role": "member", "context_ids": ["alpha"]},
        headers=t.as_("A:admin"),
    ).json()  # fmt: skip
    headers = {"Authorization": f"Bearer {narrow['key']}"}
    names = [c["name"] for c in t.client.get(f"{API}/contexts", headers=headers).json()["items"]]
    assert names == ["alpha"]
    assert t.client.get(f"{API}/contexts/default/memories", headers=headers).status_code == 404
    assert t.client.get(f"{API}/contexts/alpha/memories", headers=headers).status_code == 200
    # ...and it cannot mint itself a wider key.
    wider = t.client.post(f"{API}/keys", json={"name": "x", "role": "member"}, headers=headers)
    assert wider.status_code == 403


def test_nobody_mints_a_key_above_their_own_role(tenants: Tenants) -> None:
    t = tenants
    up = t.client.post(f"{API}/keys", json={"name": "x", "role": "owner"}, headers=t.as_("A:admin"))
    assert up.status_code == 403
    owner_key = t.ids["key:owner"]
    assert t.client.delete(f"{API}/keys/{owner_key}", headers=t.as_("A:admin")).status_code == 403
    assert t.client.get(f"{API}/keys", headers=t.as_("A:member")).status_code == 403


def test_too_many_requests_get_429_with_retry_after(tmp_path: Path, clock: ManualClock) -> None:
    settings = make_settings(tmp_path, rate_limit_per_minute=60, rate_limit_burst=3)
    runtime = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            statuses = [client.get(f"{API}/contexts").status_code for _ in range(4)]
            assert statuses == [200, 200, 200, 429]
            refused = client.get(f"{API}/contexts")
            assert int(refused.headers["retry-after"]) >= 1
            assert refused.json()["error"]["code"] == "rate_limited"
            assert client.get("/health").status_code == 200  # probes are never limited
    finally:
        runtime.close()
