"""A Sleep run's page in a real headless Chromium after a merge that logs a link it did not
change (the older copy's link folds into the newer's link of equal weight): the page tells
the merge and no ``0.500 → 0.500``; its screenshot is ``sleep-run-merge.png``, and the
overview's after it ``overview-after-merge.png``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import running_server
from tests.ui.browser import shoot
from tests.ui.test_what_changed import DUPLICATE, SAME_SHOWN

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("sleep-page")
    with running_server(data, "--dev", env={"KIOKU_SLEEP_INTERVAL_SECONDS": "0"}) as url:
        yield url


def test_the_run_page_tells_the_merge_and_no_unchanged_link(chromium: Browser, base: str) -> None:
    api = f"{base}/api/v1/contexts/default/memories?wait=true"
    hub = httpx.post(api, json={"summary": "Notes on the staging environment"}).json()["id"]
    for _ in range(2):
        made = httpx.post(api, json={"summary": DUPLICATE, "linked_memory_ids": [hub]})
        assert made.status_code == 201, made.text
    page = chromium.new_page(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    try:
        page.goto(f"{base}/ui/")
        page.get_by_role("button", name="Continue as the local owner").click()
        page.goto(f"{base}/ui/contexts/default/sleep")
        page.get_by_label("Phases").select_option("full")
        page.get_by_role("button", name="Run Sleep now").click()
        expect(page.locator("#run-status")).to_have_text("done")
        said = page.locator("#run-changes").inner_text()
        page.get_by_text("Every action as logged").click()  # the exact values, opened
        shoot(page, "sleep-run-merge")
        logged = page.locator("details tbody tr").all_inner_texts()
        page.goto(f"{base}/ui/")
        shoot(page, "overview-after-merge")  # 2 memories "+ 1 merged", embedded "3 of 3"
    finally:
        page.close()
    assert f"Merged «{DUPLICATE}» into «{DUPLICATE}»" in said
    assert not SAME_SHOWN.search(said), said
    assert "0.0000" not in said  # a decay of 1e-7 is "less than 0.0001", not "by 0.0000"
    # The unchanged link is still in the table of every action: a merge edge row whose
    # changed fields leave the weight out.
    assert any(
        row.split("\t")[1:3] == ["merge", "edge"] and "created_at" in row and "weight" not in row
        for row in logged
    ), logged
