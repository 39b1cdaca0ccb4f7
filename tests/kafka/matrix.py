"""The release matrix (``make test-kafka-matrix``): the real-broker proofs, release after release.

For each release of ``RELEASES`` (or those named), oldest first: fetch its jars into the cache (once per machine),
then run the tests marked ``kafka_matrix`` in one pytest process with ``--kafka-release`` (the broker fixture of
that release's mode starts that release; the other mode's tests are left out). Each test's outcome lands in a
JSON-lines file; a proof passes on a release when every test of it passed there. A row is printed as each
release ends, and the table is written to ``build/kafka-matrix.md`` (results kept per release in
``build/kafka-matrix.json``, so a run of one release updates its rows only). ``--docs`` puts the table into
docs/kafka-compatibility.md between its markers.

    python -m tests.kafka.matrix                 # every release
    python -m tests.kafka.matrix 3.3.2 4.0.2     # these
    python -m tests.kafka.matrix --docs          # the docs' table from the last results, running nothing
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.cli.server.kafka_broker.release import RELEASES, KafkaUnavailable, fetch

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
RESULTS = BUILD / "kafka-matrix.json"
TABLE = BUILD / "kafka-matrix.md"
DOCS = ROOT / "docs" / "kafka-compatibility.md"
START, END = "<!-- kafka-matrix:start -->", "<!-- kafka-matrix:end -->"
# The test modules holding the proofs (each marked kafka_matrix with the proofs it makes).
MODULES = (
    "tests/e2e/kafka/test_zookeeper_mode.py",
    "tests/e2e/kafka/test_kraft.py",
    "tests/e2e/test_kafka_protocol.py",
    "tests/api/test_backends.py",
)
# The proofs, the table's columns, in order.
PROOFS = {
    "token-login": "kts token logs a Java client in (SCRAM-256/-512)",
    "expire-renew": "expire and renew honoured",
    "broker-token": "broker-made token served and renewed",
    "acls-tool": "kafka-acls grant honoured by kts",
    "kts-grants": "kts's grants on the broker",
    "scram-users": "SCRAM users both ways",
    "kip-373": "KIP-373 create for another owner",
}
RELEASE_TIMEOUT_S = 3600


def zookeeper_mode(version: str) -> bool:
    return int(version.split(".", 1)[0]) < 4


def run_release(version: str, python: str) -> dict[str, Any]:
    """Fetch and run one release; its outcome per (kts_on, proof), and the seconds it took."""
    started = time.monotonic()
    try:
        fetch(version)
    except KafkaUnavailable as exc:
        return {"version": version, "error": str(exc), "fetch_s": 0, "run_s": 0, "rows": {}}
    fetched = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"kts-matrix-{version}-") as temp:
        results = Path(temp) / "results.jsonl"
        command = [
            python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "kafka_matrix",
            f"--kafka-release={version}", f"--kafka-matrix-results={results}", f"--basetemp={Path(temp) / 'base'}",
            *MODULES,
        ]  # fmt: skip
        log = BUILD / f"kafka-matrix-{version}.log"
        with log.open("w", encoding="utf-8") as output:
            try:
                subprocess.run(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT, timeout=RELEASE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                output.write(f"\nthe release's run took more than {RELEASE_TIMEOUT_S} s\n")
        records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    ended = time.monotonic()
    return {
        "version": version,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "fetch_s": round(fetched - started),
        "run_s": round(ended - fetched),
        "rows": outcomes(records),
        "failures": sorted({record["test"] for record in records if record["outcome"] == "failed"}),
        "log": str(log.relative_to(ROOT)),
    }


def outcomes(records: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``{kts_on: {proof: pass|fail}}``: a proof passes when each of its tests passed (a skip counts as neither)."""
    rows: dict[str, dict[str, str]] = {}
    for record in records:
        for proof in record["proofs"]:
            cell = rows.setdefault(record["kts_on"], {})
            if record["outcome"] == "failed":
                cell[proof] = "fail"
            elif record["outcome"] == "passed":
                cell.setdefault(proof, "pass")
    return rows


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table, one row per release and way kts reaches it, oldest release first."""
    header = ["release", "mode", "kts on", *PROOFS, "date", "seconds"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for version in sorted(results, key=lambda v: tuple(int(p) for p in v.split("."))):
        result = results[version]
        mode = "ZooKeeper" if zookeeper_mode(version) else "KRaft"
        ways = ("zookeeper.connect", "bootstrap.servers") if zookeeper_mode(version) else ("bootstrap.servers",)
        seconds = str(result.get("run_s", ""))
        for way in ways:
            if result.get("error"):
                cells = ["not run: " + result["error"][:80]] + [""] * (len(PROOFS) - 1)
            else:
                row = result["rows"].get(way, {})
                cells = [row.get(proof, "n.a.") for proof in PROOFS]
            lines.append("| " + " | ".join([version, mode, way, *cells, result.get("date", ""), seconds]) + " |")
    return "\n".join(lines) + "\n"


def legend() -> str:
    return "\n".join(f"- `{proof}`: {meaning}" for proof, meaning in PROOFS.items()) + "\n"


def write_docs(text: str) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    before, rest = docs.split(START, 1)
    _, after = rest.split(END, 1)
    DOCS.write_text(f"{before}{START}\n{text}{END}{after}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kafka.matrix", description=__doc__.split("\n")[0])
    parser.add_argument("releases", nargs="*", help=f"releases to run (default: all of {', '.join(RELEASES)})")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/kafka-compatibility.md")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs pytest")
    args = parser.parse_args(argv)
    unknown = [version for version in args.releases if version not in RELEASES]
    if unknown:
        parser.error(f"not in the release table (app/cli/server/kafka_broker/release.py): {', '.join(unknown)}")
    BUILD.mkdir(exist_ok=True)
    results: dict[str, dict[str, Any]] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    todo = [] if args.docs and not args.releases else args.releases or list(RELEASES)
    failed = False
    for version in todo:
        print(f"Kafka {version}: fetching and running the proofs ...", flush=True)
        result = run_release(version, args.python)
        # another matrix run may have written its releases meanwhile: keep them
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[version] = result
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        TABLE.write_text(table(results) + "\n" + legend())
        print(table({version: result}), flush=True)
        if result.get("error") or result["failures"]:
            failed = True
            print("\n".join([result.get("error", ""), *result["failures"], f"log: {result.get('log')}"]), flush=True)
    if args.docs:
        write_docs(table(results))
    print(f"the table: {TABLE.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
