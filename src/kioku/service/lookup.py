"""Finding a context of a workspace by the reference a caller gave: its id or its name."""

from __future__ import annotations

from kioku.models import UUID_PATTERN
from kioku.service.principal import Principal
from kioku.storage.ports import ContextLookup
from kioku.storage.records import ContextRow


def find_context(store: ContextLookup, workspace_id: str, ref: str) -> ContextRow | None:
    """The context ``ref`` (an id, else a name) names in the workspace, if any."""
    if UUID_PATTERN.match(ref):
        return store.get_context(workspace_id, ref)
    return store.get_context_by_name(workspace_id, ref)


def audited_context_id(store: ContextLookup, principal: Principal, ref: str) -> str:
    """What an audit line records for the context reference ``ref``: the context's id, so
    one context's lines share one value whether it was named by id or by name (and the log
    can be read per context: docs/security.md, "Audit log"). An id is kept as given; so is a
    name the caller cannot see (missing, or outside its allow-list): the line then holds
    only what the caller sent, never an id it could not have known."""
    if UUID_PATTERN.match(ref):
        return ref
    row = find_context(store, principal.workspace_id, ref)
    return ref if row is None or not principal.reaches([row.id]) else row.id
