"""Request-scoped dependencies: the runtime and the calling principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from kioku.errors import UnauthorizedError
from kioku.runtime import Runtime
from kioku.service.principal import Principal


async def get_runtime(request: Request) -> Runtime:
    """The runtime the app was built around (``async``: FastAPI would run a plain function on
    a worker thread, a hand-off for nothing)."""
    return request.app.state.runtime


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, if there is one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


async def get_principal(
    request: Request, runtime: Annotated[Runtime, Depends(get_runtime)]
) -> Principal:
    """The caller: the owner of an API key sent as a bearer token. Without a key, only a
    ``--dev`` server (loopback only) answers, as the local owner of the default workspace.
    A key is looked up on a worker thread (a database read); the rest needs none."""
    token = bearer_token(request)
    if token is not None:
        return await run_in_threadpool(runtime.keys.authenticate, token, channel="rest")
    if runtime.settings.server.dev:
        return runtime.local_principal("rest")
    raise UnauthorizedError("an API key is required: send 'Authorization: Bearer kk_...'")


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
