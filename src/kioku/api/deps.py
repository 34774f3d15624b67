"""Request-scoped dependencies: the runtime and the calling principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from kioku.runtime import Runtime
from kioku.service.principal import Principal


def get_runtime(request: Request) -> Runtime:
    """The runtime the app was built around."""
    return request.app.state.runtime


def get_principal(runtime: Annotated[Runtime, Depends(get_runtime)]) -> Principal:
    """The caller. Until API keys arrive, only loopback dev mode serves: the default owner."""
    return runtime.local_principal("rest")


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
