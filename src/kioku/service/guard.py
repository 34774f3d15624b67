"""``@operation``: the permission check and the audit line every service operation shares.

Roles are checked before anything is looked up, so a refusal (403) never depends on whether an
id exists; ids of another workspace still answer 404 from the lookups themselves.

Each operation also declares what it does for a key with a context allow-list (``allow_listed``):
``"resolves"`` -- it acts on one context (or a Sleep run, a key) it looks up, and anything outside
the allow-list answers 404 like a missing id; ``"narrows"`` -- it is workspace-level and its
answer or effect is narrowed to the caller's contexts (and the keys confined to them);
``"refused"`` -- it is workspace-wide by nature, so an allow-listed key gets 403 before anything
is looked up. The narrowing itself is ``Principal.reaches``, the one allow-list rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from kioku.clock import system_clock
from kioku.errors import ForbiddenError
from kioku.service.lookup import audited_context_id
from kioku.service.principal import Principal
from kioku.storage.records import AuditEvent
from kioku.vocabulary import AuditOutcome

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
AllowListed = Literal["resolves", "narrows", "refused"]


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


def _audited_context(service: Any, principal: Principal, ref: str | None) -> str | None:
    """The context an audit line names: looked up before the operation runs (a deleted or
    renamed context is still found), and recorded by id."""
    return None if ref is None else audited_context_id(service.store, principal, ref)


def audit(
    service: Any, principal: Principal, action: str, outcome: AuditOutcome, **fields: Any
) -> None:
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


def _refusal(
    name: str, permission: str, confinement: AllowListed, principal: Principal
) -> tuple[str, str] | None:
    """Why ``principal`` may not call the operation ``name`` at all, and what it lacks."""
    if not principal.can(permission):
        return (
            f"{name} needs the {permission!r} permission, which a {principal.role} "
            f"key{' with these scopes' if principal.scopes else ''} does not have",
            permission,
        )
    if confinement == "refused" and principal.confined:
        return (
            f"{name} acts on the whole workspace, which a key with a context allow-list may not do",
            "no context allow-list",
        )
    return None


def operation(
    permission: str,
    *,
    audited: bool = False,
    in_context: bool = True,
    allow_listed: AllowListed | None = None,
) -> Callable[
    [Callable[Concatenate[S, Principal, P], R]], Callable[Concatenate[S, Principal, P], R]
]:
    """Refuse callers without ``permission`` (403, audited); audit successful writes.

    ``in_context``: the operation's first argument after the principal is a context reference
    (it then ``"resolves"`` for an allow-listed key). A workspace-level operation must say
    what it does for an allow-listed key (``allow_listed``), so none ships without a rule.
    """
    if allow_listed is None:
        if not in_context:
            raise TypeError("a workspace-level operation must declare allow_listed")
        allow_listed = "resolves"
    confinement: AllowListed = allow_listed

    def decorate(
        fn: Callable[Concatenate[S, Principal, P], R],
    ) -> Callable[Concatenate[S, Principal, P], R]:
        @functools.wraps(fn)
        def guarded(self: S, principal: Principal, *args: P.args, **kwargs: P.kwargs) -> R:
            ref = args[0] if in_context and args and isinstance(args[0], str) else None
            rest = args[1:] if in_context else args
            refusal = _refusal(fn.__name__, permission, confinement, principal)
            if refusal is not None:
                audit(
                    self, principal, fn.__name__, "denied",
                    context_id=_audited_context(self, principal, ref),
                    detail={"needs": refusal[1], "role": principal.role},
                )  # fmt: skip
                raise ForbiddenError(refusal[0])
            context = _audited_context(self, principal, ref) if audited else None
            result = fn(self, principal, *args, **kwargs)
            if audited:
                audit(
                    self, principal, fn.__name__, "ok",
                    context_id=context, target=_target(rest, result), detail=_detail(result),
                )  # fmt: skip
            return result

        guarded.permission = permission  # type: ignore[attr-defined]
        guarded.allow_listed = confinement  # type: ignore[attr-defined]
        return guarded

    return decorate


def permission_of(method: Callable[..., Any]) -> str | None:
    """The permission an operation needs (``None``: not a guarded operation)."""
    return getattr(method, "permission", None)


def allow_listed_of(method: Callable[..., Any]) -> AllowListed | None:
    """What an operation does for a key with a context allow-list (``None``: not guarded)."""
    return getattr(method, "allow_listed", None)


def admits(principal: Principal, method: Callable[..., Any]) -> bool:
    """Whether ``principal`` gets past the operation's guard (to offer a control for it)."""
    permission, confinement = permission_of(method), allow_listed_of(method)
    if permission is None or confinement is None:
        return False
    return _refusal(method.__name__, permission, confinement, principal) is None
