"""The SDK's shape: one method per REST operation on both clients, construction, kioku's API."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
from collections.abc import Callable
from typing import Any, Unpack, get_args, get_origin, get_type_hints

import anyio
import pytest
from pydantic import BaseModel

import kioku
from kioku import AsyncClient, Client, NotFoundError
from kioku.api import create_app
from kioku.models import ContextCreate, ContextUpdate, FeedbackCreate, MemoryCreate, MemoryUpdate
from kioku.runtime import Runtime


def operation_ids() -> list[str]:
    spec = create_app().openapi()
    return [
        operation["operationId"] for path in spec["paths"].values() for operation in path.values()
    ]


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in {"close", "aclose"}
    }


@pytest.mark.parametrize("cls", [Client, AsyncClient])
def test_every_rest_operation_is_a_client_method(cls: type) -> None:
    missing = set(operation_ids()) - set(public_methods(cls))
    assert not missing, f"{cls.__name__} lacks {sorted(missing)}"


def test_both_clients_have_the_same_methods_with_the_same_parameters() -> None:
    sync, asynchronous = public_methods(Client), public_methods(AsyncClient)
    assert set(sync) == set(asynchronous) == {*operation_ids(), "purge"}
    for name, signature in sync.items():
        assert list(signature.parameters) == list(asynchronous[name].parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)), name
        assert getattr(Client, name).__doc__, name


@pytest.mark.parametrize(
    ("method", "model"),
    [
        ("create_context", ContextCreate),
        ("update_context", ContextUpdate),
        ("remember", MemoryCreate),
        ("update_memory", MemoryUpdate),
        ("feedback", FeedbackCreate),
    ],
)
def test_write_methods_take_every_field_of_their_request_model(
    method: str, model: type[BaseModel]
) -> None:
    assert set(model.model_fields) <= keyword_names(getattr(Client, method)), method


def keyword_names(function: Callable[..., Any]) -> set[str]:
    """The names a method accepts, its ``**fields: Unpack[SomeTypedDict]`` spelled out."""
    names: set[str] = set()
    hints = get_type_hints(function, include_extras=True)
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD:
            names.add(name)
            continue
        unpacked = hints[name]
        assert get_origin(unpacked) is Unpack, f"**{name} of {function.__name__} is not typed"
        names |= set(get_type_hints(get_args(unpacked)[0]))
    return names


def test_kioku_exports_the_public_surface_only() -> None:
    assert set(kioku.__all__) == {
        "Client",
        "AsyncClient",
        "models",
        "__version__",
        "KiokuError",
        "NotFoundError",
        "InvalidInputError",
        "ForbiddenError",
        "ConflictError",
        "PayloadTooLargeError",
        "RateLimitedError",
        "UnauthorizedError",
    }
    assert kioku.models.Memory.__name__ == "Memory"
    assert kioku.__version__ == importlib.metadata.version("kioku-memory-server")


def recording(seen: list[dict[str, str]]) -> Any:
    """A bare ASGI app that records request headers and answers like ``/health``."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        body = {"status": "ok", "version": "x", "database": "d", "embedder": "e"}
        payload = json.dumps({**body, "embedding_queue": 0}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": payload})

    return app


def test_base_url_and_api_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIOKU_URL", raising=False)
    monkeypatch.delenv("KIOKU_API_KEY", raising=False)
    assert Client().base_url == "http://127.0.0.1:8765"
    monkeypatch.setenv("KIOKU_URL", "http://memory.internal:9000")
    assert Client().base_url == "http://memory.internal:9000"
    assert Client("http://explicit:1").base_url == "http://explicit:1"
    seen: list[dict[str, str]] = []
    Client(app=recording(seen)).health()
    assert "authorization" not in seen[-1]
    monkeypatch.setenv("KIOKU_API_KEY", "kk_from_env")
    Client(app=recording(seen)).health()
    assert seen[-1]["authorization"] == "Bearer kk_from_env"
    with Client(app=recording(seen), api_key="kk_explicit") as client:
        client.health()
    assert seen[-1]["authorization"] == "Bearer kk_explicit"
    assert seen[-1]["user-agent"] == f"kioku-python/{kioku.__version__}"


@pytest.mark.anyio
async def test_async_client_as_an_agent_uses_it(runtime: Runtime) -> None:
    async with AsyncClient(app=create_app(runtime=runtime)) as memory:
        await memory.remember("default", "Answer briefly", delivery_mode="always")
        fact = await memory.remember("default", "Refunds within 30 days")
        pinned, state = (
            await memory.load_pinned("default"),
            await memory.set_state("default", "t", 1),
        )
        async with anyio.create_task_group() as tasks:  # concurrent calls share one client
            for _ in range(3):
                tasks.start_soon(memory.recall, "default", "refunds")
        assert [i.summary for i in pinned.items] == ["Answer briefly"]
        assert state.expires_in_seconds == 86400
        assert (await memory.recall("default", "refunds")).results[0].id == fact.id
        with pytest.raises(NotFoundError):
            await memory.get_state("default", "never-set")
