"""Swagger UI in a real browser against a real ``kts serve``: log in with Basic, create a token, no network; a
refused login is shown (in the Authorize dialog, and as the 401 of an Execute), never a browser password prompt
or an Execute that never ends.

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

import httpx
import pytest
from kazoo.client import KazooClient
from playwright.sync_api import Browser, Locator, Page, Request, expect, sync_playwright

from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.znodes import ConfigChangeZNode, UserConfigZNode
from tests.api.conftest import ALICE, basic, put_user
from tests.api.helpers import eventually
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


def _authorize_dialog(page: Page, scheme: str) -> Locator:
    """Open Authorize; the container of ``scheme`` (httpBasic or httpBearer)."""
    page.locator("button.authorize").first.click()
    dialog = page.locator(".modal-ux")
    # The dialog offers both declared schemes.
    expect(dialog.locator(".auth-container")).to_have_count(2)
    expect(dialog).to_contain_text("httpBasic")
    expect(dialog).to_contain_text("httpBearer")
    return dialog.locator(".auth-container").filter(has_text=scheme)


def _close_dialog(page: Page, container: Locator) -> None:
    container.locator("button.btn-done").click()
    expect(page.locator(".modal-ux")).to_have_count(0)


def _log_in_with_basic(page: Page, user: str, password: str) -> None:
    basic = _authorize_dialog(page, "httpBasic")
    basic.locator("input[name=username]").fill(user)
    basic.locator("input[name=password]").fill(password)
    basic.locator("button.authorize").click()
    expect(basic.locator("button", has_text="Logout")).to_be_visible()
    expect(basic).to_contain_text("Authorized")
    _close_dialog(page, basic)


def _execute_create(page: Page) -> Locator:
    """Execute ``POST /v1/tokens`` with the body Swagger UI prefills, which must be ``{}``; the live response."""
    operation = page.locator(".opblock-post").filter(has=page.locator(".opblock-summary-path[data-path='/v1/tokens']"))
    if not operation.get_by_role("button", name="Execute").is_visible():
        operation.locator(".opblock-summary").click()
        operation.get_by_role("button", name="Try it out").click()
    body = operation.locator("textarea.body-param__text")
    expect(body).to_be_visible()
    # Every default, for the caller itself: no made-up owner or renewer (it was User:alice for any caller).
    assert json.loads(body.input_value()) == {}
    operation.get_by_role("button", name="Execute").click()
    return operation.locator(".live-responses-table .response")


def _create_token(page: Page) -> tuple[dict[str, object], Locator]:
    """Execute ``POST /v1/tokens`` with ``{}``; returns the token shown and the live response."""
    live = _execute_create(page)
    expect(live.locator(".response-col_status")).to_have_text("201")
    body = live.locator(".response-col_description pre.microlight").first
    expect(body).to_contain_text("tokenId")
    return json.loads(body.inner_text()), live


def _shown_error(live: Locator, status: str) -> dict[str, object]:
    """The status and JSON body of a live response, once the page shows them: an Execute that never completes
    (the browser's own password prompt on a Basic challenge) fails here."""
    expect(live.locator(".response-col_status")).to_have_text(status)
    body = live.locator(".response-col_description pre.microlight").first
    expect(body).to_contain_text('"error"')
    shown: dict[str, object] = json.loads(body.inner_text())
    return shown


def _browser_storage(page: Page) -> str:
    """Everything the page keeps in localStorage and sessionStorage, as one JSON text."""
    dumped: str = page.evaluate("() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
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


def test_a_refused_login_is_shown_not_authorized_and_execute_shows_the_401(kts_url: str) -> None:
    with _chromium() as browser:
        page = browser.new_page()
        page.goto(f"{kts_url}/docs")
        basic = _authorize_dialog(page, "httpBasic")
        basic.locator("input[name=username]").fill(ALICE[0])
        basic.locator("input[name=password]").fill("a-wrong-password")
        basic.locator("button.authorize").click()
        expect(basic.locator(".errors")).to_contain_text(
            "kts refused these credentials (401). AUTHENTICATION_FAILED: Invalid user name or password."
        )
        expect(basic).not_to_contain_text("Authorized")
        expect(basic.locator("button", has_text="Logout")).to_have_count(0)
        bearer = page.locator(".modal-ux .auth-container").filter(has_text="httpBearer")
        bearer.locator("input").fill("E8gTWaIxRUOaSRH7wY3N1w:" + "A" * 86 + "==")
        bearer.locator("button.authorize").click()
        expect(bearer.locator(".errors")).to_contain_text("kts refused these credentials (401).")
        expect(bearer).not_to_contain_text("Authorized")
        _close_dialog(page, basic)

        shown = _shown_error(_execute_create(page), "401")  # no credentials were kept, so none are sent
        assert shown["error"] == "AUTHENTICATION_FAILED"


def test_execute_with_a_password_changed_since_authorize_shows_the_401(kts_url: str, raw_zk: KazooClient) -> None:
    """The Basic header Swagger UI sends is refused: the browser must leave the 401 to the page (with a Basic
    challenge Chromium opened its own prompt and Execute never completed)."""
    with _chromium() as browser:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        page.goto(f"{kts_url}/docs")
        _log_in_with_basic(page, *ALICE)
        token, _ = _create_token(page)
        assert token["owner"] == f"User:{ALICE[0]}"
        _set_password(raw_zk, ALICE[0], "changed-behind-the-page")
        # kts follows the change notification as brokers do, a moment later: until then the old password holds.
        eventually(lambda: httpx.get(f"{kts_url}/v1/tokens", auth=ALICE).status_code == 401)
        shown = _shown_error(_execute_create(page), "401")
        assert shown == {"error": "AUTHENTICATION_FAILED", "message": "Invalid user name or password."}
        assert dialogs == []


def test_a_token_authorizes_once_kts_accepted_it(kts_url: str) -> None:
    created = httpx.post(f"{kts_url}/v1/tokens", json={}, headers=basic(ALICE), timeout=30).json()
    with _chromium() as browser:
        page = browser.new_page()
        page.goto(f"{kts_url}/docs")
        bearer = _authorize_dialog(page, "httpBearer")
        bearer.locator("input").fill(f"{created['tokenId']}:{created['hmac']}")
        bearer.locator("button.authorize").click()
        expect(bearer.locator("button", has_text="Logout")).to_be_visible()
        expect(bearer).to_contain_text("Authorized")
        expect(bearer.locator(".errors")).to_have_count(0)


def _set_password(raw_zk: KazooClient, name: str, password: str) -> None:
    """Replace a user's credential in ZooKeeper behind kts's back, as kafka-configs.sh does: the config znode,
    then the change notification that brokers and kts's credential cache follow."""
    mechanism = Mechanism.SCRAM_SHA_512
    config = {mechanism.value: UserConfigZNode.credential_to_string(derive(mechanism, password, 4096))}
    raw_zk.set(UserConfigZNode.path(name), UserConfigZNode.encode(config))
    raw_zk.create(ConfigChangeZNode.PREFIX, ConfigChangeZNode.encode(name), sequence=True, makepath=True)
