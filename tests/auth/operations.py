"""The operation table the isolation and role suites are generated from.

One row per service operation: how to call it on each surface with the victim's ids. A test
checks the table covers every operation, so a new operation cannot ship without its row.
``ids`` holds workspace A's ids (``ctx``, ``memory``, ``key:<role>``...) and B's ``b_ctx``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kioku import Client

Ids = dict[str, str]
Rest = tuple[str, str, dict[str, Any] | None]


@dataclass(frozen=True)
class Op:
    rest: Callable[[Ids], Rest]
    """(method, path under /api/v1, json body) reaching A's objects."""
    sdk: Callable[[Client, Ids], Any]
    mcp: Callable[[Ids], tuple[str, dict[str, Any]]] | None = None
    workspace_level: bool = False
    """Lists or creates in the caller's own workspace: no A id to refuse, A's data must not
    show up instead."""
    allow_listed: str = "resolves"
    """What it does for a key with a context allow-list that leaves A's context out (as the
    operation declares, ``guard.allow_listed_of``): ``resolves`` -- A's objects answer 404;
    ``narrows`` -- the answer holds nothing of A's context (a request naming it answers 404);
    ``refused`` -- 403 whatever the request."""


def _c(ids: Ids) -> str:
    return f"/contexts/{ids['ctx']}"


def _m(ids: Ids) -> str:
    return f"/contexts/{ids['ctx']}/memories/{ids['memory']}"


