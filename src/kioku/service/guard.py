"""``@operation``: the permission check and the audit line every service operation shares.

Roles are checked before anything is looked up, so a refusal (403) never depends on whether an
id exists; ids of another workspace still answer 404 from the lookups themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from kioku.clock import system_clock
from kioku.errors import ForbiddenError
from kioku.service.principal import Principal
from kioku.storage.records import AuditEvent

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def _target(args: tuple[Any, ...], result: Any) -> str | None:
    """What an operation acted on: the id it was given, else the id it created."""
    if args and isinstance(args[0], str):
        return args[0]
    for name in ("id", "feedback_id", "key"):
        value = getattr(result, name, None)
        if isinstance(value, str):
            return value
    return None


def _detail(result: Any) -> dict[str, Any]:
    created = getattr(result, "created", None)
    if isinstance(created, int):
        return {"created": created}
    # forget_by_query: which memories went (ids only, never text); a preview forgot none.
    forgotten = getattr(result, "forgotten_ids", None)
    if isinstance(forgotten, list):
        return {"forgotten": len(forgotten), "memory_ids": forgotten}
    return {}


def audit(service: Any, principal: Principal, action: str, outcome: str, **fields: Any) -> None:
    """Append one line to the audit log (its own transaction, after the operation)."""
    clock = getattr(service, "clock", system_clock)
    service.store.append_audit(
        AuditEvent(
            workspace_id=principal.workspace_id,
            at=clock(),
            actor=principal.actor,
            channel=principal.channel,
            action=action,
            outcome=outcome,
            **fields,
        )
    )


def operation(
    permission: str, *, audited: bool = False, in_context: bool = True
) -> Callable[
    [Callable[Concatenate[S, Principal, P], R]], Callable[Concatenate[S, Principal, P], R]
]:
    """Refuse callers without ``permission`` (403, audited); audit successful writes.

    ``in_context``: the operation's first argument after the principal is a context reference.
    """

    def decorate(
        fn: Callable[Concatenate[S, Principal, P], R],
    ) -> Callable[Concatenate[S, Principal, P], R]:
        @functools.wraps(fn)
        def guarded(self: S, principal: Principal, *args: P.args, **kwargs: P.kwargs) -> R:
            context = args[0] if in_context and args and isinstance(args[0], str) else None
            rest = args[1:] if in_context else args
            if not principal.can(permission):
                audit(
                    self, principal, fn.__name__, "denied",
                    context_id=context, detail={"needs": permission, "role": principal.role},
                )  # fmt: skip
                raise ForbiddenError(
                    f"{fn.__name__} needs the {permission!r} permission, which a "
                    f"{principal.role} key{' with these scopes' if principal.scopes else ''} "
                    "does not have"
                )
            result = fn(self, principal, *args, **kwargs)
            if audited:
                audit(
                    self, principal, fn.__name__, "ok",
                    context_id=context, target=_target(rest, result), detail=_detail(result),
                )  # fmt: skip
            return result

        guarded.permission = permission  # type: ignore[attr-defined]
        return guarded

    return decorate


def permission_of(method: Callable[..., Any]) -> str | None:
    """The permission an operation needs (``None``: not a guarded operation)."""
    return getattr(method, "permission", None)
