"""In-process UI tests: the real app over ``httpx.ASGITransport``, a server that needs keys,
and one cookie jar per person signed in; and, for the browser tests, Debian's Chromium, with
a closing summary of the browser tests that could not run where it is missing."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from playwright.sync_api import Browser as PlaywrightBrowser

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import KeyCreate
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, make_settings
from tests.ui.browser import INSTALL, MISSING, launched_chromium

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SIGNIN_TOKEN = re.compile(r'name="signin_token" value="([^"]+)"')


class Browser:
    """One person's cookie jar over the in-process app, with the form-posting chores done."""

    def __init__(self, portal: BlockingPortal, app: Any, base_url: str) -> None:
        self._portal = portal
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
        self.csrf = ""

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._portal.call(functools.partial(self.client.request, method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        response = self.request("GET", url, **kwargs)
        found = CSRF.search(response.text)
        if found:
            self.csrf = found.group(1)
        return response

    def post(self, url: str, data: dict[str, Any] | None = None, **kwargs: Any) -> httpx.Response:
        """A form post carrying this session's CSRF token (unless ``data`` sets its own)."""
        return self.request("POST", url, data={"csrf": self.csrf, **(data or {})}, **kwargs)

    def sign_in(self, key: str) -> httpx.Response:
        form = self.get("/ui/signin")
        token = SIGNIN_TOKEN.search(form.text)
        assert token, form.text
        response = self.request(
            "POST", "/ui/signin", data={"key": key, "signin_token": token.group(1)}
        )
        if response.status_code == 303:
            self.get("/ui/")  # picks up the session's CSRF token
        return response

    def close(self) -> None:
        self._portal.call(self.client.aclose)


@pytest.fixture
def secured(tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    """A runtime that needs keys (not ``--dev``), with the fake embedder."""
    rt = open_runtime(make_settings(tmp_path, dev=False), embedder=FakeEmbedder(), clock=clock)
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture
def owner_principal(secured: Runtime) -> Principal:
    return secured.local_principal("cli")


@pytest.fixture
def key_of(secured: Runtime) -> Callable[..., str]:
    """A new key of ``role`` (in ``workspace``, default the default one)."""

    def make(role: str, workspace: str = "default", name: str = "test") -> str:
        ws = secured.store.ensure_workspace(workspace)
        principal = Principal(workspace_id=ws.id, role="owner", channel="cli")
        return secured.keys.create_key(principal, KeyCreate(name=name, role=role)).key  # type: ignore[arg-type]

    return make


@pytest.fixture
def browser(secured: Runtime) -> Iterator[Callable[..., Browser]]:
    """Open a fresh browser (own cookies) on the app: ``browser()`` or ``browser(https=True)``."""
    app = create_app(runtime=secured, with_mcp=False)
    opened: list[Browser] = []
    with start_blocking_portal() as portal:

        def open_browser(https: bool = False) -> Browser:
            base = "https://testserver" if https else "http://testserver"
            opened.append(Browser(portal, app, base))
            return opened[-1]

        try:
            yield open_browser
        finally:
            for b in opened:
                b.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[PlaywrightBrowser]:
    """Debian's headless Chromium for a module's browser tests."""
    with launched_chromium() as browser:
        yield browser


NOT_RUN: list[str] = []
"""The browser tests skipped because Chromium is missing, in the order they were met."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and isinstance(report.longrepr, tuple) and MISSING in report.longrepr[2]:
        NOT_RUN.append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """End the run with the browser tests that did not run and how to run them."""
    if not NOT_RUN:
        return
    write, count = terminalreporter, len(NOT_RUN)
    tests = "browser test did" if count == 1 else "browser tests did"
    write.section(f"{count} {tests} not run: {MISSING}", sep="!", yellow=True)
    for nodeid in NOT_RUN:
        write.line(f"not run: {nodeid}")
    write.line(f"Install Chromium and the Japanese fonts, then run `make test` again: {INSTALL}")
