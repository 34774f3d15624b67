"""The UI's search says where its time went, like REST's recall (issue 31)."""

from __future__ import annotations

from collections.abc import Callable

from tests.ui.conftest import Browser


def test_the_search_page_carries_server_timing(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    person = browser()
    assert person.sign_in(key_of("owner")).status_code == 303
    made = person.post("/ui/contexts/default/memories", {"summary": "Alice drinks green tea"})
    assert made.status_code == 303, made.text
    page = person.get("/ui/contexts/default", params={"q": "Alice tea"})
    assert page.status_code == 200
    names = [part.split(";dur=")[0] for part in page.headers["server-timing"].split(", ")]
    assert names[0] == "scope"
    assert {"legs", "fusion", "rerank", "hits"} <= set(names)
    assert "Alice" not in page.headers["server-timing"]
    browse = person.get("/ui/contexts/default")
    assert browse.status_code == 200
    assert "server-timing" not in browse.headers  # no recall, nothing to time
