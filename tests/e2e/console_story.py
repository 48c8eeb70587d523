"""What the console's browser story checks on every page, and waiting for the page to show a thing."""

from __future__ import annotations

import json
from pathlib import Path

from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.engine import RunningEngine

#: A marker stored in another project: it must never show in this project's console.
FOREIGN_MARKER = "Zanzibar-secret-of-project-B"


def wait_for(driver: WebDriver, css: str, timeout: float = 20.0, *, text: str | None = None) -> WebElement:
    def found(d: WebDriver) -> WebElement | bool:
        try:
            for el in d.find_elements(By.CSS_SELECTOR, css):
                if text is None or text in el.text:
                    return el
        except StaleElementReferenceException:  # the view re-rendered under us: look again
            pass
        return False

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(found)  # type: ignore[no-any-return]
    except TimeoutException:
        status = driver.find_element(By.ID, "status").text
        raise AssertionError(f"{css!r} (text {text!r}) did not appear; status line: {status!r}") from None


def save_full_page(driver: WebDriver, path: Path) -> None:
    """The whole page, not just the viewport (Chromium's DevTools protocol)."""
    import base64

    width, height = driver.execute_script(
        "return [document.documentElement.clientWidth, document.documentElement.scrollHeight]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 6000), "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))


class Story:
    """What every step checks, whatever the page: no foreign data, no key in URL or localStorage."""

    def __init__(self, driver: WebDriver, engine: RunningEngine, key: str, shots: Path) -> None:
        self.driver, self.engine, self.key, self.shots = driver, engine, key, shots
        self.pages_seen = 0

    def check_page(self, name: str) -> None:
        d = self.driver
        assert FOREIGN_MARKER not in d.page_source, f"another project's data on {name}"
        assert self.key not in d.current_url and self.key not in d.execute_script("return location.href")
        stored = d.execute_script("return JSON.stringify(Object.assign({}, localStorage))")
        assert self.key not in stored and json.loads(stored) == {}, stored
        unlabelled = d.execute_script("""
            return [...document.querySelectorAll('#main input, #main select, #main textarea')]
              .filter(el => el.type !== 'hidden' && el.labels.length === 0 && !el.getAttribute('aria-label'))
              .map(el => el.outerHTML);""")
        assert unlabelled == [], f"form controls without a label on {name}: {unlabelled}"
        overflow = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} scrolls sideways by {overflow}px at {d.get_window_size()}"
        save_full_page(d, self.shots / f"{name}.png")
        self.pages_seen += 1

    def go(self, hash_: str) -> None:
        self.driver.execute_script("location.hash = arguments[0]", hash_)

