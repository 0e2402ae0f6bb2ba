"""The demo page as a person uses it: headless Chromium (Debian's chromium + chromium-driver) via Selenium.

Starts the real server, loads /, types a sentence, presses the button and checks that the corrected
characters are highlighted with their edit in the tooltip. Skips when Chromium or Selenium is missing.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FORCE_EDITS, system_dependency
from live_server import free_port, server

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    system_dependency(CHROMIUM.exists(), "Chromium is not installed (apt-get install chromium chromium-driver)")
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    system_dependency(Path(driver_path).exists(), "chromedriver is not installed (apt-get install chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1100,900", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def base_url(tiny_bundle, tmp_path_factory) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port), "--model", str(tiny_bundle),
           "--device", "cpu", "--corrector-settings", json.dumps(FORCE_EDITS)]
    with server(cmd, {}, tmp_path_factory.mktemp("demo") / "server.log", port) as (_, base):
        yield base


def correct_in_page(driver, base_url: str, text: str, *, type_it: bool) -> list:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base_url}/")
    WebDriverWait(driver, 20).until(lambda d: "tiny" in d.find_element(By.ID, "model").text)
    box = driver.find_element(By.ID, "input")
    box.clear()
    if type_it:
        box.send_keys(text)
    else:  # ChromeDriver cannot type characters outside the BMP (emoji): paste them instead
        driver.execute_script("arguments[0].value = arguments[1];", box, text)
    driver.find_element(By.ID, "correct").click()
    WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "result").is_displayed())
    return driver.find_elements(By.CSS_SELECTOR, "#output mark.edit")


def test_typing_a_sentence_and_pressing_the_button_highlights_the_corrections(browser, base_url, forced_corrector,
                                                                              tmp_path):
    from selenium.webdriver.common.by import By

    text = "今天天汽很好"
    want = forced_corrector.correct(text)
    assert want.edits
    marks = correct_in_page(browser, base_url, text, type_it=True)
    assert browser.find_element(By.ID, "output").text == want.target
    assert [m.text for m in marks] == [e.target for e in want.edits]
    for mark, edit in zip(marks, want.edits):
        title = mark.get_attribute("title")
        assert title.startswith(f"{edit.source} → {edit.target} · confidence ") and edit.reason in title
        assert mark.get_attribute("data-position") == str(edit.position)
    rows = browser.find_elements(By.CSS_SELECTOR, "#edits tbody tr")
    assert len(rows) == len(want.edits)
    browser.save_screenshot(str(tmp_path / "demo.png"))


def test_positions_count_code_points_not_utf16_units(browser, base_url, forced_corrector):
    from selenium.webdriver.common.by import By

    text = "😀👍🏽 今天\n天汽 abc"
    want = forced_corrector.correct(text)
    assert want.edits
    marks = correct_in_page(browser, base_url, text, type_it=False)
    assert browser.find_element(By.ID, "output").text.replace("\n", "") == want.target.replace("\n", "")
    assert [int(m.get_attribute("data-position")) for m in marks] == [e.position for e in want.edits]
    assert [m.get_attribute("data-source") for m in marks] == [e.source for e in want.edits]


def test_an_error_is_shown_to_the_person(browser, base_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{base_url}/")
    browser.execute_script("document.getElementById('input').value = 'x'.repeat(20001);")
    browser.find_element(By.ID, "correct").click()
    error = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "error") if
                                             d.find_element(By.ID, "error").is_displayed() else None)
    assert "Error 413" in error.text and "limit is 20000" in error.text


def test_no_key_field_without_keys_and_no_old_result_beside_an_error(browser, base_url):
    """Before: the API key field showed on a server without keys (a label rule beat the hidden attribute), an
    error left the previous result on screen, and the error named "text 0", an index the page's user never sees
    (issue 61, 12)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    correct_in_page(browser, base_url, "今天天汽很好", type_it=True)
    assert not browser.find_element(By.ID, "key-label").is_displayed()
    assert browser.find_element(By.ID, "result").is_displayed()
    browser.execute_script("document.getElementById('input').value = 'x'.repeat(20001);")
    browser.find_element(By.ID, "correct").click()
    error = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "error") if
                                             d.find_element(By.ID, "error").is_displayed() else None)
    assert error.text.startswith("Error 413: the text has 20001 characters") and "text 0" not in error.text
    assert not browser.find_element(By.ID, "result").is_displayed()
