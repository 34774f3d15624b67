"""Without Chromium, ``make test`` still runs, and ends by naming the browser tests that did
not run and the command that installs Chromium (they used to be left out unsaid); in CI a
missing Chromium fails them instead. Run as a separate pytest on one browser test module,
with ``KIOKU_TEST_CHROMIUM`` pointing at a binary that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL = "apt-get install -y --no-install-recommends chromium fonts-noto-cjk"

MODULE = "tests/ui/test_sleep_run_page.py"
TEST = f"{MODULE}::test_the_run_page_tells_the_merge_and_no_unchanged_link"


def pytest_without_chromium(**env: str) -> subprocess.CompletedProcess[str]:
    """``pytest MODULE`` where Chromium is missing, outside CI unless ``env`` says so."""
    quiet = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", MODULE, "-p", "no:cacheprovider", "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**quiet, "KIOKU_TEST_CHROMIUM": "/nonexistent/chromium", **env},
    )  # fmt: skip


def test_the_run_ends_naming_the_browser_tests_not_run_and_the_install_command() -> None:
    done = pytest_without_chromium()
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.rstrip().splitlines()
    assert "1 skipped" in lines[-1], lines[-1]
    summary = "\n".join(lines[-6:])  # the last lines of the run, where a person looks
    assert "1 browser test did not run: /nonexistent/chromium is missing" in summary, summary
    assert f"not run: {TEST}" in summary
    assert INSTALL in summary


def test_in_ci_a_missing_chromium_fails_the_browser_tests() -> None:
    done = pytest_without_chromium(CI="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "/nonexistent/chromium is missing" in done.stdout
    assert "1 error" in done.stdout
