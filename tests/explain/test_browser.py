"""The HTML view in a real headless browser (Debian's chromium, driven by Selenium through
chromedriver): selecting a field highlights exactly its bytes, a byte selects the field
that holds it, and failures are marked.

Skipped, with the reason, when chromium or chromedriver is not installed (``make test``
installs them with apt-get when it can). ``BYTEWRIGHT_SCREENSHOTS=DIR`` saves the pages'
screenshots there (the ones in docs/assets were made so).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bytewright as bw
import pytest
from bytewright._explain._formats import explain_format
from explain_samples import Telemetry, tcp_capture, telemetry

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
    "chromium-driver; make test does it when run as root)",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,900"):
        opts.add_argument(arg)
    opts.add_argument("--disable-dev-shm-usage")
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(browser: Any, ex: bw.Explained, tmp_path: Path, name: str) -> None:
    page = tmp_path / f"{name}.html"
    page.write_text(ex.to_html(), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.find_element("css selector", "#tree .node")


def tree_line(browser: Any, path: str) -> Any:
    """Opens the tree down to ``path`` by clicking each ancestor's twisty; its line."""
    from selenium.webdriver.common.by import By

    parts: list[str] = []
    at = ""
    for piece in _split(path):
        at = at + piece if piece.startswith("[") or not at else f"{at}.{piece}"
        parts.append(at)
    for ancestor in ["", *parts[:-1]]:
        node = browser.find_element(By.CSS_SELECTOR, f'#tree .node[data-path="{ancestor}"]')
        if node.get_attribute("data-open") != "1":
            node.find_element(By.CSS_SELECTOR, ":scope > .line .tw").click()
    node = browser.find_element(By.CSS_SELECTOR, f'#tree .node[data-path="{path}"]')
    return node.find_element(By.CSS_SELECTOR, ":scope > .line")


def _split(path: str) -> list[str]:
    out: list[str] = []
    for dotted in path.split("."):
        head, _, rest = dotted.partition("[")
        if head:
            out.append(head)
        if rest:
            out.extend("[" + p for p in rest.split("["))
    return out


def offsets(browser: Any, cls: str) -> list[int]:
    return browser.execute_script(
        f"return [...document.querySelectorAll('#hexrows .b.{cls}')].map(e => +e.dataset.o)"
    )


def select_and_check(browser: Any, ex: bw.Explained, path: str) -> None:
    node = ex[path]
    tree_line(browser, path).find_element("css selector", ".nm").click()
    assert node.end is not None
    assert offsets(browser, "sel") == list(range(node.start, node.end)), path
    assert browser.execute_script("return bwExplain.selected()") == [node.start, node.end]
    detail = browser.find_element("id", "detail").text
    assert f"offset {node.start}" in detail and f"size {node.size} bytes" in detail


