"""The Content-Security-Policy of ``/docs`` in a real browser: Swagger UI renders and calls the API with
no policy violation (the browser reports every violation as a ``securitypolicyviolation`` event)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from playwright.sync_api import expect

from tests.api.conftest import ALICE, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts
from tests.e2e.test_swagger_ui import _chromium

pytestmark = pytest.mark.browser

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def test_swagger_ui_runs_under_the_policy(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    put_user(raw_zk, *ALICE)
    url = start_kts(
        processes, tmp_path, "csp", KTS_ZOOKEEPER_CONNECT=zk_connect, KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET
    )
    console_errors: list[str] = []
    with _chromium() as browser:
        page = browser.new_page()
        page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
        page.add_init_script(RECORD_VIOLATIONS)
        response = page.goto(f"{url}/docs")
        assert response is not None
        # The page carries no inline script (Swagger UI starts from a script file): scripts of this origin only.
        assert "script-src 'self';" in response.headers["content-security-policy"]
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("kts")
        operation = page.locator(".opblock-get").filter(has=page.locator("[data-path='/healthz']"))
        operation.locator(".opblock-summary").click()
        operation.get_by_role("button", name="Try it out").click()
        operation.get_by_role("button", name="Execute").click()
        expect(operation.locator(".live-responses-table .response .response-col_status")).to_have_text("200")
        violations = page.evaluate("window.__cspViolations")
    assert violations == []
    assert not [error for error in console_errors if "Content Security Policy" in error]
