"""Placing new memories in their threads: a memory sent without a ``position`` goes after the
last one of its thread (docs/concepts.md, *Threads*)."""

from __future__ import annotations

from kioku.storage.shared.threads import ThreadStore


class ThreadPlaces:
    """The next free position of each thread of one context, for one write request.

    The stored tail of a thread is read once, on its first use; the positions given out (or
    sent explicitly) since then move it on, so the items of one batch follow each other.
    """

    def __init__(self, store: ThreadStore, workspace_id: str, context_id: str) -> None:
        self.store = store
        self.workspace_id = workspace_id
        self.context_id = context_id
        self.tails: dict[str, int] = {}

    def place(self, thread: str | None, position: int | None) -> int | None:
        """The position to store: ``position`` if given, else one after the thread's tail."""
        if thread is None:
            return None
        if thread not in self.tails:
            stored = self.store.thread_tails(self.workspace_id, self.context_id, [thread])
            self.tails[thread] = stored.get(thread, -1)
        if position is None:
            position = self.tails[thread] + 1
        self.tails[thread] = max(self.tails[thread], position)
        return position
