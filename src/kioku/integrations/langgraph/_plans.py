"""The store's logic, written once for ``batch`` and ``abatch``: plans that yield SDK calls.

A plan is a generator that yields a list of ``Request``s (SDK method calls that may run at the
same time) and is sent back, for each, what the call returned or the ``KiokuError`` it raised.
``run`` drives a plan with a blocking ``kioku.Client``, one call after another; ``arun`` with a
``kioku.AsyncClient``, the calls of one step concurrently (at most ``limit`` at once). So the
two entry points cannot differ in anything but waiting, as the SDK's own two clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kioku.errors import KiokuError

T = TypeVar("T")


@dataclass(frozen=True)
class Request:
    """One SDK method call: ``getattr(client, method)(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[list[Request], list[Any], T]


def call(method: str, *args: Any, **kwargs: Any) -> Plan[Any]:
    """One SDK call; its KiokuError is raised here, in the plan."""
    [outcome] = yield [Request(method, args, kwargs)]
    if isinstance(outcome, KiokuError):
        raise outcome
    return outcome


def each(plans: Sequence[Plan[T]]) -> Plan[list[T]]:
    """Run ``plans`` side by side (their calls of one step go out together); their results
    in order. The first one that raises stops them all."""
    results: list[Any] = [None] * len(plans)
    pending: dict[int, list[Request]] = {}
    try:
        for i, plan in enumerate(plans):
            try:
                pending[i] = next(plan)
            except StopIteration as stop:
                results[i] = stop.value
        while pending:
            outcomes = yield [request for requests in pending.values() for request in requests]
            step, at = {}, 0
            for i, requests in pending.items():
                mine, at = outcomes[at : at + len(requests)], at + len(requests)
                try:
                    step[i] = plans[i].send(mine)
                except StopIteration as stop:
                    results[i] = stop.value
            pending = step
        return results
    finally:
        for plan in plans:
            plan.close()


def _blocking(client: Any, request: Request) -> Any:
    try:
        return getattr(client, request.method)(*request.args, **request.kwargs)
    except KiokuError as exc:
        return exc


def run(client: Any, plan: Plan[T]) -> T:
    """Drive ``plan`` with a blocking ``kioku.Client``."""
    try:
        requests = next(plan)
        while True:
            requests = plan.send([_blocking(client, request) for request in requests])
    except StopIteration as stop:
        return stop.value
    finally:
        plan.close()


async def arun(client: Any, plan: Plan[T], limit: int = 8) -> T:
    """Drive ``plan`` with a ``kioku.AsyncClient``, each step's calls concurrently."""
    gate = asyncio.Semaphore(limit)

    async def one(request: Request) -> Any:
        async with gate:
            try:
                return await getattr(client, request.method)(*request.args, **request.kwargs)
            except KiokuError as exc:
                return exc

    try:
        requests = next(plan)
        while True:
            tasks = [asyncio.ensure_future(one(request)) for request in requests]
            try:
                outcomes = await asyncio.gather(*tasks)
            except BaseException:
                for task in tasks:
                    task.cancel()
                raise
            requests = plan.send(list(outcomes))
    except StopIteration as stop:
        return stop.value
    finally:
        plan.close()
