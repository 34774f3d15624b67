"""Workspaces by name, for the operator's local commands on the database itself (``kioku
keys``, ``kioku serve``'s start): on the operator's own machine there is no key to ask for, so
the owner of a workspace is whoever runs the command. Remote callers never reach this: an
API key names its workspace (``service/keys.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from kioku.service.principal import Channel, Principal
from kioku.storage.ports import Workspaces


@dataclass(frozen=True)
class ForeignVectors:
    """A context whose vectors come from ``model``, not the configured embedder's: its vector
    leg is off (vectors of two models are never mixed) until it is re-embedded."""

    workspace: str
    context: str
    model: str


class WorkspaceService:
    """The local operator's view of every workspace."""

    def __init__(self, directory: Workspaces) -> None:
        self.directory = directory

    def owner(self, name: str, channel: Channel, *, create: bool = False) -> Principal | None:
        """The owner of the workspace called ``name`` (a new tenant, created first, if
        ``create``); ``None`` when there is no such workspace."""
        row = self.directory.get_workspace_by_name(name)
        if row is None and create:
            row = self.directory.ensure_workspace(name)
        if row is None:
            return None
        return Principal(workspace_id=row.id, role="owner", channel=channel)

    def foreign_vectors(self, model: str) -> list[ForeignVectors]:
        """Every context, of every workspace, holding vectors of another model than ``model``
        (workspaces and contexts by name)."""
        return [
            ForeignVectors(workspace.name, context.name, context.embedding_model)
            for workspace in self.directory.list_workspaces()
            for context in self.directory.list_contexts(workspace.id)
            if context.embedding_model and context.embedding_model != model
        ]
