"""Fixtures for the dashboard's tests: a store per backend (the session's real PostgreSQL), and a
real headless Chromium driven through Debian's chromedriver (selenium)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.record.conftest import store_url  # noqa: F401

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="session")
def chromium() -> Iterator[WebDriver]:
    """Headless Chromium with a fresh profile, its console log kept (``driver.get_log("browser")``)."""
    found = _chromium()
    if found is None:
        pytest.skip(
            "Chromium or chromedriver is not installed (make test-deps installs chromium and chromium-driver): "
            "the dashboard cannot be checked in a browser"
        )
    from selenium import webdriver

    browser, driver_path = found
    profile = Path(tempfile.mkdtemp(prefix="codejury-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
