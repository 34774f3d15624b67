"""Error answers become the domain's exception classes; transport failures stay httpx's."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from kioku import (
    Client,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    KiokuError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
)


def test_not_found_names_the_field(kioku: Client) -> None:
    with pytest.raises(NotFoundError) as caught:
        kioku.get_memory("default", "no-such-memory")
    error = caught.value
    assert (error.status_code, error.code, error.field) == (404, "not_found", "memory_id")
    assert "no-such-memory" in error.message


def test_invalid_input_names_the_field(kioku: Client) -> None:
    with pytest.raises(InvalidInputError) as caught:
        kioku.remember("default", "   ")
    assert (caught.value.status_code, caught.value.field) == (422, "summary")
    assert caught.value.details and caught.value.details[0]["field"] == "summary"
    with pytest.raises(InvalidInputError) as caught:
        kioku.recall("default", "anything", k=0)
    assert caught.value.field == "k"


def test_payload_too_large(kioku: Client) -> None:
    with pytest.raises(PayloadTooLargeError) as caught:
        kioku.set_state("default", "big", "x" * 20_000)
    assert (caught.value.status_code, caught.value.field) == (413, "value")


def test_conflict(kioku: Client) -> None:
    kioku.create_context("twice")
    with pytest.raises(ConflictError) as caught:
        kioku.create_context("twice")
    assert caught.value.status_code == 409


def test_a_filter_a_listing_cannot_express_is_refused_before_sending(kioku: Client) -> None:
    with pytest.raises(InvalidInputError) as caught:
        kioku.list_memories("default", filters={"importance_min": 0.5})
    assert caught.value.field == "filters.importance_min" and caught.value.status_code is None
    with pytest.raises(InvalidInputError) as caught:
        kioku.load_pinned("default", filters={"tags": {"all": ["a", "b"]}})
    assert caught.value.field == "filters.tags"
    assert kioku.list_memories("default", filters={"include_superseded": False}).items == []
    with pytest.raises(InvalidInputError) as caught:
        kioku.list_memories("default", filters={"trust_tier": "maybe"})
    assert caught.value.field == "filters.trust_tier"


def answering(status: int, body: bytes, content_type: str = "application/json") -> Any:
    """A bare ASGI app that gives every request the same answer."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", content_type.encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def error_body(code: str, field: str | None = None) -> bytes:
    details = [{"field": field, "message": "m"}] if field else []
    error = {"code": code, "message": f"{code} happened", "field": field, "details": details}
    return json.dumps({"error": error}).encode()


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (404, "not_found", NotFoundError),
        (422, "invalid_input", InvalidInputError),
        (403, "forbidden", ForbiddenError),
        (409, "conflict", ConflictError),
        (413, "payload_too_large", PayloadTooLargeError),
        (429, "rate_limited", RateLimitedError),
        (405, "method_not_allowed", KiokuError),
    ],
)
def test_every_error_code_maps_to_its_class(status: int, code: str, cls: type[KiokuError]) -> None:
    kioku = Client(app=answering(status, error_body(code, "key")))
    with kioku, pytest.raises(KiokuError) as caught:
        kioku.get_state("default", "key")
    error = caught.value
    assert type(error) is cls
    assert (error.code, error.status_code, error.field) == (code, status, "key")
    assert error.message == f"{code} happened" and error.details == [
        {"field": "key", "message": "m"}
    ]


def test_an_answer_that_is_not_kiokus_error_shape_is_still_a_kioku_error() -> None:
    kioku = Client(app=answering(502, b"<html>bad gateway</html>", "text/html"))
    with kioku, pytest.raises(KiokuError) as caught:
        kioku.health()
    assert caught.value.status_code == 502 and caught.value.message == "HTTP 502 Bad Gateway"


def test_a_server_that_is_not_there_raises_httpx_connect_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with Client(url, timeout=5) as kioku, pytest.raises(httpx.ConnectError):
            kioku.health()


def test_text_a_request_cannot_encode_is_refused_by_the_server_naming_the_field(
    kioku: Client,
) -> None:
    # A lone surrogate (what Python makes of undecodable bytes in argv) used to crash the
    # client while encoding the body; now the server answers 422 with the field.
    with pytest.raises(InvalidInputError) as caught:
        kioku.remember("default", "ok", content="a\udfff")
    assert (caught.value.status_code, caught.value.field) == (422, "content")
    with pytest.raises(InvalidInputError) as caught:
        kioku.set_state("default", "k", {"a": {"\udfff": 1}})
    assert (caught.value.status_code, caught.value.field) == (422, "value.a")
    assert kioku.list_memories("default").items == []
    # Text that is valid Unicode still travels as UTF-8, unescaped.
    assert kioku.remember("default", "日本語のメモ").summary == "日本語のメモ"
