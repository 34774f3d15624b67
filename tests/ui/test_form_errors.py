"""In a real headless Chromium: a form refused at the bottom of a long page comes back scrolled
to its error, with the focus on it (it used to land below the fold)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import running_server
from tests.ui.browser import shoot

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("form-errors"), "--dev") as url:
        yield url


def test_a_refused_form_shows_its_error_in_view(base: str, chromium: Browser) -> None:
    items = [{"summary": f"Meeting note number {i} about the quarterly plan"} for i in range(20)]
    made = httpx.post(f"{base}/api/v1/contexts/default/memories/batch", json={"items": items})
    assert made.status_code == 200, made.text
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(f"{base}/ui/")
        page.get_by_role("button", name="Continue as the local owner").click()
        page.goto(f"{base}/ui/contexts/default")
        form = page.locator("form", has=page.get_by_role("button", name="Add memory"))
        form.get_by_label("Summary").fill("A note with an impossible importance")
        form.get_by_label("Importance").fill("7")
        form.get_by_role("button", name="Add memory").click()
        error = page.locator("#form-error")
        expect(error).to_contain_text("importance")
        expect(error).to_be_focused()
        expect(error).to_be_in_viewport()
        shoot(page, "form-error")
    finally:
        page.close()
