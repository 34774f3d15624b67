"""The namespace ↔ context name encoding: reversible, always a valid context name, and only
the store's own canonical names decode."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kioku.integrations.langgraph._namespaces import (
    MAX_NAME,
    context_description,
    context_name,
    decode_label,
    encode_label,
    namespace_of,
)
from kioku.models.base import CONTEXT_NAME_PATTERN, UUID_PATTERN

labels = st.text(min_size=1, max_size=40).filter(lambda s: "." not in s and "\x00" not in s)
namespaces = st.lists(labels, min_size=1, max_size=6).map(tuple)


@given(namespaces)
def test_every_namespace_gets_a_valid_name_that_decodes_back(namespace: tuple[str, ...]) -> None:
    name = context_name(namespace)
    assert re.match(CONTEXT_NAME_PATTERN, name) and not UUID_PATTERN.match(name)
    assert len(name) <= MAX_NAME
    assert namespace_of(name, context_description(namespace)) == namespace


@given(namespaces, namespaces)
def test_different_namespaces_get_different_names(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    if a != b:
        assert context_name(a) != context_name(b)


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        (("users", "alice", "memories"), "lg-users-alice-memories"),
        (("users", "Bob-1"), "lg-users-_42ob_2d1"),
        (("a_b", "c d"), "lg-a_5fb-c_20d"),
        (("alice@example", "é"), "lg-alice_40example-_c3_a9"),
    ],
)
def test_the_documented_examples(namespace: tuple[str, ...], name: str) -> None:
    assert context_name(namespace) == name
    assert namespace_of(name) == namespace  # a plain name needs no description


def test_a_long_namespace_is_hashed_and_read_back_from_the_description() -> None:
    namespace = ("tenants", "x" * 80)
    name = context_name(namespace)
    assert re.fullmatch(r"lg--[0-9a-f]{40}", name)
    description = context_description(namespace)
    assert description == 'LangGraph store namespace: ["tenants", "' + "x" * 80 + '"]'
    assert namespace_of(name, description) == namespace
    assert namespace_of(name, "") is None  # nothing to read it from
    forged = context_description(("tenants", "y" * 80))
    assert namespace_of(name, forged) is None  # a description that is not its own


def test_a_name_that_would_look_like_an_id_is_hashed() -> None:
    prefix = "abcdef12"
    namespace = ("1234", "5678", "9abc", "def012345678")
    name = context_name(namespace, prefix)
    assert name.startswith("abcdef12--") and not UUID_PATTERN.match(name)
    assert namespace_of(name, context_description(namespace, prefix), prefix) == namespace


@pytest.mark.parametrize(
    "name",
    ["default", "lg", "lg-", "lg-a--b", "lg-Notes", "lg-_61", "lg-_zz", "lg-_c3", "lgx-a", "lg-a-"],
)
def test_other_contexts_are_not_the_stores(name: str) -> None:
    assert namespace_of(name) is None


def test_labels_encode_every_character_but_lowercase_and_digits() -> None:
    assert encode_label("abc019") == "abc019"
    assert encode_label("A-_ .") == "_41_2d_5f_20_2e"
    assert decode_label("_41_2d_5f_20_2e") == "A-_ ."
    assert decode_label("_61") is None  # "a" is spelled "a"


def test_a_namespace_too_long_for_a_description_is_refused() -> None:
    with pytest.raises(ValueError, match="too long"):
        context_description(("x" * 3000,))
