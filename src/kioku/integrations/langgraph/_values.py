"""LangGraph items ↔ kioku memories, and LangGraph's value filters.

One item is one memory of its namespace's context:

- ``type``: ``langgraph`` when the item is indexed for search, ``langgraph-noindex`` when it is
  not (``index=False``, or none of its index fields holds text), so that ``recall`` can be asked
  for indexed items only and a listing for both;
- ``tags``: ``["lgkey:" + the first 40 hex digits of the SHA-256 of the key]``, the stable key
  of the item within its context (``list_memories`` filters by tag); the key itself is in the
  envelope below, which is checked, so a hash collision cannot return another key's value;
- ``content``: first line, the envelope ``{"langgraph_store": 1, "namespace": [...], "key": ...,
  "value": {...}}`` as one line of JSON (JSON text never holds a raw newline), which is what
  ``get`` and ``search`` read back; then, when the searchable text did not fit the summary, a
  newline and the whole searchable text;
- ``summary``: the searchable text (the texts of the index fields, one a line, as LangGraph's
  own ``get_text_at_path`` extracts them: ``"$"`` is the whole value as JSON), cut to kioku's
  500 characters; for an item that is not indexed, ``langgraph item: <key>``.

What kioku embeds is the summary, then the content, up to 2,048 characters: the searchable text
first. kioku's keyword index covers the whole content, so a query's words also match the
envelope (field names and values outside the index fields) by keyword: ``index`` decides what
an item is ranked and embedded by, not every word it can be found by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.store.base import get_text_at_path

from kioku.models import Memory

INDEXED_TYPE = "langgraph"
UNINDEXED_TYPE = "langgraph-noindex"
ITEM_TYPES = [INDEXED_TYPE, UNINDEXED_TYPE]
KEY_TAG_PREFIX = "lgkey:"
ENVELOPE = "langgraph_store"
ENVELOPE_VERSION = 1
MAX_SUMMARY = 500


def key_tag(key: str) -> str:
    """The tag that finds ``key``'s memory within its context."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return KEY_TAG_PREFIX + digest


def searchable_text(value: Mapping[str, Any], fields: Sequence[str] | Literal[False]) -> str:
    """The text of ``value`` that search ranks by: each field path's text, one a line."""
    if fields is False:
        return ""
    texts: list[str] = []
    for path in fields:
        texts.extend(text.strip() for text in get_text_at_path(dict(value), path))
    return "\n".join(text for text in texts if text)


def _cut(text: str, limit: int = MAX_SUMMARY) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Written:
    """The fields of the memory that holds one item."""

    summary: str
    content: str
    type: str
    tags: list[str]


def to_memory(
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    fields: Sequence[str] | Literal[False],
) -> Written:
    """The memory that holds ``value`` under ``namespace``/``key`` (a TypeError if ``value``
    is not JSON)."""
    envelope = {
        ENVELOPE: ENVELOPE_VERSION,
        "namespace": list(namespace),
        "key": key,
        "value": dict(value),
    }
    line = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    text = searchable_text(value, fields)
    if not text:
        summary = _cut(f"langgraph item: {key}".strip())
        return Written(summary, line, UNINDEXED_TYPE, [key_tag(key)])
    summary = _cut(text)
    content = line if summary == text else f"{line}\n{text}"
    return Written(summary, content, INDEXED_TYPE, [key_tag(key)])


def from_memory(memory: Memory) -> tuple[str, dict[str, Any]] | None:
    """``(key, value)`` of the item a memory holds; None if it holds none (not the store's,
    or its content was edited out of shape)."""
    if memory.type not in ITEM_TYPES:
        return None
    line = memory.content.split("\n", 1)[0]
    try:
        envelope = json.loads(line)
    except ValueError:
        return None
    if not isinstance(envelope, dict) or envelope.get(ENVELOPE) != ENVELOPE_VERSION:
        return None
    key, value = envelope.get("key"), envelope.get("value")
    if not isinstance(key, str) or not isinstance(value, dict):
        return None
    if key_tag(key) not in memory.tags:
        return None
    return key, value


# ------------------------------------------------------------ filters


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a ``SearchOp.filter``: every top-level field given must
    match, exactly or by the operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``
    (as LangGraph's InMemoryStore compares: a nested object matches field by field, a list
    element by element; the order operators compare as numbers, and a value that is missing
    or not a number does not match them)."""
    if not conditions:
        return True
    return all(_compare(value.get(name), wanted) for name, wanted in conditions.items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(name).startswith("$") for name in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(name), value) for name, value in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return actual == wanted


_ORDER = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    order = _ORDER.get(op)
    if order is None:
        raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt, $lte")
    try:
        return order(float(actual), float(operand))
    except (TypeError, ValueError):
        return False
