"""The machine's Chromium, driven by Playwright, for the dashboard's tests.

Playwright cannot download a browser here, so it launches Debian's `chromium` package
(`.ci/run` installs it). Without it the tests that need it are skipped, except where
MEMCASTLE_TEST_REQUIRE_CHROMIUM is set (CI), where its absence fails them.

A `Tab` is one page of the dashboard with what it did recorded: every console error and
uncaught exception, and every request it made, so a test can say there were none it should
not have made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Chromium refuses its sandbox to root, which the CI container is.
ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("MEMCASTLE_TEST_REQUIRE_CHROMIUM"):
        pytest.fail(f"{CHROMIUM} is missing, and MEMCASTLE_TEST_REQUIRE_CHROMIUM is set")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")


@contextmanager
def chromium() -> Iterator[object]:
    """A running Chromium for the block (a `playwright.sync_api.Browser`)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Tab:
    """A page, and what it logged and asked for."""

    page: object
    origin: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        """Requests to anything but this daemon's `/api` and `/ui`."""
        foreign = []
        for url in self.requests:
            parts = urlsplit(url)
            if parts.scheme == "data":
                continue
            same = f"{parts.scheme}://{parts.netloc}" == self.origin
            if not same or not (parts.path.startswith("/api/") or parts.path.startswith("/ui/")):
                foreign.append(url)
        return foreign


def open_tab(
    browser: object, origin: str, *, viewport: dict[str, int] = WIDE, token: str = ""
) -> Tab:
    """A new page in a fresh context (its own sessionStorage), signed in with `token` when
    given, in UTC so an instant typed into a form is the one the test means."""
    context = browser.new_context(viewport=viewport, timezone_id="UTC", locale="en-GB")  # type: ignore[attr-defined]
    if token:
        context.add_init_script(f"sessionStorage.setItem('memcastle.token', {token!r});")
    page = context.new_page()
    tab = Tab(page, origin)
    page.on("console", lambda message: message.type == "error" and tab.errors.append(message.text))
    page.on("pageerror", lambda error: tab.errors.append(f"uncaught: {error}"))
    page.on("request", lambda request: tab.requests.append(request.url))
    return tab
