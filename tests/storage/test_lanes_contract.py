"""The lanes the core contract leaves out (state, feedback, keys and audit, OAuth, stats),
run on every backend through the ``Store`` protocol, so PostgreSQL matches SQLite there too."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

from kioku.storage.base import Store
from kioku.storage.records import ApiKeyRow, AuditEvent, AuditScope, NewFeedback, OAuthGrant
from tests.storage.test_contract import T0, new_context, new_memory

HOUR = timedelta(hours=1)


def _feedback(ctx_id: str, memory_id: str, helpful: bool) -> NewFeedback:
    return NewFeedback(
        id=str(uuid.uuid4()), context_id=ctx_id, memory_id=memory_id, helpful=helpful,
        query="q", note=None, actor="agent", channel="api", created_at=T0,
    )  # fmt: skip


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_state_upsert_ttl_listing_and_sweep(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    first = store.set_state(ws, ctx.id, "b", '{"n": 1}', T0 + HOUR, T0)
    again = store.set_state(ws, ctx.id, "b", '{"n": 2}', None, T0 + timedelta(minutes=5))
    assert again.created_at == first.created_at and json.loads(again.value) == {"n": 2}
    store.set_state(ws, ctx.id, "a", "1", T0 + HOUR, T0)
    store.set_state(ws, ctx.id, "c", '"x"', None, T0)
    assert [r.key for r in store.list_state(ws, ctx.id, T0, None, 10)] == ["a", "b", "c"]
    assert [r.key for r in store.list_state(ws, ctx.id, T0, "a", 1)] == ["b"]
    later = T0 + 2 * HOUR
    assert store.get_state(ws, ctx.id, "a", later) is None  # expired is absent
    assert [r.key for r in store.list_state(ws, ctx.id, later, None, 10)] == ["b", "c"]
    assert store.delete_state(ws, ctx.id, "a", later) is False  # expired: "not found"
    reborn = store.set_state(ws, ctx.id, "a", "2", None, later)
    assert reborn.created_at == later  # an expired key starts a new life
    store.set_state(ws, ctx.id, "d", "3", T0 + HOUR, T0)
    assert store.sweep_state(ws, ctx.id, later) == 1
    assert store.delete_state(ws, ctx.id, "c", later) is True
    assert store.get_state(ws, ctx.id, "c", later) is None


def test_feedback_appends_only_for_live_memories_and_feeds_signals(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "a")
    store.insert_memories(ws, [row])
    events = [store.insert_feedback(ws, _feedback(ctx.id, row.id, h)) for h in (True, True, False)]
    assert all(e is not None for e in events)
    assert store.insert_feedback(other_ws, _feedback(ctx.id, row.id, True)) is None
    listed = store.list_feedback(ws, ctx.id, row.id, None, 2)
    assert [e.seq for e in listed] == sorted((e.seq for e in events if e), reverse=True)[:2]
    older = store.list_feedback(ws, ctx.id, None, listed[-1].seq, 10)
    assert len(older) == 1 and older[0].helpful is True
    signals = store.ranking_signals(ws, [row.id])[row.id]
    assert (signals.helpful, signals.unhelpful, signals.importance) == (2, 1, 0.5)
    counts = store.context_counts(ws, ctx.id, T0)
    assert (counts.live, counts.helpful, counts.unhelpful) == (1, 2, 1)
    assert counts.embedding == {"ready": 0, "pending": 1, "failed": 0}
    store.soft_delete_memory(ws, row.id, T0)
    assert store.insert_feedback(ws, _feedback(ctx.id, row.id, True)) is None
    assert store.purge_memory(ws, row.id)  # the cascade takes its feedback
    assert store.list_feedback(ws, ctx.id, None, None, 10) == []


def test_api_keys_and_audit_log(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    key = ApiKeyRow(
        id="k1", workspace_id=ws, name="ci", prefix="kk_ab", key_hash=_hash("secret"),
        role="member", context_ids=["c1"], created_by="owner", created_at=T0,
        expires_at=None, revoked_at=None, last_used_at=None,
    )  # fmt: skip
    store.insert_api_key(key)
    assert store.find_api_key(_hash("secret")) == key
    store.touch_api_key("k1", T0 + HOUR)
    assert store.revoke_api_key(ws, "k1", T0 + HOUR) is True
    assert store.revoke_api_key(ws, "k1", T0 + HOUR) is False
    [listed] = store.list_api_keys(ws)
    assert (listed.last_used_at, listed.revoked_at) == (T0 + HOUR, T0 + HOUR)
    for i in range(3):
        store.append_audit(AuditEvent(ws, T0, "owner", "api", "remember", "ok", detail={"i": i}))
    store.append_audit(AuditEvent(None, T0, "anon", "api", "auth", "denied"))
    newest = store.list_audit(ws, None, 2)
    assert [e.detail["i"] for e in newest] == [2, 1]
    assert [e.detail["i"] for e in store.list_audit(ws, newest[-1].seq, 10)] == [0]
    assert [e.actor for e in store.list_audit(None, None, 10)] == ["anon"]
    assert [w.name for w in store.list_workspaces()] == ["alpha"]
    assert store.get_workspace_by_name("alpha") is not None
    assert store.get_workspace_by_name("nope") is None
    assert store.get_api_key(ws, "k1") == listed
    other = store.ensure_workspace("beta").id
    assert store.get_api_key(other, "k1") is None and store.get_api_key(ws, "nope") is None


def test_an_audit_scope_keeps_its_contexts_and_keys_lines(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    lines = [  # (actor, context_id, target): what a key confined to c1 managing k1 may read
        ("key:k0", "c1", None),  # about its context, by anyone: kept
        ("key:k0", "c2", None),  # about another context: hidden
        ("key:k0", None, "k1"),  # about a key it manages: kept
        ("key:k0", None, "k0"),  # about a key it does not manage: hidden
        ("key:k1", None, "run"),  # by a key it manages: kept
        ("key:k0", None, None),  # workspace-wide, by someone else: hidden
    ]
    for i, (actor, context_id, target) in enumerate(lines):
        store.append_audit(
            AuditEvent(ws, T0, actor, "api", "x", "ok", context_id, target, detail={"i": i})
        )
    scope = AuditScope(context_ids=frozenset({"c1"}), key_ids=frozenset({"k1"}))
    newest = store.list_audit(ws, None, 2, scope)
    assert [e.detail["i"] for e in newest] == [4, 2]
    assert [e.detail["i"] for e in store.list_audit(ws, newest[-1].seq, 10, scope)] == [0]
    nothing = AuditScope(context_ids=frozenset(), key_ids=frozenset())
    assert store.list_audit(ws, None, 10, nothing) == []
    assert len(store.list_audit(ws, None, 10)) == len(lines)


def test_oauth_grants_are_taken_once_and_revoked_by_family(store: Store) -> None:
    store.insert_oauth_client("client", {"redirect_uris": ["https://x/cb"]}, T0)
    assert store.get_oauth_client("client") == {"redirect_uris": ["https://x/cb"]}
    grants = [
        OAuthGrant(
            secret_hash=_hash(name),
            kind="consent",
            client_id="client",
            workspace_id=None,
            key_id=None,
            scopes=["memory"],
            params={"state": name},
            family="fam",
            expires_at=T0 + HOUR,
            created_at=T0,
        )
        for name in ("one", "two", "three")
    ]
    store.insert_oauth_grants(grants)
    assert store.take_oauth_grant(_hash("one"), "code", T0) is None  # wrong kind
    taken = store.take_oauth_grant(_hash("one"), "consent", T0)
    assert taken is not None and taken.revoked_at is None and taken.params == {"state": "one"}
    second = store.take_oauth_grant(_hash("one"), "consent", T0 + HOUR)
    assert second is not None and second.revoked_at == T0  # already used
    assert store.revoke_oauth_family("fam", T0) == 2  # "one" was revoked as it was taken
    assert store.revoke_oauth_family("fam", T0) == 0
    three = store.get_oauth_grant(_hash("three"))
    assert three is not None and three.revoked_at == T0


def test_oauth_sweep_deletes_expired_grants_and_clients_never_used(store: Store) -> None:
    def grant(name: str, client: str, expires: timedelta) -> OAuthGrant:
        return OAuthGrant(
            secret_hash=_hash(name), kind="consent", client_id=client, workspace_id=None,
            key_id=None, scopes=[], params={}, family=name, expires_at=T0 + expires,
            created_at=T0,
        )  # fmt: skip

    for client in ("idle", "used-long-ago", "in-use", "fresh"):
        store.insert_oauth_client(client, {}, T0 if client != "fresh" else T0 + 2 * HOUR)
    store.insert_oauth_grants(
        [grant("old", "used-long-ago", HOUR), grant("live", "in-use", 5 * HOUR)]
    )
    # Grants that expired before the first cutoff go; clients registered before the second
    # with no grant left go with them; a young client and one still in use stay.
    assert store.sweep_oauth(T0 + 2 * HOUR, T0 + HOUR) == 3
    assert store.get_oauth_grant(_hash("old")) is None
    assert store.get_oauth_grant(_hash("live")) is not None
    assert store.get_oauth_client("idle") is None
    assert store.get_oauth_client("used-long-ago") is None
    assert store.get_oauth_client("in-use") is not None
    assert store.get_oauth_client("fresh") is not None
    assert store.sweep_oauth(T0 + 2 * HOUR, T0 + HOUR) == 0


def _ticket(name: str, client: str, at: timedelta = timedelta(0)) -> OAuthGrant:
    return OAuthGrant(
        secret_hash=_hash(name), kind="consent", client_id=client, workspace_id=None,
        key_id=None, scopes=[], params={"state": name}, family=name,
        expires_at=T0 + at + timedelta(minutes=10), created_at=T0 + at,
    )  # fmt: skip


def _kept(store: Store, names: list[str]) -> list[str]:
    return [name for name in names if store.get_oauth_grant(_hash(name)) is not None]


def test_consent_tickets_are_bounded_per_client_and_per_address(store: Store) -> None:
    """Opening a ticket drops the oldest live tickets of its client past one quota and of its
    address past the other (the new one always stays), and their spent and expired ones."""
    for client in ("c1", "c2", "c3"):
        store.insert_oauth_client(client, {}, T0)
    second = timedelta(seconds=1)
    for i in range(4):  # client c1, four addresses: the client's quota (3) drops the oldest
        store.open_consent_ticket(_ticket(f"c1-{i}", "c1", i * second), f"10.0.0.{i}", 3, 5, T0)
    assert _kept(store, [f"c1-{i}" for i in range(4)]) == ["c1-1", "c1-2", "c1-3"]
    # One address, many clients: the address's quota (5) drops its own oldest, whatever the
    # client, and never another address's ticket of the same client.
    for i in range(6):
        client = ("c2", "c3")[i % 2]
        opened = _ticket(f"a-{i}", client, (10 + i) * second)
        store.open_consent_ticket(opened, "192.0.2.1", 100, 5, T0)
    assert _kept(store, [f"a-{i}" for i in range(6)]) == [f"a-{i}" for i in range(1, 6)]
    assert _kept(store, ["c1-1", "c1-2", "c1-3"]) == ["c1-1", "c1-2", "c1-3"]
    # A used ticket and an expired one of the client go at the next opening, under quota.
    assert store.take_oauth_grant(_hash("c1-1"), "consent", T0) is not None
    late = _ticket("c1-late", "c1", timedelta(minutes=11))
    removed = store.open_consent_ticket(late, None, 10, 10, T0 + timedelta(minutes=11))
    assert removed == 3 and _kept(store, ["c1-1", "c1-2", "c1-3", "c1-late"]) == ["c1-late"]
    # Tickets opened in the same instant: one of the older goes, the new one always stays.
    for i in range(3):
        store.open_consent_ticket(_ticket(f"same-{i}", "c2", timedelta(hours=1)), None, 2, 9, T0)
    assert _kept(store, [f"same-{i}" for i in range(3)])[-1] == "same-2"
    assert len(_kept(store, [f"same-{i}" for i in range(3)])) == 2


def test_the_sweep_drops_spent_and_expired_consent_tickets_at_once(store: Store) -> None:
    """Codes and tokens are kept a while past expiry (a replay is still recognised); consent
    tickets go as soon as they expire or are used."""
    store.insert_oauth_client("c", {}, T0)
    early = timedelta(minutes=-20)
    store.insert_oauth_grants([_ticket("used", "c"), _ticket("expired", "c", early),
                               _ticket("live", "c")])  # fmt: skip
    store.take_oauth_grant(_hash("used"), "consent", T0)
    assert store.sweep_oauth(T0 - 24 * HOUR, T0 - 24 * HOUR, T0) == 2
    assert _kept(store, ["used", "expired", "live"]) == ["live"]


def test_update_context_and_listing_counts(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    new_context(store, ws, "B-side")
    store.insert_memories(
        ws, [new_memory(ctx.id, "a"), new_memory(ctx.id, "b", source_type="connector")]
    )
    updated = store.update_context(
        ws, ctx.id, {"trust_tier": "external", "search_config": {"k": 1}}, T0 + HOUR
    )
    assert updated is not None and updated.search_config == {"k": 1}
    assert updated.updated_at == T0 + HOUR and updated.memory_count is None
    listed = store.list_contexts(ws)
    assert [(c.name, c.memory_count) for c in listed] == [("B-side", 0), ("notes", 2)]
    assert store.context_counts(ws, ctx.id, T0).external == 2
    assert store.pending_count() == 2
    queue = store.embedding_queue()  # both pending since T0 (what /metrics reports)
    assert (queue.depth, queue.oldest) == (2, T0)