def test_telemetry_frame(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    ex = bw.explain(Telemetry, telemetry())
    open_page(browser, ex, tmp_path, "telemetry")
    assert "✓" in browser.find_element(By.ID, "status").text
    for path in ("count", "readings[3].value", "readings[1]", "note", "crc", "readings"):
        select_and_check(browser, ex, path)
    # A bit field highlights the byte its bits are in.
    select_and_check(browser, ex, "readings[2].unit")
    # Hovering a field in the tree highlights its bytes (the selection stays).
    for path in ("note", "readings[0]"):
        node = ex[path]
        ActionChains(browser).move_to_element(tree_line(browser, path)).perform()
        assert offsets(browser, "hov") == list(range(node.start, node.end or 0)), path
        assert browser.execute_script("return bwExplain.selected()") == [18, 19]
    # The other way round: a byte selects the innermost field holding it.
    for offset in (0, 3, 20, 40, 47):
        want = ex.at(offset)
        assert want is not None
        byte = browser.find_element(By.CSS_SELECTOR, f'#hexrows .b[data-o="{offset}"]')
        ActionChains(browser).move_to_element(byte).perform()
        span = set(range(want.start, want.end or 0))
        hovered = set(offsets(browser, "hov"))
        assert hovered <= span and hovered | (set(offsets(browser, "sel")) & span) == span
        hover_line = browser.find_element(By.CSS_SELECTOR, "#tree .line.hov")
        assert hover_line.find_element(By.XPATH, "..").get_attribute("data-path") == want.path
        byte.click()
        assert browser.execute_script("return bwExplain.selected()") == [want.start, want.end]
        line = browser.find_element(By.CSS_SELECTOR, "#tree .line.sel")
        assert line.find_element(By.XPATH, "..").get_attribute("data-path") == want.path
    select_and_check(browser, ex, "readings[3].value")
    _screenshot(browser, "explain-telemetry.png")


def test_telemetry_failure_is_marked(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    data = bytearray(telemetry())
    data[30] ^= 0x40  # inside readings[4]: the CRC no longer matches
    ex = bw.explain(Telemetry, bytes(data))
    assert ex.failed is not None and ex.failed.path == "crc"
    open_page(browser, ex, tmp_path, "telemetry-bad")
    status = browser.find_element(By.ID, "status")
    assert "fail" in status.get_attribute("class")
    assert "checksum mismatch" in status.text and "offset 45" in status.text
    failed = browser.find_element(By.CSS_SELECTOR, '#tree .node.failed[data-path="crc"]')
    assert failed.is_displayed()
    assert offsets(browser, "fail") == list(range(45, 49))
    # Cut short: the rest is one red node, the partial tree is there.
    ex = bw.explain(Telemetry, telemetry()[:20])
    open_page(browser, ex, tmp_path, "telemetry-short")
    assert "more bytes needed" in browser.find_element(By.ID, "status").text
    rest = ex.rest
    assert rest is not None and rest.end == 20
    assert set(range(rest.start, 20)) <= set(offsets(browser, "fail"))
    select_and_check(browser, ex, "readings[1].value")


def test_keys_move_through_the_tree(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ex = bw.explain(Telemetry, telemetry())
    open_page(browser, ex, tmp_path, "telemetry-keys")
    tree_line(browser, "magic").find_element("css selector", ".nm").click()

    def press(key: str, path: str, opened: bool | None = None) -> None:
        ActionChains(browser).send_keys(key).perform()
        node = ex[path]
        assert browser.execute_script("return bwExplain.selected()") == [node.start, node.end]
        if opened is not None:
            line = browser.find_element("css selector", f'#tree .node[data-path="{path}"]')
            assert (line.get_attribute("data-open") == "1") is opened, path

    press(Keys.ARROW_DOWN, "version")
    press(Keys.ARROW_UP, "magic")
    for _ in range(4):
        ActionChains(browser).send_keys(Keys.ARROW_DOWN).perform()
    press(Keys.ARROW_DOWN, "readings", opened=False)
    press(Keys.ARROW_RIGHT, "readings", opened=True)  # opens it
    press(Keys.ARROW_RIGHT, "readings[0]")  # its first item
    press(Keys.ARROW_DOWN, "readings[1]")
    press(Keys.ARROW_LEFT, "readings")  # a closed item: to its parent
    press(Keys.ARROW_LEFT, "readings", opened=False)  # closes it
    press(Keys.ARROW_DOWN, "note_len")  # past the closed list


def test_pcap_packet(browser: Any, tmp_path: Path) -> None:
    ex = explain_format("pcap", tcp_capture())
    assert ex.ok
    open_page(browser, ex, tmp_path, "pcap")
    frame = "body.records[0].data"
    for path in (
        "body.header.linktype",
        "body.records[0].incl_len",
        f"{frame}.src",
        f"{frame}.payload.ttl",
        f"{frame}.payload.fragment_offset",
        f"{frame}.payload.payload.dst_port",
        f"{frame}.payload.payload.payload",
        f"{frame}.payload.payload.dst_port",
    ):
        select_and_check(browser, ex, path)
    assert ex[f"{frame}.payload.payload.dst_port"].value == 80
    _screenshot(browser, "explain-pcap.png")


def _screenshot(browser: Any, name: str) -> None:
    out = os.environ.get("BYTEWRIGHT_SCREENSHOTS")
    if out:
        browser.save_screenshot(str(Path(out) / name))
