"""A real headless Chromium for the console's browser tests: Debian's ``chromium`` and
``chromium-driver`` packages driven by Selenium. Installed with apt when absent (the test machine
allows it); when that cannot work, the caller skips with the reason this module gives."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

CHROMIUM = "chromium"
CHROMEDRIVER = "chromedriver"
APT_PACKAGES = ("chromium", "chromium-driver")


def _binaries() -> tuple[str | None, str | None]:
    return shutil.which(CHROMIUM), shutil.which(CHROMEDRIVER) or (
        "/usr/lib/chromium/chromedriver" if Path("/usr/lib/chromium/chromedriver").exists() else None)


def ensure_chromium() -> tuple[str, str] | str:
    """(chromium, chromedriver) paths, installing the Debian packages when absent; else why not."""
    browser, driver = _binaries()
    if browser and driver:
        return browser, driver
    if not shutil.which("apt-get"):
        return "chromium is not installed and apt-get is not available (install chromium and chromium-driver)"
    if os.geteuid() != 0:
        return "chromium is not installed and installing it needs root (apt-get install -y chromium chromium-driver)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", *APT_PACKAGES]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:  # a stale package index: refresh once and retry
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=600, check=False)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    browser, driver = _binaries()
    if browser and driver:
        return browser, driver
    return f"installing chromium failed: {(done.stderr or done.stdout).strip()[-300:]}"


def headless_chromium(browser: str, driver: str, *, width: int = 1280, height: int = 900) -> Any:
    """A Selenium WebDriver on a fresh headless Chromium profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-extensions", "--no-first-run", "--password-store=basic", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)
