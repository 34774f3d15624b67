"""The two SDK clients cannot drift: every operation is written once and typed for both."""

from __future__ import annotations

import inspect
from typing import assert_type

import pytest

from kioku import AsyncClient, Client
from kioku.api import create_app
from kioku.client._dispatch import Operation
from kioku.client._operations import Operations
from kioku.models import Context, Health, MemoryPage, RecallResult
from kioku.runtime import Runtime

OWN_MEMBERS = {"base_url", "close", "aclose"}  # construction and closing differ by design


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_a_client_defines_no_operation_of_its_own(cls: type) -> None:
    own = {name for name in vars(cls) if not name.startswith("_")}
    assert own <= OWN_MEMBERS, f"{cls.__name__} defines {sorted(own - OWN_MEMBERS)} itself"


def test_every_operation_is_one_definition_with_one_signature_for_both() -> None:
    names = {name for name, member in vars(Operations).items() if isinstance(member, Operation)}
    public = {
        name
        for name, _ in inspect.getmembers(Client, inspect.isfunction)
        if not name.startswith("_")
    }
    assert public - OWN_MEMBERS == names
    for name in names:
        blocking, asynchronous = getattr(Client, name), getattr(AsyncClient, name)
        assert inspect.signature(blocking) == inspect.signature(asynchronous), name
        assert not inspect.iscoroutinefunction(blocking), name
        assert inspect.iscoroutinefunction(asynchronous), name
        assert blocking.__doc__ == asynchronous.__doc__ and blocking.__doc__, name


def test_methods_are_typed_with_their_result_for_both_clients(runtime: Runtime) -> None:
    """pyright (``make check``) checks the ``assert_type`` lines; running them checks the values."""
    app = create_app(runtime=runtime)
    with Client(app=app) as client:
        assert_type(client.health(), Health)
        assert_type(client.get_context("default"), Context)
        assert_type(client.recall("default", "anything", k=3), RecallResult)
        assert isinstance(client.list_memories("default", limit=1), MemoryPage)


@pytest.mark.anyio
async def test_async_methods_are_typed_with_their_awaited_result(runtime: Runtime) -> None:
    async with AsyncClient(app=create_app(runtime=runtime)) as client:
        assert_type(await client.health(), Health)
        assert_type(await client.get_context("default"), Context)
        assert_type(await client.recall("default", "anything", k=3), RecallResult)
        assert isinstance(await client.list_memories("default", limit=1), MemoryPage)
