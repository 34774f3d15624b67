"""Debian's Chromium for the UI's browser tests (never a downloaded browser), and where their
screenshots go.

Where Chromium is missing, a browser test is skipped, and the run ends by naming every test
that did not run and the command that installs Chromium (``tests/ui/conftest.py``): a
contributor without it still runs the rest of ``make test`` and learns what was left out. In
CI (``CI`` set) a missing Chromium fails the tests instead: ``.ci/run`` installs it, and a CI
run must never pass without them. ``KIOKU_TEST_CHROMIUM`` names another binary (the test of
this summary points it at one that does not exist)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = os.environ.get("KIOKU_TEST_CHROMIUM") or "/usr/bin/chromium"
INSTALL = "sudo apt-get install -y --no-install-recommends chromium fonts-noto-cjk"
MISSING = f"{CHROMIUM} is missing"
"""The start of the skip reason; the summary at the end of the run looks for it."""
# As root in a container: no sandbox; and no calls home (this machine has no internet).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
REPO = Path(__file__).resolve().parents[2]


def artefacts() -> Path:
    folder = Path(os.environ.get("KIOKU_TEST_ARTIFACTS") or REPO / "test-artifacts") / "ui"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page: Page, name: str) -> None:
    page.screenshot(path=str(artefacts() / f"{name}.png"), full_page=True)


@contextmanager
def launched_chromium() -> Iterator[Browser]:
    """Chromium, headless; skipped where it is not installed (failed in CI)."""
    if shutil.which(CHROMIUM) is None:
        reason = f"{MISSING}: install it with `{INSTALL}` (.ci/run does); never downloaded"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
