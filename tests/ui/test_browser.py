"""The web UI in a real headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright)
against a real ``kioku serve`` that needs keys, on a loopback port.

One person's whole session, in order: sign in with the keyboard, create a context, add an
English and a Japanese memory, search both, pin one and find it in the pinned view, set a
state key with a 2 s TTL and watch it expire, give feedback, run Sleep and roll it back; then
a viewer who sees no edit controls and whose hand-made post is refused. Screenshots of the
main pages go to ``$KIOKU_TEST_ARTIFACTS`` (default ``test-artifacts/ui/`` in the repo).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import cli, running_server
from tests.ui.browser import shoot

pytestmark = pytest.mark.e2e

ENV = {"KIOKU_SLEEP_INTERVAL_SECONDS": "0"}  # only the Sleep runs this test starts


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    data = tmp_path_factory.mktemp("ui-browser")
    keys: dict[str, str] = {}
    for role in ("owner", "viewer"):
        created = cli(data, "keys", "create", f"ui-{role}", "--role", role, "--json", env=ENV)
        keys[role] = json.loads(created)["key"]
    with running_server(data, env=ENV) as base:
        yield base, keys


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


def sign_in_with_the_keyboard(page: Page, base: str, key: str) -> None:
    page.goto(f"{base}/ui/")
    expect(page).to_have_title("Sign in · kioku")
    shoot(page, "signin")
    page.keyboard.type(key)  # the key field has the focus
    page.keyboard.press("Enter")
    expect(page).to_have_title("Contexts · kioku")


def add_memory(page: Page, summary: str, content: str, tags: str = "") -> None:
    form = page.locator("form", has=page.get_by_role("button", name="Add memory"))
    form.get_by_label("Summary").fill(summary)
    form.get_by_label("Content").fill(content)
    form.get_by_label("Tags").fill(tags)
    form.get_by_role("button", name="Add memory").click()
    expect(page.locator("h1")).to_have_text(summary)


def search(page: Page, query: str) -> None:
    box = page.get_by_role("searchbox", name="Search")
    box.fill(query)
    box.press("Enter")
    expect(page.locator("#results")).to_contain_text(query)


def until_gone(page: Page, text: str, seconds: float) -> bool:
    """Reload until ``text`` is off the page (the state lane's expiry), at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page.reload()
        if text not in page.locator("#state-table").inner_text():
            return True
        time.sleep(0.5)
    return False


def wait_for_embeddings(page: Page, base: str, seconds: float) -> None:
    """Until the overview shows no memory waiting for its vector (Sleep merges by vector)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page.goto(f"{base}/ui/")
        if "pending" not in page.locator("table").inner_text():
            return
        time.sleep(0.5)
    raise AssertionError("memories were still waiting for their embeddings")


def test_an_owner_uses_every_page(server: tuple[str, dict[str, str]], page: Page) -> None:
    base, keys = server
    sign_in_with_the_keyboard(page, base, keys["owner"])

    # A context, made from the overview's form.
    page.get_by_label("Name", exact=True).fill("trip")
    page.get_by_label("Description").fill("Planning the team offsite / 合宿の計画")
    page.get_by_role("button", name="Create context").click()
    expect(page).to_have_title("trip: memories · kioku")
    context_url = page.url

    add_memory(page, "The team offsite is in Kyoto in May", "Book the ryokan by March.", "travel")
    english_url = page.url
    page.goto(context_url)
    add_memory(page, "京都の合宿は五月に開催します", "旅館は三月までに予約すること。", "旅行")
    japanese_url = page.url
    expect(page.locator(".fulltext")).to_have_text("旅館は三月までに予約すること。")
    expect(page.get_by_text("manual", exact=True).first).to_be_visible()  # UI writes: manual

    page.goto(context_url)
    search(page, "offsite Kyoto")
    first = page.locator(".results .memory").first
    expect(first).to_contain_text("The team offsite is in Kyoto in May")
    expect(first.locator(".breakdown")).to_contain_text("lexical")
    expect(first).to_contain_text("trusted")
    search(page, "合宿")
    expect(page.locator(".results .memory").first).to_contain_text("京都の合宿は五月に開催します")
    shoot(page, "context-search-japanese")

    # Pin the Japanese memory; it is in the pinned view, the English one is not.
    page.goto(japanese_url)
    page.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Pinned")
    page.get_by_role("navigation", name="Context trip").get_by_role("link", name="Pinned").click()
    expect(page).to_have_title("trip: pinned and upcoming · kioku")
    expect(page.locator("#pinned-list")).to_contain_text("京都の合宿は五月に開催します")
    expect(page.locator("#pinned-list")).not_to_contain_text("offsite")
    shoot(page, "pinned")

    # Feedback on the English memory, counted on its page and on the statistics page.
    page.goto(english_url)
    page.get_by_label("Helpful", exact=True).check()
    page.get_by_label("For the query (optional)").fill("where is the offsite")
    page.get_by_role("button", name="Give feedback").click()
    expect(page.locator("#helpful-count")).to_have_text("1")
    expect(page.locator("table", has_text="Feedback history")).to_contain_text(
        "where is the offsite"
    )
    shoot(page, "memory")
    page.get_by_role("link", name="Feedback", exact=True).click()
    expect(page.locator("#feedback-table")).to_contain_text("The team offsite is in Kyoto")

    # State with a 2 s TTL: shown with its time left, then gone.
    page.get_by_role("link", name="State", exact=True).click()
    page.get_by_label("Key", exact=True).fill("current_step")
    page.get_by_label("Value").fill('{"step": 1, "メモ": "予約"}')
    page.get_by_label("TTL (seconds)").fill("2")
    page.get_by_role("button", name="Set").click()
    row = page.locator("#state-table tr", has_text="current_step")
    expect(row).to_contain_text("予約")
    expect(row).to_contain_text(" s")
    shoot(page, "state")
    assert until_gone(page, "current_step", seconds=20), "the state key never expired"

    # Sleep merges a duplicate (once both are embedded); the rollback brings it back.
    page.goto(context_url)
    add_memory(page, "The team offsite is in Kyoto in May", "Book the ryokan by March.", "travel")
    wait_for_embeddings(page, base, seconds=60)
    page.goto(context_url)
    page.get_by_role("link", name="Sleep", exact=True).click()
    page.get_by_label("Phases").select_option("full")
    page.get_by_role("button", name="Run Sleep now").click()
    expect(page.locator("#run-status")).to_have_text("done")
    expect(page.locator("#run-changes")).to_contain_text("Merged «The team offsite is in Kyoto")
    shoot(page, "sleep-run")
    page.get_by_role("button", name="Roll back this run").click()
    expect(page.locator("#run-status")).to_have_text("rolled_back")
    expect(page.get_by_role("status")).to_contain_text("changes undone")
    page.goto(context_url)
    expect(page.locator(".results .memory", has_text="offsite is in Kyoto")).to_have_count(2)

    page.goto(english_url)
    page.get_by_role("link", name="Graph view").click()
    # Drawn once laid out, or (no association learned in this session) the empty state.
    expect(page.locator("#graph[data-ready], #graph-empty")).to_be_visible()
    shoot(page, "graph")
    page.goto(f"{base}/ui/")
    shoot(page, "overview")
    page.get_by_role("link", name="API keys").click()
    expect(page.locator("#keys-table")).to_contain_text("ui-viewer")
    shoot(page, "keys")


def test_a_viewer_cannot_edit(server: tuple[str, dict[str, str]], page: Page) -> None:
    base, keys = server
    sign_in_with_the_keyboard(page, base, keys["viewer"])
    expect(page.get_by_role("link", name="API keys")).to_have_count(0)
    expect(page.get_by_role("button", name="Create context")).to_have_count(0)
    # Keyboard only: the first Tab lands on "Skip to content", which moves into <main>.
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("Enter")
    expect(page.locator(":focus")).to_have_attribute("id", "main")
    page.get_by_role("link", name="default", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page).to_have_title("default: memories · kioku")
    expect(page.get_by_role("button", name="Add memory")).to_have_count(0)
    # A form post made by hand, with the session's own CSRF token: the server refuses it.
    status = page.evaluate(
        """async () => {
            const csrf = document.querySelector('input[name=csrf]').value;
            const body = new URLSearchParams({csrf, summary: 'written by a viewer'});
            const url = location.pathname + '/memories';
            return (await fetch(url, {method: 'POST', body})).status;
        }"""
    )
    assert status == 403
    page.reload()
    expect(page.get_by_text("written by a viewer")).to_have_count(0)
    shoot(page, "viewer-context")
