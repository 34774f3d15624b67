"""Hostile JSON for schema fuzzing: what the generated bodies never hold on their own.

Hypothesis's text strategies leave out lone UTF-16 surrogates, and a schema rarely asks for
deep nesting; both reach a JSON API all the same, as ``\\udfff`` escapes and brackets.
``flatmap_body`` (a schemathesis hook, registered on the schema) turns about half of the
generated bodies into one with a lone surrogate in a string or in an object key, or with a
value nested far past the server's limit of 32, anywhere in the body. Such a body is sent as
JSON text with ``\\u`` escapes: a ``str`` holding a surrogate cannot be written as UTF-8,
which is why a server has to refuse it rather than store it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

SURROGATES = ["\udfff", "\ud800", "a\udc80b", "\ud83d", "\ud83d\ud83d"]
"""Lone low, lone high, inside text, half an emoji, two high halves."""
DEPTHS = [33, 64, 255, 256, 900]
HOW = ["string", "key", "deep-array", "deep-object"]

Path = tuple[str | int, ...]


def places(value: Any, path: Path = ()) -> Iterator[Path]:
    """Every position in a JSON value: the value itself, then each member and item."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from places(item, (*path, index))


def hostile(value: Any, how: str, surrogate: str, depth: int) -> Any:
    """``value`` made unstorable: a surrogate in (or as) text, a surrogate key, or deep."""
    if how == "string":
        return value + surrogate if isinstance(value, str) else surrogate
    if how == "key":
        return {**value, surrogate: 1} if isinstance(value, dict) else {surrogate: value}
    nested = value
    for _ in range(depth):
        nested = [nested] if how == "deep-array" else {"a": nested}
    return nested


def mutated(body: Any, path: Path, how: str, surrogate: str, depth: int) -> bytes:
    """``body`` with the value at ``path`` made hostile, as ``\\u``-escaped JSON text."""
    if not path:
        return json.dumps(hostile(body, how, surrogate, depth)).encode()
    body = copy.deepcopy(body)
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = hostile(parent[path[-1]], how, surrogate, depth)
    return json.dumps(body).encode()


def flatmap_body(context: Any, body: Any) -> st.SearchStrategy[Any]:
    """The generated body as it is, or a hostile variant of it (the hook's name says where
    schemathesis applies it). A surrogate goes into text the body already holds, so the rest
    stays valid and the request reaches storage, where a surrogate used to crash it."""
    if not isinstance(body, dict | list):
        return st.just(body)
    everywhere = list(places(body))
    texts = [path for path in everywhere if isinstance(_at(body, path), str)] or everywhere

    def variant(how: str) -> st.SearchStrategy[bytes]:
        return st.builds(
            lambda where, surrogate, depth: mutated(body, where, how, surrogate, depth),
            st.sampled_from(texts if how == "string" else everywhere),
            st.sampled_from(SURROGATES),
            st.sampled_from(DEPTHS),
        )

    return st.one_of(st.just(body), st.sampled_from(HOW).flatmap(variant))


def _at(body: Any, path: Path) -> Any:
    for part in path:
        body = body[part]
    return body
