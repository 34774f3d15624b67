"""Contexts: create, read, update, delete, and resolve a reference (id or name) to a row."""

from __future__ import annotations

import uuid

from kioku.clock import Clock, system_clock
from kioku.errors import ForbiddenError, InvalidInputError, NotFoundError
from kioku.models import Context, ContextCreate, ContextPage, ContextUpdate
from kioku.service.guard import operation
from kioku.service.lookup import find_context
from kioku.service.principal import Principal
from kioku.service.views import context_view
from kioku.storage.ports import ContextPort
from kioku.storage.records import ContextRow


class ContextService:
    """Named memory spaces of a workspace."""

    def __init__(self, store: ContextPort, clock: Clock = system_clock) -> None:
        self.store = store
        self.clock = clock

    def resolve(self, principal: Principal, ref: str) -> ContextRow:
        """Find a context of the caller's workspace by id or name; 404 otherwise.

        Another workspace's context is reported exactly like a missing one.
        """
        row = find_context(self.store, principal.workspace_id, ref)
        if row is None or not principal.reaches([row.id]):
            raise NotFoundError(f"context {ref!r} not found", field="context_id")
        return row

    @operation("admin", audited=True, in_context=False, allow_listed="refused")
    def create_context(self, principal: Principal, data: ContextCreate) -> Context:
        """Create a context; a duplicate name is a conflict. Not for a key with a context
        allow-list: the new context would be outside it (and a 409 would reveal a name)."""
        now = self.clock()
        row = ContextRow(
            id=str(uuid.uuid4()),
            workspace_id=principal.workspace_id,
            name=data.name,
            description=data.description,
            trust_tier=data.trust_tier,
            sleep_mode=data.sleep_mode,
            search_config=data.search_config,
            embedding_model=None,
            embedding_dim=None,
            created_at=now,
            updated_at=now,
        )
        return context_view(self.store.insert_context(principal.workspace_id, row))

    def ensure_context(self, principal: Principal, name: str) -> None:
        """Create the context called ``name`` with defaults if it is missing (at start-up)."""
        if self.store.get_context_by_name(principal.workspace_id, name) is None:
            self.create_context(principal, ContextCreate(name=name))

    @operation("read", in_context=False, allow_listed="narrows")
    def list_contexts(self, principal: Principal) -> ContextPage:
        """Every context the caller may see, by name."""
        rows = self.store.list_contexts(principal.workspace_id)
        return ContextPage(items=[context_view(r) for r in rows if principal.reaches([r.id])])

    @operation("read")
    def get_context(self, principal: Principal, ref: str) -> Context:
        """One context by id or name, with its live memory count."""
        row = self.resolve(principal, ref)
        return context_view(row, self.store.count_memories(principal.workspace_id, row.id))

    @operation("admin", audited=True)
    def update_context(self, principal: Principal, ref: str, data: ContextUpdate) -> Context:
        """Change the fields that were sent (not the name, for a key with an allow-list)."""
        row = self.resolve(principal, ref)
        values = data.model_dump(exclude_unset=True)
        for name, value in list(values.items()):
            if value is None:
                raise_null(name)
        if principal.confined and values.get("name", row.name) != row.name:
            # Names are unique in the workspace: a rename's 409 would tell a key with an
            # allow-list which names the contexts it cannot see use.
            raise ForbiddenError("a key with a context allow-list cannot rename a context")
        if row.connector_id is not None and values.get("trust_tier") == "trusted":
            # What a connector feeds is someone else's text, whatever its context
            # (docs/connectors.md).
            raise InvalidInputError(
                "a context fed by a connector is always external", field="trust_tier"
            )
        updated = self.store.update_context(principal.workspace_id, row.id, values, self.clock())
        if updated is None:
            raise NotFoundError(f"context {ref!r} not found", field="context_id")
        return context_view(updated, self.store.count_memories(principal.workspace_id, row.id))

    @operation("admin", audited=True)
    def delete_context(self, principal: Principal, ref: str) -> None:
        """Delete a context and every memory in it, for good."""
        row = self.resolve(principal, ref)
        self.store.delete_context(principal.workspace_id, row.id)


def raise_null(field: str) -> None:
    """A field that cannot be cleared was sent as null."""
    raise InvalidInputError(f"{field} cannot be null", field=field)
