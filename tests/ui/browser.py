"""Debian's Chromium for the UI's browser tests (never a downloaded browser), and where their
screenshots go."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
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
    """Chromium, headless; a clear failure where it is not installed."""
    if shutil.which(CHROMIUM) is None:
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium "
            "fonts-noto-cjk; .ci/run does). The browser tests never download a browser."
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
