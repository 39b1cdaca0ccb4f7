"""Rendering the report page from plain data: embedded charts, escaped names, nothing fetched."""

from __future__ import annotations

import base64
import re

from app.analytics.report import render_html
from app.analytics.report_data import ReportData

T0 = 1_700_000_000_000
HOSTILE = 'User:<script>alert("x")</script>'


def data() -> ReportData:
    return ReportData(
        summary={"events": 42, "tokens_issued": 3, "burst_hours": 1},
        span_start_ms=T0,
        span_end_ms=T0 + 3_600_000,
        as_of_ms=T0 + 3_600_000,
        top_n=5,
        issued_by_owner=[("2023-11-14", HOSTILE, 2), ("2023-11-14", "User:bob", 1)],
        issued_by_requester=[("2023-11-14", "User:svc", 3)],
        impersonation=[("User:svc", HOSTILE, 2, 1)],
        impersonation_pairs=[("User:svc", HOSTILE, 2, 1), ("User:svc", "User:carol", 0, 4)],
        lifetimes={"requested": {"server default": 3}, "granted": {"7 d - 30 d": 3}},
        renew_counts=[(0, 2), (3, 1)],
        max_lifetime_use={"at max": 1},
        overdue={"swept": {"< 1 min": 1}},
        most_overdue=[
            {
                "token_id": "t1",
                "owner": HOSTILE,
                "status": "lingering",
                "expiry_timestamp": T0,
                "removed_at": None,
                "overdue_ms": 90_061_000,
            }
        ],
        denials_by_principal=[(HOSTILE, 1, 6)],
        denials_by_address=[("192.0.2.66", 1, 6)],
        refusals_by_action=[{"kind": "refusal", "action": "token.create", "error_code": 65, "denials": 1}],
        bursts=[
            {"principal": HOSTILE, "hour": "2023-11-14 22:00", "denials": 6, "baseline_mean": 0.0, "threshold": 0.0}
        ],
        top_owners=[{"rank": 1, "owner": HOSTILE, "tokens": 2, "impersonated": 2, "requesters": 1, "renewals": 0}],
        top_requesters=[
            {"rank": 1, "token_requester": "User:svc", "tokens": 3, "for_others": 2, "owners": 2, "refused": 1}
        ],
    )


def test_every_chart_is_an_embedded_png() -> None:
    page = render_html(data())

    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 10
    assert all(base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n") for image in images)
    assert not re.search(r"https?://|<script|<link|url\(", page.replace("&lt;script&gt;", ""))


def test_names_from_the_audit_trail_are_escaped() -> None:
    page = render_html(data())

    assert HOSTILE not in page
    assert "User:&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "<script" not in page


def test_summary_durations_and_times_are_readable() -> None:
    page = render_html(data())

    assert '<dd id="summary-events">42</dd>' in page
    assert '<dd id="summary-lingering_tokens">0</dd>' in page
    assert "1 d 1 h" in page  # 90 061 s overdue
    assert "still present" in page
    assert "Period: 2023-11-14 22:13:20 UTC to 2023-11-14 23:13:20 UTC." in page


def test_the_most_denied_principals_are_named_in_text_burst_or_not() -> None:
    quiet = data()
    quiet.bursts = []

    page = render_html(quiet)

    table = page[page.index('<table id="denials-by-principal">') :]
    table = table[: table.index("</table>")]
    assert "<th>authentication failures</th>" in table
    escaped = "User:&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
    assert f'<td>{escaped}</td><td class="n">1</td><td class="n">6</td>' in table
