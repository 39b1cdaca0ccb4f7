"""The benchmark's measurements in turns (``bench.harness.drive_in_turns``, ``paired_latencies``), against a real
local HTTP server that records the order of the requests it answers: each figure and its ceiling take turns, the
order reversed every other round, so that both meet the same moments of a shared machine."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from bench.harness import drive_in_turns, paired_latencies, verify_figures


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []  # each fixture gives its subclass a list of its own

    def _answer(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        self.seen.append(self.path)
        body = b"{}" if self.path != "/refused" else b'{"error":"no"}'
        self.send_response(200 if self.path != "/refused" else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    seen: ClassVar[list[str]] = []  # each fixture gives its subclass a list of its own
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _blocks(seen: list[str]) -> list[str]:
    return [path for path, _ in itertools.groupby(seen)]


def test_rates_are_driven_in_turns_reversed_every_other_round(server: tuple[str, list[str]]) -> None:
    url, seen = server
    rates = asyncio.run(
        drive_in_turns(
            url,
            {"a": lambda c: c.post("/a", json={"x": 1}), "b": lambda c: c.get("/b")},
            seconds=0.8,
            concurrency=1,
            rounds=4,
        )
    )
    # After one warm-up request each: a b, then b a, a b, b a (adjacent turns of one path run together).
    assert _blocks(seen) == ["/a", "/b", "/a", "/b", "/a", "/b", "/a"]
    assert rates["a"]["requests"] == seen.count("/a") - 1 and rates["b"]["requests"] == seen.count("/b") - 1
    assert rates["a"]["errors"] == rates["b"]["errors"] == 0


def test_a_refused_request_counts_as_an_error_of_its_own_path(server: tuple[str, list[str]]) -> None:
    url, _ = server
    rates = asyncio.run(
        drive_in_turns(
            url,
            {"ok": lambda c: c.get("/ok"), "refused": lambda c: c.get("/refused")},
            seconds=0.2,
            concurrency=1,
            rounds=2,
        )
    )
    assert rates["refused"]["requests"] == 0 and rates["refused"]["errors"] > 0
    assert rates["ok"]["requests"] > 0 and rates["ok"]["errors"] == 0


def test_latencies_are_paired_one_of_each_per_round(server: tuple[str, list[str]]) -> None:
    url, seen = server
    figures = asyncio.run(paired_latencies(url, {"a": "/a", "b": "/b"}, {}, 4))
    assert seen == ["/a", "/b", "/a", "/b", "/b", "/a", "/a", "/b", "/b", "/a"]  # warm-ups, then the rounds
    assert figures["a"]["requests"] == figures["b"]["requests"] == 4


def test_each_figure_holds_the_cpu_per_request_of_server_and_client(server: tuple[str, list[str]]) -> None:
    url, _ = server
    clock = iter(range(1_000_000))
    rates = asyncio.run(
        drive_in_turns(
            url, {"a": lambda c: c.get("/a")}, seconds=0.2, concurrency=1, rounds=2, server_cpu=lambda: next(clock)
        )
    )
    # The fake server clock moves one second between the two readings of each turn: two seconds in two turns.
    assert rates["a"]["server_cpu_ms"] == round(2 / rates["a"]["requests"] * 1000, 3)
    assert rates["a"]["client_cpu_ms"] >= 0


def test_verify_figures_give_the_ratio_in_cpu_time_beside_the_rates() -> None:
    verify = {"per_s": 90.0, "server_cpu_ms": 1.0, "client_cpu_ms": 2.0}
    noop_post = {"per_s": 100.0, "server_cpu_ms": 0.7, "client_cpu_ms": 2.0}
    noop_get = {"per_s": 120.0}  # measured without CPU: no ratio in CPU time
    figures = verify_figures(verify, noop_post, noop_get)
    assert (figures["ratio"], figures["ratio_in_cpu_time"]) == (0.9, 0.9)
    assert (figures["ratio_vs_get"], figures["ratio_vs_get_in_cpu_time"]) == (0.75, None)
