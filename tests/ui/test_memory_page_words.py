"""A memory's page counts in words a person reads ("once", not "1 times")."""

from __future__ import annotations

from collections.abc import Callable

from tests.ui.conftest import Browser


def test_accesses_are_counted_in_words(
    browser: Callable[..., Browser],
    key_of: Callable[..., str],
) -> None:
    person = browser()
    assert person.sign_in(key_of("owner")).status_code == 303
    made = person.post("/ui/contexts/default/memories", {"summary": "Alice drinks green tea"})
    assert made.status_code == 303, made.text
    page_of = made.headers["location"]
    # Reading a memory's page is an access, like `get_memory`: the page counts itself.
    for words in ("once, last", "twice, last", "3 times, last"):
        text = person.get(page_of).text
        assert f"<dt>Accessed</dt><dd>{words}" in text, text[text.find("Accessed") :][:80]
        assert "1 times" not in text and "2 times" not in text
