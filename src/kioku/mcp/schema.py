"""Make tool input schemas compact without making them less exact.

Pydantic's JSON schema repeats a ``title`` on every property and spells an optional field as
``anyOf: [X, {type: null}], default: null``. Tool lists are read by a model on every session,
so each byte costs tokens: titles go (the property name says it), model docstrings in ``$defs``
go (the argument using the model is described), and an optional field keeps only its real type
(absent already means null). Types, enums, bounds, required fields and
``additionalProperties: false`` are all kept.
"""

from __future__ import annotations

from typing import Any

_NULL = {"type": "null"}


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A smaller equivalent of ``schema`` for tool listings (input is not modified)."""
    return _schema(schema)


def _undocumented(node: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in node.items() if key != "description"}


def _schema(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":
            out[key] = {name: _schema(sub) for name, sub in value.items()}
        elif key == "$defs":
            # A model's docstring is for Python readers; the argument that uses it is described.
            out[key] = {name: _schema(_undocumented(sub)) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_schema(sub) for sub in value]
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _schema(value)
        else:
            out[key] = value
    branches = out.get("anyOf")
    if branches and _NULL in branches and out.get("default", 0) is None:
        # Optional with a null default: omitting the argument is how a caller says "none".
        rest = [branch for branch in branches if branch != _NULL]
        del out["anyOf"], out["default"]
        if len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
    return out
