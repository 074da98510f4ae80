"""The HTML trace viewer opened in a real browser: headless Chromium driven by selenium.

Uses Debian's `chromium` and `chromium-driver` (the system chromedriver, so nothing is
downloaded). Without them, or without selenium, every test here is skipped with the reason;
with OWNERSHIP_REQUIRE_BROWSER=1 (as CI sets it) they fail instead, so a broken install
cannot pass silently. Screenshots go to artifacts/ (gitignored). With
OWNERSHIP_UPDATE_DOCS_SCREENSHOT=1 the incident test also rewrites docs/viewer.png.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from ownership.render.html import render_html
from ownership.trace import read_itf

GOLDEN = ROOT / "tests" / "golden" / "viewer"
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and Path(p).exists()), None)
CHROMEDRIVER = next((p for p in ("/usr/bin/chromedriver", shutil.which("chromedriver")) if p and Path(p).exists()), None)
#: the schemes of the browser's own documents, whose requests are not the page's
BROWSER_OWN = ("chrome://", "chrome-untrusted://", "chrome-search://", "devtools://")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    if CHROMIUM is None:
        return "chromium is not installed (apt-get install -y chromium chromium-driver)"
    if CHROMEDRIVER is None:
        return "chromedriver is not installed (apt-get install -y chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module, with console and network logging."""
    reason = _missing()
    if reason is not None:
        if os.environ.get("OWNERSHIP_REQUIRE_BROWSER"):
            pytest.fail(f"the browser tests must run here (OWNERSHIP_REQUIRE_BROWSER is set), but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    profile = tempfile.mkdtemp(prefix="ownership-chromium-")
    for flag in [*FLAGS, f"--user-data-dir={profile}", "--window-size=1280,900"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver: Any, page: Path) -> tuple[list[dict], list[str]]:
    """Load a page; (console entries of level SEVERE, URLs the page requested)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")
    driver.get_log("performance")
    url = page.resolve().as_uri()
    driver.get(url)
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.body.getAttribute('data-step')"))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    requests = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            params = msg["params"]
            # the browser's own pages (its new-tab page: chrome://, and in Debian's Chromium
            # chrome-untrusted://new-tab-page) load resources of their own; only a request made
            # by a document of ours counts (issue 29: the page's requests, not the browser's)
            if not params.get("documentURL", "").startswith(BROWSER_OWN):
                requests.append(params["request"]["url"])
        elif msg["method"] == "Network.webSocketCreated":
            requests.append(msg["params"]["url"])
    return errors, requests


def _write_page(tmp_path: Path, trace_name: str, start: int | None = None) -> Path:
    page = tmp_path / f"{Path(trace_name).stem}.html"
    page.write_text(render_html(read_itf(GOLDEN / trace_name), start=start), encoding="utf-8")
    return page


def _current(driver: Any) -> int:
    return int(driver.execute_script("return document.body.getAttribute('data-step')"))


def _screenshot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / name))


def test_the_incident_page_loads_offline_with_no_console_error_and_marks_the_violation(browser, tmp_path):
    """The page makes no request but its own file, logs no error, and opens at step 6, marked."""
    page = _write_page(tmp_path, "incident.json")
    errors, requests = _open(browser, page)
    assert errors == []
    assert set(requests) <= {page.resolve().as_uri()}, f"the page requested {requests}"
    assert _current(browser) == 6
    marked = browser.execute_script(
        "return Array.from(document.querySelectorAll('.lane-step.violation')).map(g => g.getAttribute('data-step'))")
    assert marked == ["6"]
    title = browser.find_element("id", "step-title")
    assert "VIOLATION" in title.text and "violation" in title.get_attribute("class")
    assert "cross-request leak" in browser.find_element("id", "verdict").text
    assert "decode page 1, decode page 2" in browser.find_element("id", "step-violation").text
    leaked = browser.execute_script(
        "return Array.from(document.querySelectorAll('.pool .page.m-violation')).map(c => c.getAttribute('data-page'))")
    assert leaked == ["1", "2"]
    assert browser.find_element("id", "reproduce").text == "ownership check sglang_pd"
    assert "st-violated" in browser.execute_script(
        "return document.querySelectorAll('#props tr')[1].children[7].className")
    _screenshot(browser, "viewer-incident.png")
    if os.environ.get("OWNERSHIP_UPDATE_DOCS_SCREENSHOT"):
        # an exact viewport, whatever the window decorations: the committed picture stays the same size
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": 1200, "height": 940, "deviceScaleFactor": 1, "mobile": False})
        browser.execute_script("window.dispatchEvent(new Event('resize'))")
        browser.save_screenshot(str(ROOT / "docs" / "viewer.png"))
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_slider_and_the_arrow_keys_move_between_steps(browser, tmp_path):
    """Left/right keys step back and forth within the trace; the slider jumps to a step."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    _open(browser, _write_page(tmp_path, "incident.json"))
    body = browser.find_element("tag name", "body")
    body.send_keys(Keys.ARROW_LEFT)
    assert _current(browser) == 5
    assert browser.find_element("id", "counter").text == "step 5 / 6"
    body.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    assert _current(browser) == 6  # stops at the last step
    slider = browser.find_element("id", "slider")
    width = slider.size["width"]
    ActionChains(browser).move_to_element_with_offset(slider, -width // 2 + 2, 0).click().perform()
    assert _current(browser) == 0
    assert slider.get_attribute("value") == "0"
    slider.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)   # keys on the focused slider: one step each
    assert _current(browser) == 2
    owners = browser.execute_script(
        "return Array.from(document.querySelectorAll('.pool')[1].querySelectorAll('.page .owner')).map(e => e.textContent)")
    assert owners == ["r1", "r1", "r1", "free"]
    assert "r1 takes decode pages 0, 1, 2" in browser.find_element("id", "effects").text
    _screenshot(browser, "viewer-incident-step-2.png")


def test_markup_in_a_trace_shows_as_text_and_never_runs(browser, tmp_path):
    """A step named <script>alert(1)</script>, markup in owners, actors and messages: all text."""
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.keys import Keys

    page = _write_page(tmp_path, "hostile.json", start=2)
    errors, requests = _open(browser, page)
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - an alert would mean trace data ran as code
    assert errors == []
    assert set(requests) <= {page.resolve().as_uri()}
    counts = browser.execute_script("return [document.scripts.length, document.images.length,"
                                    " document.querySelectorAll('b, i, svg script').length]")
    assert counts == [2, 0, 0]
    title = browser.find_element("id", "step-title").text
    assert "<script>alert(1)</script>(r=r1, <b>arg</b>=<script>alert(1)</script>)" in title
    text = browser.find_element("tag name", "body").text
    assert "<img src=x onerror=alert(2)>" in text
    assert "</script><script>alert(3)</script>" in browser.find_element("id", "title").text
    assert browser.find_element("id", "reproduce").text == "ownership check \"<svg onload=alert(5)>\" --fix '</script>'"
    box = browser.execute_script("return document.querySelector('.lane-step[data-step=\"2\"] text').textContent")
    assert box.startswith("2. <script>")
    browser.find_element("tag name", "body").send_keys(Keys.END)
    assert _current(browser) == 6
    _screenshot(browser, "viewer-hostile.png")


def test_a_foreign_trace_page_shows_its_variables(browser, tmp_path):
    """An ITF trace of another tool opens with a table of its variables and no error."""
    errors, _ = _open(browser, _write_page(tmp_path, "foreign.json"))
    assert errors == []
    assert browser.find_element("id", "beliefs-title").text.lower() == "variables"
    rows = browser.execute_script("return Array.from(document.querySelectorAll('#beliefs tr')).map(r => r.children[0].textContent)")
    assert rows == ["owner", "content", "step_count", "queue", "done"]


def _checked_page(tmp_path: Path, *check: str) -> Path:
    """The page of the counterexample that `ownership check ... --out` writes, with its narratives."""
    from conftest import run_cli

    trace = tmp_path / "t.itf.json"
    assert run_cli("check", *check, "--out", str(trace)).code == 1
    page = tmp_path / "checked.html"
    assert run_cli("show", str(trace), "--html", str(page)).code == 0
    return page


def test_the_page_shows_each_steps_narrative_and_the_why(browser, tmp_path):
    """The narrative of the step in view and the why of the violation, as the terminal tells them."""
    from selenium.webdriver.common.keys import Keys

    errors, _ = _open(browser, _checked_page(tmp_path, "sglang_pd"))
    assert errors == []
    why = browser.find_element("id", "why")
    assert why.is_displayed()
    text = why.text
    assert "Why (step 6, request r1): the spec's beliefs against the kernel's truth about the pages" in text
    assert "decode: r1 owns pages 0, 1, 2; its KV is in page 0 only; pages 1, 2 hold KV of r0" in text
    assert "sent[r1] = 1 against prompt[r1] = 3: r1's KV fills 1 of the 3 decode pages it owns" in text
    assert browser.find_element("id", "step-narrative").text == "decode attends over pages 0, 1, 2"
    body = browser.find_element("tag name", "body")
    for _ in range(4):
        body.send_keys(Keys.ARROW_LEFT)
    assert _current(browser) == 2
    assert browser.find_element("id", "step-narrative").text == "decode reserves pages {0, 1, 2}"
    _screenshot(browser, "viewer-why.png")


def test_a_lasso_page_shows_every_step_and_marks_the_loop(browser, tmp_path):
    """A liveness counterexample: every step's box and status is drawn normally (none greyed as
    "after the violation"), the loop's back edge is drawn, and a step of the loop says so."""
    from selenium.webdriver.common.keys import Keys

    errors, _ = _open(browser, _checked_page(tmp_path, str(ROOT / "tests" / "specs" / "liveness" / "spin.py:Spin")))
    assert errors == []
    boxes = browser.execute_script(
        "return Array.from(document.querySelectorAll('.lane-step')).map(g => [g.getAttribute('data-step'),"
        " g.getAttribute('class'), getComputedStyle(g).opacity, g.getBoundingClientRect().width > 0])")
    assert [b[0] for b in boxes] == ["1", "2", "3"]
    assert all(b[2] == "1" and b[3] for b in boxes)
    assert ["in-loop" in b[1] for b in boxes] == [False, True, True]
    assert browser.execute_script("return document.querySelectorAll('#props td.st-after').length") == 0
    assert browser.execute_script("return document.querySelector('.loop-edge').getAttribute('data-loop')") == "1"
    assert "steps 2..3 repeat forever" in browser.find_element("id", "verdict").text
    browser.find_element("tag name", "body").send_keys(Keys.END)
    assert _current(browser) == 3
    loop = browser.find_element("id", "step-loop")
    assert loop.is_displayed()
    assert loop.text == "back to the state of step 1: step 3 is the state of step 1: steps 2..3 repeat forever"
    _screenshot(browser, "viewer-lasso.png")


def test_a_dead_end_page_shows_every_step_and_says_the_run_stops_there(browser, tmp_path):
    """A dead end (the loop at the last step): no step greyed, the last one says the run stays there."""
    from selenium.webdriver.common.keys import Keys

    page = _checked_page(tmp_path, str(ROOT / "tests" / "specs" / "liveness" / "stranded.py"), "--fix", "no-timeout")
    errors, _ = _open(browser, page)
    assert errors == []
    assert browser.execute_script("return document.querySelectorAll('#props td.st-after').length") == 0
    classes = browser.execute_script("return Array.from(document.querySelectorAll('.lane-step')).map(g => g.getAttribute('class'))")
    assert ["in-loop" in c for c in classes] == [False, True]
    assert "the run stops here, no action enabled, forever" in browser.execute_script(
        "return document.querySelector('.loop-label').textContent")
    browser.find_element("tag name", "body").send_keys(Keys.END)
    assert browser.find_element("id", "step-loop").text == (
        "the run stops at step 2 (no action enabled there, says the trace) and stays there forever")
