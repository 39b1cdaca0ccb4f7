"""Property-based fuzzing of every documented operation against a real ``kts serve`` (schemathesis).

Every operation of the checked-in ``openapi/openapi.json`` is fuzzed once per identity: the super user,
an ordinary user by password and by delegation token, a Kubernetes service account by its workload JWT (the
JWK set in a file), and a caller with no or made-up credentials
(schemathesis invents Authorization headers for it). Each gets data that fits the schema and data that
does not; the token-id operations get a third run aimed at a real token, so renew, expire and describe
answer 200 too. Every response must be no 5xx and carry a status, content type and body that the
document promises for that operation. The audit database is a real PostgreSQL: it refuses strings that
SQLite would store.

The run is derandomized, so CI sees the same cases every time. ``KTS_FUZZ_EXAMPLES`` (examples per
operation, identity and run) raises it for a long run. The number of cases run per operation and
identity goes to ``fuzz-counts.txt`` in the test's temp dir and to the terminal, even without ``-s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import ADMIN, ALICE, basic, bearer, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import ROOT, start_kts
from tests.jwt_material import AUDIENCE, ISSUER, JwtKey, jwks
from tests.kafka.brokers import RunningBroker
from tests.postgres_server import PostgresServer

# Read at import: the autouse fixture in tests/conftest.py clears every KTS_* variable before a test runs.
EXAMPLES = int(os.environ.get("KTS_FUZZ_EXAMPLES", "24"))
# Every request through the Kafka protocol waits on a broker (a create on the controller): a third as many
# examples keeps make test's share of the KRaft run near the ZooKeeper run's; make fuzz raises both.
KRAFT_EXAMPLES = max(4, EXAMPLES // 3)
SNAPSHOT = ROOT / "openapi" / "openapi.json"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MODES = {"positive": GenerationMode.POSITIVE, "negative": GenerationMode.NEGATIVE}
# A guard against a hung run, not a performance bound: about 140 cases per example, far under 0.5 s each.
TIMEOUT_S = 600 + 70 * EXAMPLES


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,  # a fixed seed per run: CI replays the same cases
        database=None,  # nothing written into the checkout
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )


def _fuzz(strategy: st.SearchStrategy[Case], send: Callable[[Case], None], examples: int) -> str | None:
    """Runs the cases; returns the shrunk failure, if any, as text."""

    @_settings(examples)
    @given(case=strategy)
    def run(case: Case) -> None:
        send(case)

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis names the check, the response and a curl line
        return _described(exc)
    return None


def _described(exc: BaseException) -> str:
    """The exception with every sub-exception of a group: the group's own text only counts them, and the
    received status, the documented ones and the curl line are in the sub-exceptions."""
    parts = [f"{type(exc).__name__}: {exc}"]
    parts += [_described(sub) for sub in getattr(exc, "exceptions", ())]
    return "\n".join(parts)


def _takes_input(operation: APIOperation) -> bool:
    """Whether there is anything to make invalid (``GET /healthz`` has nothing to negate)."""
    return any(len(part) for part in (operation.path_parameters, operation.query, operation.body))


@dataclass(frozen=True)
class Backend:
    """How the fuzzed ``kts serve`` reaches its cluster, and the two users it knows there."""

    settings: dict[str, str]
    admin: tuple[str, str]
    alice: tuple[str, str]
    examples: int = EXAMPLES  # per operation, identity and run


@pytest.fixture(params=["zookeeper", "kraft"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """ZooKeeper, and the real KRaft broker through the Kafka protocol."""
    if request.param == "zookeeper":
        raw_zk: KazooClient = request.getfixturevalue("raw_zk")
        for user in (ADMIN, ALICE):
            put_user(raw_zk, *user)
        zk_connect: str = request.getfixturevalue("zk_connect")
        return Backend({"KTS_ZOOKEEPER_CONNECT": zk_connect, "KTS_SUPER_USERS": "User:admin"}, ADMIN, ALICE)
    broker: RunningBroker = request.getfixturevalue("kafka_kraft_broker")
    alice = broker.new_user("alice")
    admin = (broker.admin.name, broker.admin.password)
    settings = {
        "KTS_BOOTSTRAP_SERVERS": broker.bootstrap,
        "KTS_ADMIN_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KTS_ADMIN_SASL_MECHANISM": "SCRAM-SHA-512",
        "KTS_ADMIN_SASL_JAAS_CONFIG": broker.kts_jaas,  # kts's own login, never a caller's
        "KTS_SUPER_USERS": f"User:{admin[0]}",
    }
    return Backend(settings, admin, (alice.name, alice.password), KRAFT_EXAMPLES)


def _create_token(url: str, backend: Backend) -> dict[str, Any]:
    alice = f"User:{backend.alice[0]}"
    response = httpx.post(
        f"{url}/v1/tokens", json={"owner": alice, "renewers": [alice]}, headers=basic(backend.admin), timeout=30
    )
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")  # schemathesis internals
def test_every_operation_survives_fuzzing_and_keeps_its_contract(
    backend: Backend,
    postgres: PostgresServer,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    signer = JwtKey.rsa("fuzz-key")
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(signer)), encoding="utf-8")
    url = start_kts(
        processes,
        tmp_path,
        "fuzzed",
        **backend.settings,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_AUDIT_DB_URL=postgres.create_database(),
        # The brute-force defence off: every identity calls from 127.0.0.1, so the made-up credentials would
        # soon have all of them answered 429 and starve the fuzzer (the defence has tests of its own).
        KTS_AUTH_FAILURES_MAX="0",
        KTS_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=jwks_file.as_uri(),
        KTS_SASL_OAUTHBEARER_EXPECTED_ISSUER=ISSUER,
        KTS_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=AUDIENCE,
    )
    identities = {
        "admin": basic(backend.admin),
        "alice": basic(backend.alice),
        "alice-token": bearer(_create_token(url, backend)),
        "spark-jwt": {"Authorization": f"Bearer {signer.mint(lifetime_s=TIMEOUT_S + 3600)}"},
        "anonymous": {},
    }
    schema = schemathesis.openapi.from_path(SNAPSHOT)
    operations = [result.ok() for result in schema.get_all_operations()]
    session = requests.Session()
    counts: Counter[tuple[str, str, str]] = Counter()
    successes: Counter[tuple[str, str]] = Counter()  # 2xx answers: the fuzzer got past validation and auth
    failures: list[str] = []
    started = time.monotonic()

    for operation in operations:
        for identity, headers in identities.items():
            runs = {
                name: operation.as_strategy(generation_mode=mode)
                for name, mode in MODES.items()
                if mode is GenerationMode.POSITIVE or _takes_input(operation)
            }
            if "{token_id}" in operation.path:  # a fresh token each time: an earlier run may have expired one
                token_id = _create_token(url, backend)["tokenId"]
                runs["known-id"] = operation.as_strategy(path_parameters={"token_id": token_id})
            for run_name, strategy in runs.items():
                key = (operation.label, identity, run_name)

                def send(case: Case, key: tuple[str, str, str] = key, headers: dict[str, str] = headers) -> None:
                    counts[key] += 1
                    response = case.call_and_validate(base_url=url, session=session, headers=headers, checks=CHECKS)
                    if 200 <= response.status_code < 300:
                        successes[key[:2]] += 1

                failure = _fuzz(strategy, send, backend.examples)
                if failure is not None:
                    failures.append(f"{operation.label} as {identity} ({run_name}):\n{failure}")

    report = _report(counts, successes, time.monotonic() - started, backend.examples)
    (tmp_path / "fuzz-counts.txt").write_text(report, encoding="utf-8")
    with capsys.disabled():
        print("\n" + report)
        for failure in failures:  # whole, where the assertion below would be cut short
            print(f"\nFUZZ FAILURE {failure}")
    assert {(label, identity) for label, identity, _ in counts} == {
        (operation.label, identity) for operation in operations for identity in identities
    }
    assert not failures, f"{len(failures)} fuzz failures, printed whole above: " + "; ".join(
        failure.splitlines()[0] for failure in failures
    )


def _report(
    counts: Counter[tuple[str, str, str]], successes: Counter[tuple[str, str]], elapsed_s: float, examples: int
) -> str:
    runs = sorted({run for _, _, run in counts})
    lines = [
        f"schemathesis cases per operation and identity (up to {examples} per run, derandomized), {elapsed_s:.0f} s",
        f"{'operation':<36} {'identity':<12}" + "".join(f"{run:>10}" for run in runs) + f"{'total':>8}{'2xx':>6}",
    ]
    for operation, identity in sorted({(operation, identity) for operation, identity, _ in counts}):
        row = [counts[(operation, identity, run)] for run in runs]
        lines.append(
            f"{operation:<36} {identity:<12}"
            + "".join(f"{n:>10}" for n in row)
            + f"{sum(row):>8}{successes[(operation, identity)]:>6}"
        )
    per_identity = Counter[str]()
    for (_, identity, _), n in counts.items():
        per_identity[identity] += n
    lines.append("per identity: " + ", ".join(f"{identity} {n}" for identity, n in sorted(per_identity.items())))
    lines.append(f"total cases: {sum(counts.values())}")
    return "\n".join(lines) + "\n"
