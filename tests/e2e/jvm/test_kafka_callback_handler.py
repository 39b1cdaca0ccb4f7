"""A plain Java consumer and producer with only kts.jvm.kafka.KtsTokenCallbackHandler configured (no password of Kafka
or kts anywhere: the workload logs in to kts with a projected JWT) keep working across two token replacements, on
Kafka 3.9 in ZooKeeper mode and 4.4 in KRaft mode: once with ``kts.url`` (the handler creates, renews and replaces
the token itself) and once with ``kts.token.file`` fed by a real ``kts sidecar --format json``.

Tokens live 20 s, so a replacement comes every 16 s; beside the ZooKeeper-mode broker they also end 8 s after their
creation or last renewal, so renewals come between the replacements. No broker setting is needed for the running
connections to take the new token: a broker bounds the session of a token-authenticated connection by the token's
expiry at login (KIP-368, ScramSaslServer's credential lifetime), so the client re-authenticates before then,
asking the handler again, and a connection that did not would be closed. The consumer runs until its records come
past the last replaced token's maximum lifetime, when no session authenticated with it can be left."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.helpers import eventually
from tests.conftest import write_properties
from tests.e2e.cli_helpers import client_env
from tests.e2e.conftest import KTS, ROOT
from tests.e2e.jvm.conftest import HANDLER, SCRAM, Run, Stack, run_consumer

MAX_LIFETIME_MS = 20_000
OVERLAP_MS = 3_000
TOKENS = 3  # the first one and two replacements
DEADLINE_S = 300
_HMAC = re.compile(r"[A-Za-z0-9+/]{86}==")
# On a real broker (the stack fixture asks for one by name); each run waits for three tokens' lifetimes.
pytestmark = [pytest.mark.kafka, pytest.mark.timeout(DEADLINE_S + 300)]


def _client_config(directory: Path, stack: Stack, jaas_options: str) -> Path:
    return write_properties(
        directory / "client.properties",
        {
            "bootstrap.servers": stack.broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.client.callback.handler.class": HANDLER,
            "sasl.jaas.config": f'{SCRAM} required tokenauth="true" {jaas_options};',
        },
    )


def _topic_for(stack: Stack, principal: str) -> str:
    topic = stack.broker.create_topic()
    stack.broker.acls(
        "--add", "--allow-principal", principal, "--operation", "Read", "--operation", "Write", "--topic", topic
    )  # fmt: skip
    return topic


def _check_and_report(
    stack: Stack, run: Run, source: str, principal: str, secrets: list[str], tokens: int = TOKENS
) -> dict[str, dict[str, Any]]:
    """The run read records with every token it logged in with, made no error, and leaked no secret; prints
    the seconds from each replacement (kts's create) to the first record read after the new token's first login."""
    print(run.stderr[-6000:])
    assert run.returncode == 0, f"exit {run.returncode}; events: {run.events[-20:]}"
    assert run.of("error") == []
    logins = run.first_logins()
    assert len(logins) >= tokens, logins
    records = run.of("record")
    events = {
        event["tokenId"]: event
        for event in stack.audit(principal=principal, action="token.create")
        if event["outcome"] == "succeeded"
    }
    creates = {token_id: event["timestamp"] for token_id, event in events.items()}
    assert set(logins) <= set(creates), "every token that logged in was created by kts for this workload"
    ids = list(logins)
    for token_id in ids[1:]:
        login_at = logins[token_id]
        after = [record["t"] for record in records if record["t"] >= login_at]
        assert after, f"no record read after token {token_id} logged in"
        print(
            f"[{stack.name}, {source}] token {token_id}: replaced at +0.0 s, first login "
            f"+{(login_at - creates[token_id]) / 1000:.1f} s, first record read after it "
            f"+{(after[0] - creates[token_id]) / 1000:.1f} s"
        )
    print(
        f"[{stack.name}, {source}] {len(records)} records read; {len(logins)} tokens logged in; "
        f"{len(creates)} tokens created for {principal}"
    )
    for secret in secrets:
        assert secret not in run.stderr
    assert not _HMAC.search(run.stderr), "an HMAC in the client's log"
    return events


def test_a_java_consumer_with_kts_url_reads_across_two_replacements(
    stack: Stack, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    sub, jwt_file = stack.workload(tmp_path)
    topic = _topic_for(stack, f"User:{sub}")
    config = _client_config(
        tmp_path,
        stack,
        f'kts.url="{stack.url}" kts.jwt.file="{jwt_file}" kts.max.lifetime.ms="{MAX_LIFETIME_MS}" '
        f'kts.replace.overlap.ms="{OVERLAP_MS}"',
    )
    run = run_consumer(
        stack.broker, kts_jvm_jar, config, topic, tokens=TOKENS, max_lifetime_ms=MAX_LIFETIME_MS, deadline_s=DEADLINE_S
    )
    _check_and_report(stack, run, "kts.url", f"User:{sub}", [jwt_file.read_text().split(".")[2]])
    # each replaced token was ended after the overlap, and the last one when the client closed
    expired = {event["tokenId"] for event in stack.audit(principal=f"User:{sub}", action="token.expire")}
    assert set(run.first_logins()) <= expired
    renewed = stack.audit(principal=f"User:{sub}", action="token.renew")
    print(f"[{stack.name}, kts.url] {len(renewed)} renewals")
    if stack.name.startswith("zookeeper"):
        assert renewed, "tokens that end 8 s after each renewal were renewed between the replacements"


def test_a_java_consumer_with_a_sidecar_token_file_reads_across_two_replacements(
    stack: Stack, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    sub, jwt_file = stack.workload(tmp_path)
    topic = _topic_for(stack, f"User:{sub}")
    token_file, log = tmp_path / "token.json", tmp_path / "sidecar.log"
    sidecar = subprocess.Popen(
        [*KTS, "sidecar", "--server", stack.url, "--jwt-file", str(jwt_file), "--output-file", str(token_file),
         "--format", "json", "--max-life-time-period", str(MAX_LIFETIME_MS),
         "--replace-grace-period", str(OVERLAP_MS), "--expire-on-exit"],
        cwd=ROOT, env=client_env(), stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True,
    )  # fmt: skip
    try:
        eventually(token_file.exists, timeout_s=60)
        config = _client_config(tmp_path, stack, f'kts.token.file="{token_file}"')
        run = run_consumer(
            stack.broker,
            kts_jvm_jar,
            config,
            topic,
            tokens=TOKENS,
            max_lifetime_ms=MAX_LIFETIME_MS,
            deadline_s=DEADLINE_S,
        )
    finally:
        sidecar.terminate()
        sidecar.wait(30)
    _check_and_report(stack, run, "kts.token.file", f"User:{sub}", [jwt_file.read_text().split(".")[2]])


def test_without_the_handler_a_pasted_token_stops_working_when_it_ends(
    stack: Stack, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    """The comparison that makes the two tests above mean something: the same workload with a token pasted into
    ``sasl.jaas.config`` (what a job does without kts-jvm) reads until the token ends (its expiry, or its maximum
    lifetime), and then its connections are refused at re-authentication: a running client needs the handler."""
    sub, jwt_file = stack.workload(tmp_path)
    topic = _topic_for(stack, f"User:{sub}")
    created = httpx.post(
        f"{stack.url}/v1/tokens",
        json={"maxLifetimeMs": MAX_LIFETIME_MS},
        headers={"Authorization": f"Bearer {jwt_file.read_text()}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    token = created.json()
    config = write_properties(
        tmp_path / "client.properties",
        {
            "bootstrap.servers": stack.broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="{token["tokenId"]}" password="{token["hmac"]}" '
            'tokenauth="true";',
        },
    )
    run = run_consumer(
        stack.broker, kts_jvm_jar, config, topic, tokens=TOKENS, max_lifetime_ms=MAX_LIFETIME_MS, deadline_s=45
    )
    assert run.returncode == 2, "it ran to its deadline"
    ends = token["expiryTimestamp"]  # nobody renews it
    before = [record for record in run.of("record") if record["t"] < ends]
    refused = [error for error in run.of("error") if "Authentication failed" in error["what"]]
    print(
        f"[{stack.name}, pasted token] {len(before)} records read before the token ended, "
        f"{len(run.of('record')) - len(before)} after; first refusal "
        f"+{(refused[0]['t'] - ends) / 1000:.1f} s after it ended"
        if refused
        else "no refusal"
    )
    assert before, "it worked while the token was valid"
    assert refused, run.events[-10:]
    assert refused[0]["t"] >= ends


def test_a_java_consumer_reads_with_tokens_it_creates_for_another_owner(
    stack: Stack, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    """KIP-373 by configuration: ``kts.owner`` with kts's ``CreateTokens`` grant; the workload names itself a
    renewer (``kts.renewers``), so it renews the owner's tokens as its own."""
    sub, jwt_file = stack.workload(tmp_path)
    owner = f"User:alice-{uuid.uuid4().hex[:8]}"
    admin = stack.broker.admin
    grant = httpx.post(
        f"{stack.url}/v1/acls",
        json={
            "resourceType": "User",
            "resourceName": owner,
            "patternType": "LITERAL",
            "principal": f"User:{sub}",
            "host": "*",
            "operation": "CreateTokens",
            "permissionType": "Allow",
        },
        auth=(admin.name, admin.password),
        timeout=30,
    )
    assert grant.status_code in (200, 201), grant.text
    topic = _topic_for(stack, owner)
    config = _client_config(
        tmp_path,
        stack,
        f'kts.url="{stack.url}" kts.jwt.file="{jwt_file}" kts.owner="{owner}" kts.renewers="User:{sub}" '
        f'kts.max.lifetime.ms="{MAX_LIFETIME_MS}" kts.replace.overlap.ms="{OVERLAP_MS}"',
    )
    run = run_consumer(
        stack.broker, kts_jvm_jar, config, topic, tokens=2, max_lifetime_ms=MAX_LIFETIME_MS, deadline_s=DEADLINE_S
    )
    events = _check_and_report(stack, run, "kts.owner", f"User:{sub}", [], tokens=2)
    for token_id in run.first_logins():
        assert events[token_id]["owner"] == owner
        assert events[token_id]["tokenRequester"] == f"User:{sub}"
    if stack.name.startswith("zookeeper"):
        assert stack.audit(principal=f"User:{sub}", action="token.renew"), "the requester renewed the owner's tokens"
