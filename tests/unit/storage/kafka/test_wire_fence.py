"""The private parts of kafka-python and kio that app/storage/kafka/wire.py relies on, checked one by one, so
that an upgrade that moves them fails here with a sentence naming what changed, not deep in a broker test.
(pyproject.toml bounds both libraries to the minor these tests pass on.)"""

from __future__ import annotations

import inspect
import io
import struct

from kafka.net.connection import KafkaConnection
from kafka.net.manager import KafkaConnectionManager
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeUserScramCredentialsRequest,
)
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol
from kio.schema.create_delegation_token.v3.response import CreateDelegationTokenResponse
from kio.schema.errors import ErrorCode
from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest
from kio.schema.expire_delegation_token.v2.response import ExpireDelegationTokenResponse
from kio.serial import entity_writer
from kio.static.primitive import i32

from app.storage.kafka.token_rpc import VERSIONS, _period
from app.storage.kafka.wire import KioRequest


def test_kafka_python_connection_internals_wire_py_calls() -> None:
    for owner, name in (
        (KafkaConnectionManager, "_build_transport"),
        (KafkaConnection, "_get_api_versions"),
        (KafkaConnection, "_send_request"),
        (KafkaConnection, "connection_made"),
    ):
        assert callable(getattr(owner, name, None)), f"kafka-python no longer has {owner.__name__}.{name}"
    assert "timeout_at" in inspect.signature(KafkaConnectionManager._build_transport).parameters
    assert list(inspect.signature(ScramClient).parameters) == ["user", "password", "mechanism"], "ScramClient changed"


def test_kafka_python_parser_sends_a_kio_request_and_reads_its_answer() -> None:
    """The duck type kafka-python's protocol parser expects of a request and of a response class, driven with
    bytes: a kio Expire request is framed with its header, and an answer carrying an error is read for its code
    alone (kio refuses the -1 timestamps Kafka puts beside an error)."""
    parser = KafkaProtocol(client_id="kts")
    request = KioRequest(
        ExpireDelegationTokenRequest(hmac=b"x" * 64, expiry_time_period=_period(-1)), ExpireDelegationTokenResponse
    )
    correlation_id = parser.send_request(request)
    sent = parser.send_bytes()
    (length,) = struct.unpack(">i", sent[:4])
    assert length == len(sent) - 4
    assert struct.unpack(">hhi", sent[4:12]) == (40, VERSIONS[40], correlation_id)
    # An answer with error 62 and an expiry of -1: header v1 (correlation id, no tagged fields), then the body.
    body = struct.pack(">ih", correlation_id, 62) + struct.pack(">q", -1) + struct.pack(">i", 0) + b"\x00"
    header_and_body = struct.pack(">i", correlation_id) + b"\x00" + body[4:]
    answers = parser.receive_bytes(struct.pack(">i", len(header_and_body)) + header_and_body)
    assert [(cid, answer.error_code, answer.message) for cid, answer in answers] == [(correlation_id, 62, None)]


def test_kio_decodes_a_successful_token_answer() -> None:
    out = io.BytesIO()
    header = CreateDelegationTokenResponse.__header_schema__
    entity_writer(header)(out, header(correlation_id=i32(7)))
    from datetime import UTC, datetime, timedelta

    moment = datetime(2025, 1, 1, tzinfo=UTC)
    entity_writer(CreateDelegationTokenResponse)(
        out,
        CreateDelegationTokenResponse(
            error_code=ErrorCode.none,
            principal_type="User",
            principal_name="alice",
            token_requester_principal_type="User",
            token_requester_principal_name="kts",
            issue_timestamp=moment,
            expiry_timestamp=moment,
            max_timestamp=moment,
            token_id="E8gTWaIxRUOaSRH7wY3N1w",
            hmac=b"h" * 64,
            throttle_time=timedelta(0),  # type: ignore[arg-type]
        ),
    )
    data = out.getvalue()
    buffer = KafkaBytes(len(data))
    buffer.write(data)
    buffer.seek(0)
    response_type = KioRequest(
        ExpireDelegationTokenRequest(hmac=b"", expiry_time_period=_period(1)), CreateDelegationTokenResponse
    )
    response_type.with_header(1)
    assert request_header_id(response_type) == 1
    reader = response_type.header.get_response_class()  # type: ignore[union-attr]
    assert reader.parse_header(buffer).correlation_id == 7
    answer = reader.decode(buffer)
    assert answer.error_code == 0 and answer.message.token_id == "E8gTWaIxRUOaSRH7wY3N1w"


def request_header_id(request: KioRequest) -> int:  # type: ignore[type-arg]
    assert request.header is not None
    return request.header.correlation_id


def test_kafka_python_has_the_admin_messages_kts_sends() -> None:
    for message in (
        CreateAclsRequest,
        DeleteAclsRequest,
        DescribeAclsRequest,
        AlterUserScramCredentialsRequest,
        DescribeUserScramCredentialsRequest,
    ):
        assert message.max_version >= 0, message
    assert DescribeAclsRequest.max_version >= 3 and CreateAclsRequest.max_version >= 3, "ACL v3 (User) missing"
    assert hasattr(CreateAclsRequest, "AclCreation") and hasattr(DeleteAclsRequest, "DeleteAclsFilter")
