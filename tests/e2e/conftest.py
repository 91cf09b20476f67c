"""Fixtures of the browser suite: one JupyterLab (started as the README starts it) on a throwaway checkout, and
one headless Chromium. Skipped, with the reason, where Chromium or Playwright is missing (.ci/run installs both)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from . import harness


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: drives JupyterLab in headless Chromium (needs chromium + playwright)")


@pytest.fixture(scope="session")
def lab_server():
    reason = harness.missing_tools()
    if reason:
        pytest.skip(f"browser tests need Chromium and Playwright: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="gpucourse-e2e-"))
    checkout = harness.make_checkout(tmp / "checkout")
    home = tmp / "home"
    home.mkdir()
    server = harness.LabServer(checkout, home)
    try:
        server.startup_s = server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser_context(lab_server):
    """Per test module: Playwright's sync API owns an event loop, which must be closed before another module
    (tests/hub) starts its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=harness.CHROMIUM, args=harness.CHROMIUM_ARGS, timeout=60_000)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab_server.base)
            context.set_default_timeout(30_000)
            yield context
            context.close()
        finally:
            browser.close()


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    yield page
    page.close()
