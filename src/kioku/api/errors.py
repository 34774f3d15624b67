"""Domain errors and validation errors → JSON error bodies (statuses: ``kioku.errors``)."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from kioku.errors import KiokuError, http_status
from kioku.models.json_input import MAX_JSON_DEPTH


def error_body(code: str, message: str, field: str | None, details: list[Any]) -> dict[str, Any]:
    """``{"error": {"code", "message", "field", "details"}}``: the shape of every error."""
    return {"error": {"code": code, "message": message, "field": field, "details": details}}


class ErrorDetail(BaseModel):
    """What went wrong, where (``field`` names the input at fault, when one is)."""

    code: str = Field(description="not_found, invalid_input, forbidden, conflict, ...")
    message: str
    field: str | None
    details: list[Any] = Field(description="Every failed field, for invalid input.")


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


M = TypeVar("M", bound=BaseModel)

_ERRORS = {
    401: "No or an unknown, revoked or expired API key.",
    403: "The key's role or context list does not allow this.",
    404: "No such object in the caller's workspace (another workspace's ids answer the same).",
    409: "The change conflicts with the current state (say, a run in progress).",
    413: "The request body or a field is over its size limit.",
    422: "Invalid input; `field` names the first field at fault.",
    429: "Rate limited; retry after `Retry-After` seconds.",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in _ERRORS.items()
}
"""Declared on every API route, so the OpenAPI document tells every answer a route gives."""


def query_model(model: type[M], names: dict[str, str] | None = None, **values: Any) -> M:
    """Build ``model`` from a route's query parameters; a refusal is a 422 naming the
    parameter, as FastAPI's own validation gives (not a 500: the values came from the
    client, and only here does the model see them together). ``names`` maps a model field
    to its query parameter where they differ (``tags`` is sent as ``tag``)."""
    try:
        return model(**values)
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            field, *rest = error["loc"] or ("",)
            # Keep list positions, drop pydantic's union branch tags ("constrained-str").
            where = [(names or {}).get(str(field), field), *(p for p in rest if isinstance(p, int))]
            errors.append({**error, "loc": ("query", *where)})
        raise RequestValidationError(errors) from None


_SOURCES = ("body", "query", "path", "header", "cookie")


def _field_path(error: dict[str, Any]) -> str:
    """``items[1].content``: where in the request the error is. The first element of the
    location says where the value came from (body, query, path, header); an error about the
    body as a whole (not JSON, not an object, a bad key at its top) is named ``body``."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":
        return "body"  # pydantic's location is a character offset, no field
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in _SOURCES else loc)]
    path = ""
    for part in parts:
        path += f"[{part}]" if part.isdigit() else (f".{part}" if path else part)
    return path or "body"


async def _kioku_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, KiokuError)
    status = http_status(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(
        error_body(exc.code, exc.message, exc.field, exc.details), status, headers=headers
    )


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    details = [{"field": _field_path(e), "message": e.get("msg", "invalid")} for e in exc.errors()]
    first = details[0] if details else {"field": None, "message": "invalid request"}
    message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
    return JSONResponse(error_body("invalid_input", message, first["field"], details), 422)


_UNPARSED = {
    RecursionError: f"nests arrays/objects far deeper than {MAX_JSON_DEPTH} levels",
    UnicodeDecodeError: "is not UTF-8 text",
}


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, tuple(_UNPARSED)):
        # FastAPI could not parse the body at all (JSON nested thousands deep overflows the
        # parser's stack; bytes that are not UTF-8): the field is the body, as for bad JSON.
        problem = next(m for kind, m in _UNPARSED.items() if isinstance(exc.__cause__, kind))
        details = [{"field": "body", "message": problem}]
        return JSONResponse(error_body("invalid_input", f"body: {problem}", "body", details), 422)
    codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
    return JSONResponse(
        error_body(codes.get(exc.status_code, "http_error"), str(exc.detail), None, []),
        exc.status_code,
        headers=getattr(exc, "headers", None),
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the translations on the app."""
    app.add_exception_handler(KiokuError, _kioku_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