OPERATIONS: dict[str, Op] = {
    "create_context": Op(
        lambda i: ("POST", "/contexts", {"name": "alpha"}),  # A's name, in B's workspace
        lambda c, i: c.create_context("alpha"),
        lambda i: ("create_context", {"name": "alpha"}),
        workspace_level=True,
        allow_listed="refused",
    ),
    "list_contexts": Op(
        lambda i: ("GET", "/contexts", None),
        lambda c, i: c.list_contexts(),
        lambda i: ("list_contexts", {}),
        workspace_level=True,
        allow_listed="narrows",
    ),
    "get_context": Op(lambda i: ("GET", _c(i), None), lambda c, i: c.get_context(i["ctx"])),
    "update_context": Op(
        lambda i: ("PATCH", _c(i), {"description": "pwned"}),
        lambda c, i: c.update_context(i["ctx"], description="pwned"),
    ),
    "delete_context": Op(
        lambda i: ("DELETE", _c(i), None), lambda c, i: c.delete_context(i["ctx"])
    ),
    "stats": Op(
        lambda i: ("GET", f"{_c(i)}/stats", None),
        lambda c, i: c.stats(i["ctx"]),
        lambda i: ("stats", {"context_id": i["ctx"]}),
    ),
    "remember": Op(
        lambda i: ("POST", f"{_c(i)}/memories", {"summary": "planted"}),
        lambda c, i: c.remember(i["ctx"], "planted"),
        lambda i: ("remember", {"context_id": i["ctx"], "summary": "planted"}),
    ),
    "remember_batch": Op(
        lambda i: ("POST", f"{_c(i)}/memories/batch", {"items": [{"summary": "planted"}]}),
        lambda c, i: c.remember_batch(i["ctx"], [{"summary": "planted"}]),
        lambda i: ("remember_batch", {"context_id": i["ctx"], "items": [{"summary": "x"}]}),
    ),
    "list_memories": Op(
        lambda i: ("GET", f"{_c(i)}/memories", None),
        lambda c, i: c.list_memories(i["ctx"]),
        lambda i: ("list_memories", {"context_id": i["ctx"]}),
    ),
    "get_memory": Op(
        lambda i: ("GET", _m(i), None),
        lambda c, i: c.get_memory(i["ctx"], i["memory"]),
        lambda i: ("get_memory", {"context_id": i["ctx"], "memory_id": i["memory"]}),
    ),
    "explore": Op(
        lambda i: ("GET", f"{_m(i)}/explore", None),
        lambda c, i: c.explore(i["ctx"], i["memory"]),
        lambda i: ("explore", {"context_id": i["ctx"], "memory_id": i["memory"]}),
    ),
    "update_memory": Op(
        lambda i: ("PATCH", _m(i), {"summary": "pwned"}),
        lambda c, i: c.update_memory(i["ctx"], i["memory"], summary="pwned"),
        lambda i: (
            "update_memory",
            {"context_id": i["ctx"], "memory_id": i["memory"], "summary": "x"},
        ),
    ),
    "forget": Op(
        lambda i: ("DELETE", _m(i), None),
        lambda c, i: c.forget(i["ctx"], i["memory"]),
        lambda i: ("forget", {"context_id": i["ctx"], "memory_id": i["memory"]}),
    ),
    "forget_by_query": Op(  # the preview: the confirmation step has its own tests
        lambda i: ("POST", f"{_c(i)}/memories/forget", {"query": "alpha secret plan"}),
        lambda c, i: c.forget_by_query(i["ctx"], "alpha secret plan"),
        lambda i: ("forget_by_query", {"context_id": i["ctx"], "query": "alpha secret plan"}),
    ),
    "purge": Op(
        lambda i: ("DELETE", f"{_m(i)}?purge=true", None),
        lambda c, i: c.purge(i["ctx"], i["memory"]),
    ),
    "recall": Op(
        lambda i: ("POST", f"{_c(i)}/recall", {"query": "alpha secret plan"}),
        lambda c, i: c.recall(i["ctx"], "alpha secret plan"),
        lambda i: ("recall", {"context_id": i["ctx"], "query": "alpha secret plan"}),
    ),
    "load_pinned": Op(
        lambda i: ("GET", f"{_c(i)}/pinned", None),
        lambda c, i: c.load_pinned(i["ctx"]),
        lambda i: ("load_pinned", {"context_id": i["ctx"]}),
    ),
    "claude_code_hook": Op(
        lambda i: (
            "POST",
            f"/hooks/claude-code?context={i['ctx']}",
            {"hook_event_name": "UserPromptSubmit", "prompt": "what is pinned?"},
        ),
        lambda c, i: c.claude_code_hook(
            {"hook_event_name": "UserPromptSubmit", "prompt": "what is pinned?"},
            contexts=[i["ctx"]],
        ),
    ),
    "upcoming": Op(
        lambda i: ("GET", f"{_c(i)}/upcoming", None),
        lambda c, i: c.upcoming(i["ctx"]),
        lambda i: ("upcoming", {"context_id": i["ctx"]}),
    ),
    "feedback": Op(
        lambda i: ("POST", f"{_c(i)}/feedback", {"memory_id": i["memory"], "helpful": False}),
        lambda c, i: c.feedback(i["ctx"], i["memory"], False),
        lambda i: (
            "feedback",
            {"context_id": i["ctx"], "memory_id": i["memory"], "helpful": False},
        ),
    ),
    "list_feedback": Op(
        lambda i: ("GET", f"{_c(i)}/feedback", None), lambda c, i: c.list_feedback(i["ctx"])
    ),
    "set_state": Op(
        lambda i: ("PUT", f"{_c(i)}/state/plan", {"value": "pwned"}),
        lambda c, i: c.set_state(i["ctx"], "plan", "pwned"),
        lambda i: ("set_state", {"context_id": i["ctx"], "key": "plan", "value": "pwned"}),
    ),
    "get_state": Op(
        lambda i: ("GET", f"{_c(i)}/state/plan", None),
        lambda c, i: c.get_state(i["ctx"], "plan"),
        lambda i: ("get_state", {"context_id": i["ctx"], "key": "plan"}),
    ),
    "list_state": Op(
        lambda i: ("GET", f"{_c(i)}/state", None),
        lambda c, i: c.list_state(i["ctx"]),
        lambda i: ("get_state", {"context_id": i["ctx"]}),
    ),
    "delete_state": Op(
        lambda i: ("DELETE", f"{_c(i)}/state/plan", None),
        lambda c, i: c.delete_state(i["ctx"], "plan"),
        lambda i: ("delete_state", {"context_id": i["ctx"], "key": "plan"}),
    ),
    "sleep": Op(
        lambda i: ("POST", f"{_c(i)}/sleep", {"mode": "edges_only"}),
        lambda c, i: c.sleep(i["ctx"], mode="edges_only"),
        lambda i: ("sleep", {"context_id": i["ctx"]}),
    ),
    "sleep_report": Op(
        lambda i: ("GET", f"/sleep/{i['run']}", None), lambda c, i: c.sleep_report(i["run"])
    ),
    "rollback_sleep": Op(
        lambda i: ("POST", f"/sleep/{i['run']}/rollback", None),
        lambda c, i: c.rollback_sleep(i["run"]),
    ),
    "ingest": Op(
        lambda i: (
            "POST",
            f"{_c(i)}/ingest",
            {"ops": [{"op": "upsert", "external_id": "x1", "summary": "planted"}]},
        ),
        lambda c, i: c.ingest(i["ctx"], [{"op": "upsert", "external_id": "x1", "summary": "x"}]),
    ),
    "purge_context": Op(
        lambda i: ("POST", f"{_c(i)}/purge", None), lambda c, i: c.purge_context(i["ctx"])
    ),
    "purge_source": Op(
        lambda i: ("POST", "/purge", {"source_uri_prefix": "alpha://", "context_id": i["ctx"]}),
        lambda c, i: c.purge_source("alpha://", context_id=i["ctx"]),
        allow_listed="narrows",
    ),
    "create_key": Op(
        lambda i: ("POST", "/keys", {"name": "x", "role": "viewer", "context_ids": [i["ctx"]]}),
        lambda c, i: c.create_key("x", role="viewer", context_ids=[i["ctx"]]),
        allow_listed="narrows",
    ),
    "list_keys": Op(
        lambda i: ("GET", "/keys", None),
        lambda c, i: c.list_keys(),
        workspace_level=True,
        allow_listed="narrows",
    ),
    "revoke_key": Op(
        lambda i: ("DELETE", f"/keys/{i['key:member']}", None),
        lambda c, i: c.revoke_key(i["key:member"]),
    ),
    "list_audit": Op(
        lambda i: ("GET", "/audit", None),
        lambda c, i: c.list_audit(),
        workspace_level=True,
        allow_listed="narrows",
    ),
}

# Operations whose target is a memory or key id: also tried through the attacker's own
# context, and with an id that was purged (a reused or remembered id must not leak either).
MEMORY_OPS = ("get_memory", "update_memory", "forget", "purge", "feedback", "explore")
