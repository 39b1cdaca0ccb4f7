"""Swagger UI in a real browser against a real ``kts serve``: log in with Basic, create a token, no network.

Chromium comes from Debian (CI installs ``chromium``); Playwright only drives it, so ``playwright install``
is never needed. A missing browser fails the test: a skipped browser test would hide a blank docs page.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from kazoo.client import KazooClient
from playwright.sync_api import Browser, Locator, Page, Request, expect, sync_playwright

from tests.api.conftest import ALICE, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import ROOT, start_kts

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCREENSHOT_NAME = "swagger-ui-create-token.png"
ARTIFACTS = ROOT / "test-artifacts"


@contextmanager
def _chromium() -> Iterator[Browser]:
    """Debian's Chromium under Playwright. Called from the test body, so a missing browser is a failure."""
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium and chromium-driver packages", pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def kts_url(tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]) -> str:
    put_user(raw_zk, *ALICE)
    return start_kts(
        processes,
        tmp_path,
        "docs",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
    )


def _log_in_with_basic(page: Page, user: str, password: str) -> None:
    page.locator("button.authorize").first.click()
    dialog = page.locator(".modal-ux")
    # The dialog offers both declared schemes; fill in the Basic one.
    expect(dialog.locator(".auth-container")).to_have_count(2)
    expect(dialog).to_contain_text("httpBasic")
    expect(dialog).to_contain_text("httpBearer")
    basic = dialog.locator(".auth-container").filter(has_text="httpBasic")
    basic.locator("input[name=username]").fill(user)
    basic.locator("input[name=password]").fill(password)
    basic.locator("button.authorize").click()
    expect(basic.locator("button", has_text="Logout")).to_be_visible()
    basic.locator("button.btn-done").click()
    expect(dialog).to_have_count(0)


def _create_token(page: Page) -> tuple[dict[str, object], Locator]:
    """Execute ``POST /v1/tokens`` with ``{}``; returns the token shown and the live response."""
    operation = page.locator(".opblock-post").filter(has=page.locator(".opblock-summary-path[data-path='/v1/tokens']"))
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    operation.locator("textarea.body-param__text").fill("{}")
    operation.get_by_role("button", name="Execute").click()
    live = operation.locator(".live-responses-table .response")
    expect(live.locator(".response-col_status")).to_have_text("201")
    body = live.locator(".response-col_description pre.microlight").first
    expect(body).to_contain_text("tokenId")
    return json.loads(body.inner_text()), live


def _browser_storage(page: Page) -> str:
    """Everything the page keeps in localStorage and sessionStorage, as one JSON text."""
    dumped: str = page.evaluate(
        "() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])"
    )
    return dumped


def _assert_no_credentials(stored: str, user: str, password: str) -> None:
    basic_header = base64.b64encode(f"{user}:{password}".encode()).decode()
    assert password not in stored, "the password was written to browser storage"
    assert basic_header not in stored, "the Basic credentials were written to browser storage"
    assert "authorized" not in stored, "Swagger UI persisted the authorization"


def test_create_a_token_from_swagger_ui_with_basic_auth(kts_url: str, tmp_path: Path) -> None:
    requested: list[str] = []

    def record(request: Request) -> None:
        requested.append(request.url)

    screenshot = tmp_path / SCREENSHOT_NAME
    with _chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 1000})
        context.on("request", record)
        page = context.new_page()
        page.goto(f"{kts_url}/docs")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("kts")
        _log_in_with_basic(page, *ALICE)
        token, live_response = _create_token(page)
        stored = _browser_storage(page)
        assert token["owner"] == f"User:{ALICE[0]}"
        assert token["tokenId"]
        _assert_no_credentials(stored, *ALICE)
        live_response.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshot))
        context.close()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(screenshot, ARTIFACTS / SCREENSHOT_NAME)
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    assert f"{kts_url}/openapi.json" in requested, "the page never loaded the OpenAPI document"
    leaving = [url for url in requested if urlsplit(url).hostname != "127.0.0.1"]
    assert not leaving, f"requests left 127.0.0.1: {leaving}"
