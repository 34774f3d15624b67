"""The local operator's workspace service: owners by name, and contexts on another model."""

from __future__ import annotations

from kioku.models import MemoryCreate
from kioku.runtime import Runtime


def test_the_owner_of_a_missing_workspace_is_none_unless_it_is_created(runtime: Runtime) -> None:
    assert runtime.workspaces.owner("team", "cli") is None
    made = runtime.workspaces.owner("team", "cli", create=True)
    assert made is not None and made.role == "owner" and made.channel == "cli"
    again = runtime.workspaces.owner("team", "cli")
    assert again is not None and again.workspace_id == made.workspace_id
    default = runtime.workspaces.owner("default", "cli")
    assert default is not None and default.workspace_id == runtime.default_workspace_id


def test_contexts_holding_another_models_vectors_are_named(runtime: Runtime) -> None:
    assert runtime.embedder is not None
    me = runtime.local_principal("cli")
    runtime.memories.remember(me, "default", MemoryCreate(summary="Alice drinks oolong"))
    assert runtime.embedding is not None
    runtime.embedding.drain()  # the default context now holds the configured model's vectors
    assert runtime.workspaces.foreign_vectors(runtime.embedder.name) == []
    [found] = runtime.workspaces.foreign_vectors("another-model")
    assert (found.workspace, found.context, found.model) == (
        "default", "default", runtime.embedder.name,
    )  # fmt: skip
