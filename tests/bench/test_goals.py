"""The goal arithmetic of ``bench.goals``: ratios of figures to ceilings, bounds, goals not measured, the sweep's
completeness condition, and the printed table."""

from __future__ import annotations

from typing import Any

from bench.goals import GOALS, evaluate, table


def _report() -> dict[str, Any]:
    return {
        "create": {"http": {"per_s": 180.0}, "noop_ceiling": {"per_s": 300.0}},
        "describe": {"owner_filtered": {"p99_ms": 3.0}, "static_page_ceiling": {"p99_ms": 2.0}},
        "convergence": {"p99_ms": 9.0, "raw_chain_ceiling": {"p99_ms": 4.0}},
        "startup": {"seconds": 3.0, "raw_load_ceiling": {"seconds": 2.0}},
        "sweep": {
            "sweep_seconds": 10.0,
            "tokens": 100,
            "left": 0,
            "audit_events": 100,
            "raw_sweep_ceiling": {"seconds": 5.0},
        },
        "audit_report": {"report_seconds": 30.0, "ceiling_seconds": 10.0},
        "memory": {"rss_mb": 140.0},
        "kraft": {
            "create": {"http": {"per_s": 95.0}, "rpc_ceiling": {"per_s": 100.0}},
            "verify": {
                "verify": {"per_s": 80.0},
                "noop_post_ceiling": {"per_s": 100.0},
                "noop_ceiling": {"per_s": 125.0},
            },
        },
    }


def test_every_goal_of_the_issue_is_checked() -> None:
    assert [goal.name for goal in GOALS] == [
        "create_vs_noop",
        "describe_p99_vs_noop_p99",
        "convergence_p99_vs_raw_chain_p99",
        "startup_vs_raw_load",
        "sweep_vs_raw_sweep",
        "audit_report_vs_scan",
        "rss_mb",
        "kraft_create_vs_raw_rpc",
        "kraft_verify_vs_noop",
    ]


def test_ratios_against_bounds() -> None:
    results = evaluate(_report())
    assert results["create_vs_noop"] == {
        "goal": "ratio >= 0.6",
        "figure": 180.0,
        "ceiling": 300.0,
        "ratio": 0.6,
        "met": True,  # the bound itself meets a ">=" goal
        "what": results["create_vs_noop"]["what"],
    }
    assert results["describe_p99_vs_noop_p99"]["ratio"] == 1.5
    assert results["describe_p99_vs_noop_p99"]["met"] is True  # <= 1.5
    assert results["convergence_p99_vs_raw_chain_p99"]["ratio"] == 2.25
    assert results["convergence_p99_vs_raw_chain_p99"]["met"] is False
    assert results["startup_vs_raw_load"]["met"] is True
    assert results["sweep_vs_raw_sweep"]["met"] is True
    assert results["audit_report_vs_scan"] == results["audit_report_vs_scan"] | {"ratio": 3.0, "met": False}
    assert results["kraft_create_vs_raw_rpc"]["met"] is True  # 0.95
    assert results["kraft_verify_vs_noop"]["met"] is False  # 0.8


def test_kraft_verify_is_checked_against_the_post_no_op_with_the_get_no_op_beside() -> None:
    results = evaluate(_report())
    verify = results["kraft_verify_vs_noop"]
    assert (verify["ceiling"], verify["ratio"]) == (100.0, 0.8)
    assert verify["beside"] == {"ceiling": "GET /healthz", "figure": 125.0, "ratio": 0.64}
    assert "POST" in verify["what"]
    assert "beside" not in results["create_vs_noop"]  # only a goal that names one
    report = _report()
    report["kraft"]["verify"]["verify"]["per_s"] = 95.0  # meets against the POST, not against the GET (0.76)
    assert evaluate(report)["kraft_verify_vs_noop"]["met"] is True
    report["kraft"]["verify"].pop("noop_post_ceiling")  # the GET alone never meets the goal: not measured
    assert evaluate(report)["kraft_verify_vs_noop"]["met"] is None


def test_memory_is_bounded_by_itself_not_a_ceiling() -> None:
    report = _report()
    assert evaluate(report)["rss_mb"] | {"what": ""} == {
        "goal": "figure < 150",
        "figure": 140.0,
        "ceiling": None,
        "ratio": None,
        "met": True,
        "what": "",
    }
    report["memory"]["rss_mb"] = 150.0
    assert evaluate(report)["rss_mb"]["met"] is False  # strictly under


def test_a_sweep_that_left_tokens_or_unsettled_events_is_not_met_however_fast() -> None:
    report = _report()
    report["sweep"]["left"] = 3
    assert evaluate(report)["sweep_vs_raw_sweep"]["met"] is False
    report["sweep"]["left"] = 0
    report["sweep"]["audit_events"] = 99
    assert evaluate(report)["sweep_vs_raw_sweep"]["met"] is False


def test_parts_not_run_are_not_measured_never_met() -> None:
    report = _report()
    del report["kraft"]
    report["convergence"].pop("raw_chain_ceiling")
    report["create"]["noop_ceiling"]["per_s"] = 0.0  # a ceiling that measured nothing gives no ratio
    report["describe"]["owner_filtered"]["p99_ms"] = float("nan")  # summarize's answer to no samples
    results = evaluate(report)
    for name in ("kraft_create_vs_raw_rpc", "kraft_verify_vs_noop", "convergence_p99_vs_raw_chain_p99"):
        assert results[name]["met"] is None
    assert results["convergence_p99_vs_raw_chain_p99"]["figure"] == 9.0
    assert results["create_vs_noop"]["ratio"] is None and results["create_vs_noop"]["met"] is None
    assert results["describe_p99_vs_noop_p99"]["figure"] is None
    assert evaluate({})["rss_mb"]["met"] is None


def test_table_has_one_line_per_goal_with_figure_ceiling_ratio_and_met() -> None:
    report = _report()
    del report["kraft"]
    lines = table(evaluate(report)).splitlines()
    assert lines[0].split() == ["goal", "figure", "ceiling", "ratio", "bound", "met"]
    assert len(lines) == 1 + len(GOALS) + 2  # and the ceilings printed beside describe's and KRaft verify's
    create = next(line for line in lines if line.startswith("create_vs_noop"))
    assert create.split() == ["create_vs_noop", "180", "300", "0.6", ">=", "0.6", "yes"]
    convergence = next(line for line in lines if line.startswith("convergence"))
    assert convergence.split()[-1] == "NO"
    assert next(line for line in lines if line.startswith("rss_mb")).split()[1:3] == ["140", "-"]
    assert next(line for line in lines if line.startswith("kraft_verify")).endswith("not measured")
    assert lines[-1] == "kraft_verify_vs_noop: against GET /healthz -, ratio -"
    assert lines[-2] == "describe_p99_vs_noop_p99: against the page from the event loop -, ratio -"


def test_table_prints_the_ceiling_beside_under_the_goals() -> None:
    lines = table(evaluate(_report())).splitlines()
    assert lines[-1] == "kraft_verify_vs_noop: against GET /healthz 125, ratio 0.64"
    assert next(line for line in lines if line.startswith("kraft_verify")).split()[1:4] == ["80", "100", "0.8"]
