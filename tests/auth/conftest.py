"""Two tenants on one server that requires keys: workspace A (the victim) and B (the attacker).

A holds a context with a memory, a pinned rule, a state key and a feedback event; B holds a
context of its own. Every key is a real API key sent as a bearer token.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import ContextCreate, FeedbackCreate, KeyCreate, MemoryCreate, StateSet
from kioku.models.sleep import SleepRequest
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, SyncASGIClient, make_settings, portal_client
from tests.postgres import empty_postgres_database


@dataclass
class Tenants:
    runtime: Runtime
    client: SyncASGIClient
    a_owner: Principal
    b_owner: Principal
    keys: dict[str, str] = field(default_factory=dict)
    """Bearer keys: "A:owner", "A:admin", "A:member", "A:viewer", "A:connector", "B:owner"."""
    ids: dict[str, str] = field(default_factory=dict)
    """A's ids (context, memory, purged, key_id, state key, Sleep run) and B's context."""

    def as_(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


@pytest.fixture
def tenants(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Tenants]:
    """On SQLite; on PostgreSQL too where a test asks (``indirect`` parameter "postgres")."""
    overrides: dict[str, object] = {}
    if getattr(request, "param", "sqlite") == "postgres":
        overrides["database_url"] = url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
    settings = make_settings(tmp_path, dev=False, rate_limit_per_minute=0, **overrides)
    runtime = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        a = Principal(workspace_id=runtime.default_workspace_id, role="owner", channel="cli")
        b_ws = runtime.store.ensure_workspace("tenant-b")
        b = Principal(workspace_id=b_ws.id, role="owner", channel="cli")
        with portal_client(create_app(runtime=runtime)) as client:
            t = Tenants(runtime, client, a, b)
            ctx = runtime.contexts.create_context(a, ContextCreate(name="alpha"))
            t.ids["ctx"] = ctx.id
            t.ids["b_ctx"] = runtime.contexts.create_context(b, ContextCreate(name="beta")).id
            memory = runtime.memories.remember(a, ctx.id, MemoryCreate(summary="Alpha secret plan"))
            t.ids["memory"] = memory.id
            runtime.memories.remember(
                a, ctx.id, MemoryCreate(summary="Alpha rule", delivery_mode="always")
            )
            purged = runtime.memories.remember(a, ctx.id, MemoryCreate(summary="Purged secret"))
            runtime.memories.purge(a, ctx.id, purged.id)
            t.ids["purged"] = purged.id
            runtime.state.set_state(a, ctx.id, "plan", StateSet(value={"alpha": "secret"}))
            runtime.feedback.feedback(a, ctx.id, FeedbackCreate(memory_id=memory.id, helpful=True))
            # A Sleep run of A's (edges only: A's memories and state stay as they are).
            run = runtime.sleep.sleep(a, ctx.id, SleepRequest(mode="edges_only"))
            t.ids["run"] = run.run_id
            for role in ("owner", "admin", "member", "viewer", "connector"):
                made = runtime.keys.create_key(a, KeyCreate(name=f"a-{role}", role=role))
                t.keys[f"A:{role}"] = made.key
                t.ids[f"key:{role}"] = made.id
            t.keys["B:owner"] = runtime.keys.create_key(
                b, KeyCreate(name="b-owner", role="owner")
            ).key
            yield t
    finally:
        runtime.close()
