"""The release matrix's table (tests/kafka/matrix.py): outcomes per proof, rows per release, the docs' markers."""

from __future__ import annotations

from tests.kafka.matrix import DOCS, END, PROOFS, START, outcomes, table


def _record(test: str, proofs: list[str], outcome: str, kts_on: str = "zookeeper.connect") -> dict[str, object]:
    return {"test": test, "proofs": proofs, "outcome": outcome, "kts_on": kts_on}


def test_a_proof_passes_only_when_every_test_of_it_passed() -> None:
    rows = outcomes(
        [
            _record("a", ["token-login"], "passed"),
            _record("b", ["token-login", "expire-renew"], "failed"),
            _record("c", ["expire-renew"], "passed"),
            _record("d", ["kip-373"], "passed", "bootstrap.servers"),
            _record("e", ["scram-users"], "skipped"),
        ]
    )
    assert rows == {
        "zookeeper.connect": {"token-login": "fail", "expire-renew": "fail"},
        "bootstrap.servers": {"kip-373": "pass"},
    }


def test_a_zookeeper_mode_release_has_a_row_for_each_way_and_a_kraft_release_one() -> None:
    results = {
        "4.0.2": {"date": "2026-11-28", "run_s": 200, "rows": {"bootstrap.servers": {"kip-373": "pass"}}},
        "3.3.2": {"date": "2026-11-28", "run_s": 300, "rows": {"zookeeper.connect": {"token-login": "pass"}}},
    }
    lines = table(results).splitlines()
    assert lines[0].startswith("| release | mode | kts on | " + " | ".join(PROOFS))
    assert [line.split(" | ")[:3] for line in lines[2:]] == [
        ["| 3.3.2", "ZooKeeper", "zookeeper.connect"],
        ["| 3.3.2", "ZooKeeper", "bootstrap.servers"],
        ["| 4.0.2", "KRaft", "bootstrap.servers"],
    ]
    assert "| pass | n.a. |" in lines[2] and lines[4].count("n.a.") == len(PROOFS) - 1


def test_the_docs_carry_the_markers_the_table_goes_between() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.index(START) < text.index(END)
