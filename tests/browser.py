"""A real headless Chromium for the tests marked ``browser`` (a pytest plugin).

Chromium is Debian's (``make install-browser`` installs the ``chromium`` package;
override the binary with ``TRB_CHROMIUM``); Playwright (a dev dependency, from PyPI) drives
it. Playwright's own browser download is never used: this machine cannot reach it.

Chromium starts with the flags that keep it off the network (this machine's network is
closed; without them it tries Google's hosts at every start) and a fresh profile each session.

Fixtures:

- ``chromium``: one browser per test module (stopped at its end: see the fixture);
- ``page``: a new page at 1,280 × 800 CSS pixels in its own context (cookies not shared).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

FLAGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions"]
#: The window the pages are checked in (a common laptop width).
VIEWPORT = {"width": 1280, "height": 800}


def chromium_binary() -> str:
    path = os.environ.get("TRB_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no Chromium on PATH: run `make install-browser` (Debian's chromium package), "
                    "or point TRB_CHROMIUM at a Chromium binary")
    return path


# Per module, not per session: Playwright's sync API leaves its event loop marked as running in the main thread
# while it is started, so every later asyncio.run() of the session (Textual's run_test, App.run, the snapshot
# plugin) would fail with "asyncio.run() cannot be called from a running event loop".
@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="trb-chromium-")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_binary(), args=FLAGS, headless=True,
                                     env={**os.environ, "HOME": profile})
        try:
            yield browser
        finally:
            browser.close()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport=VIEWPORT)
    p = context.new_page()
    try:
        yield p
    finally:
        context.close()
