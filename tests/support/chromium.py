"""The system Chromium for the browser tests (provisioned by ``make provision-browser``; Playwright's own download
is not used)."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = os.environ.get("SOURCEBOUND_CHROMIUM", "/usr/bin/chromium")


@contextmanager
def launch_chromium(screenshots: Path) -> Iterator[Browser]:
    """A headless Chromium; fails the test (never skips it) when the browser is missing."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make provision-browser` (apt-get install chromium).")
    screenshots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        # Root (containers, CI) needs --no-sandbox.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
