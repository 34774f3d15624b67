"""LangGraph namespaces ↔ kioku context names: a reversible encoding.

A namespace is a tuple of labels (any non-empty strings without ``.``); a context name matches
``^[a-z0-9][a-z0-9_-]{0,63}$``. The store's namespace ``(l1, l2, ...)`` lives in the context

    <prefix>-<enc(l1)>-<enc(l2)>-...

where ``enc`` keeps ``a``-``z`` and ``0``-``9`` as they are and writes every other character
as ``_`` followed by the two lowercase hex digits of each of its UTF-8 bytes: ``-`` is
``_2d``, ``_`` is ``_5f``, ``A`` is ``_41``, ``@`` is ``_40``, ``é`` is ``_c3_a9``. So
``("users", "alice", "memories")`` is ``lg-users-alice-memories`` and ``("users",
"Bob-1")`` is ``lg-users-_42ob_2d1``. ``-`` never occurs inside an encoded label, so splitting
on it and decoding each part gives the labels back.

A name that would be longer than 64 characters (or would look like a context id, a uuid) is
``<prefix>--<first 40 hex digits of the SHA-256 of the namespace as JSON>`` instead, and the
namespace is read back from the context's description, which the store writes as
``LangGraph store namespace: ["users", ...]`` for every context it creates (and checks
against the hash when reading it). ``--`` never occurs in the first form (labels are not
empty), so the two cannot be confused.

Only names that decode to exactly themselves are the store's: a context such as
``lg-Notes`` or ``lg-_61`` (not the canonical spelling of any namespace) is ignored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from kioku.models.base import UUID_PATTERN

MAX_NAME = 64
HASH_DIGITS = 40
MAX_DESCRIPTION = 2000
DESCRIPTION_MARK = "LangGraph store namespace: "
PREFIX_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_]{0,15}$")
"""A prefix is short (the hashed form must fit in 64 characters) and holds no ``-``."""

Namespace = tuple[str, ...]


def check_prefix(prefix: str) -> str:
    """``prefix`` if it can start the store's context names; a ValueError says why not."""
    if not PREFIX_PATTERN.match(prefix):
        raise ValueError(
            f"context_prefix must match {PREFIX_PATTERN.pattern} (no '-'), got {prefix!r}"
        )
    return prefix


def encode_label(label: str) -> str:
    """``a``-``z`` and ``0``-``9`` as they are, every other character ``_`` + hex per byte."""
    parts: list[str] = []
    for char in label:
        if "a" <= char <= "z" or "0" <= char <= "9":
            parts.append(char)
        else:
            parts.extend(f"_{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(parts)


_ENCODED = re.compile(r"(?:[a-z0-9]|_[0-9a-f]{2})+")


def decode_label(text: str) -> str | None:
    """The label ``text`` is the canonical encoding of, or None."""
    if not _ENCODED.fullmatch(text):
        return None
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "_":
            raw.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.append(ord(text[i]))
            i += 1
    try:
        label = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return label if encode_label(label) == text else None


def _digest(namespace: Sequence[str]) -> str:
    text = json.dumps(list(namespace), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_DIGITS]


def context_name(namespace: Sequence[str], prefix: str = "lg") -> str:
    """The kioku context that holds ``namespace`` (see the module's docstring)."""
    if not namespace:
        raise ValueError("a namespace has at least one label")
    plain = prefix + "-" + "-".join(encode_label(label) for label in namespace)
    if len(plain) <= MAX_NAME and not UUID_PATTERN.match(plain):
        return plain
    return f"{prefix}--{_digest(namespace)}"


def context_description(namespace: Sequence[str], prefix: str = "lg") -> str:
    """What the store writes as the description of the context it creates for ``namespace``
    (cut to kioku's 2,000 characters). A namespace whose context name is hashed must fit
    whole, since it is read back from there: a longer one is refused with a ValueError."""
    description = DESCRIPTION_MARK + json.dumps(list(namespace), ensure_ascii=False)
    hashed = context_name(namespace, prefix).startswith(prefix + "--")
    if len(description) > MAX_DESCRIPTION and hashed:
        raise ValueError(
            f"this namespace is too long for kioku: as JSON it must stay under "
            f"{MAX_DESCRIPTION - len(DESCRIPTION_MARK)} characters"
        )
    return description[:MAX_DESCRIPTION]


def namespace_of(name: str, description: str = "", prefix: str = "lg") -> Namespace | None:
    """The namespace a context of the store holds, from its name (and, for a hashed name,
    its description); None for any other context."""
    head = prefix + "-"
    if not name.startswith(head):
        return None
    rest = name[len(head) :]
    if rest.startswith("-"):
        return _from_description(name, description, prefix)
    labels = [decode_label(part) for part in rest.split("-")]
    if any(label is None for label in labels):
        return None
    namespace = tuple(label for label in labels if label is not None)
    return namespace if context_name(namespace, prefix) == name else None


def _from_description(name: str, description: str, prefix: str) -> Namespace | None:
    if not description.startswith(DESCRIPTION_MARK):
        return None
    try:
        labels = json.loads(description[len(DESCRIPTION_MARK) :])
    except ValueError:
        return None
    if not isinstance(labels, list) or not labels:
        return None
    if not all(isinstance(label, str) and label for label in labels):
        return None
    namespace = tuple(str(label) for label in labels)
    return namespace if context_name(namespace, prefix) == name else None
