"""The UI's search can ask for nothing below a confidence (issue 32), and says what it held."""

from __future__ import annotations

from collections.abc import Callable

from tests.ui.conftest import Browser


def test_the_search_form_holds_back_a_set_below_the_level_asked(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    person = browser()
    assert person.sign_in(key_of("owner")).status_code == 303
    made = person.post("/ui/contexts/default/memories", {"summary": "Alice drinks green tea"})
    assert made.status_code == 303, made.text
    form = person.get("/ui/contexts/default")
    assert 'name="min_confidence"' in form.text
    held = person.get(
        "/ui/contexts/default", params={"q": "beach house rules", "min_confidence": "moderate"}
    )
    assert held.status_code == 200
    assert "1 withheld: the confidence is below moderate" in held.text
    assert "Nothing shown: recall is not sure enough." in held.text
    assert "<option selected>moderate</option>" in held.text
    shown = person.get(
        "/ui/contexts/default", params={"q": "Alice drinks green tea", "min_confidence": "moderate"}
    )
    assert "Alice drinks green tea" in shown.text and "withheld" not in shown.text
    wrong = person.get("/ui/contexts/default", params={"q": "tea", "min_confidence": "certain"})
    assert wrong.status_code == 422
