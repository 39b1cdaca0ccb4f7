"""The private parts of kazoo that the adapters rely on are still there, with the shapes they use.

kazoo is pinned below its next minor version in pyproject.toml; when raising that pin, these tests say which
adapter needs work. Each failure names the kazoo version, the private name and the adapter."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from importlib.metadata import version

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, AuthFailedError, NoNodeError, SessionClosedRequireSaslError, UnimplementedError
from kazoo.protocol import serialization
from kazoo.protocol.connection import ConnectionHandler
from kazoo.protocol.states import ZnodeStat

from app.storage.zk.persistent_watch import created_children
from app.storage.zk.sasl_rejection import treat_sasl_rejection_as_auth_failure

MULTI_READ = "app/storage/zk/multi_read.py"
CHILDREN_LIST = "app/storage/zk/children_list.py"
SASL_REJECTION = "app/storage/zk/sasl_rejection.py"


def _require(condition: bool, name: str, adapter: str) -> None:
    assert condition, f"kazoo {version('kazoo')} changed {name}, which {adapter} relies on: update it"


def _parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


@pytest.fixture
def client() -> Iterator[KazooClient]:
    made = KazooClient(hosts="127.0.0.1:1")  # never started: no connection is attempted
    yield made
    made.close()


# --- sasl_rejection.py --------------------------------------------------------------------------------------


def test_the_client_keeps_its_connection_handler_in_connection(client: KazooClient) -> None:
    _require(
        isinstance(getattr(client, "_connection", None), ConnectionHandler), "KazooClient._connection", SASL_REJECTION
    )


def test_the_sasl_exchange_is_one_method_called_through_the_instance() -> None:
    method = getattr(ConnectionHandler, "_authenticate_with_sasl", None)
    _require(method is not None, "ConnectionHandler._authenticate_with_sasl", SASL_REJECTION)
    _require(_parameters(method) == ["self", "host", "timeout"], "_authenticate_with_sasl's parameters", SASL_REJECTION)
    _require(
        "self._authenticate_with_sasl(" in inspect.getsource(ConnectionHandler._connect),
        "how ConnectionHandler._connect calls _authenticate_with_sasl",
        SASL_REJECTION,
    )


def test_the_adapter_turns_a_closed_session_into_the_auth_failure_kazoo_handles(client: KazooClient) -> None:
    calls: list[tuple[str, float]] = []

    def refused(host: str, timeout: float) -> None:
        calls.append((host, timeout))
        raise SessionClosedRequireSaslError()

    client._connection._authenticate_with_sasl = refused
    login_refused = treat_sasl_rejection_as_auth_failure(client)
    with pytest.raises(AuthFailedError):
        client._connection._authenticate_with_sasl("zk1", 2.0)
    assert calls == [("zk1", 2.0)]
    assert login_refused.is_set()


def test_the_adapter_records_kazoos_own_auth_failure(client: KazooClient) -> None:
    def refused(host: str, timeout: float) -> None:
        raise AuthFailedError("Connection dropped in SASL")

    client._connection._authenticate_with_sasl = refused
    login_refused = treat_sasl_rejection_as_auth_failure(client)
    with pytest.raises(AuthFailedError):
        client._connection._authenticate_with_sasl("zk1", 2.0)
    assert login_refused.is_set()


def test_the_adapter_leaves_an_accepted_login_alone(client: KazooClient) -> None:
    calls: list[str] = []
    client._connection._authenticate_with_sasl = lambda host, timeout: calls.append(host)
    login_refused = treat_sasl_rejection_as_auth_failure(client)
    client._connection._authenticate_with_sasl("zk1", 2.0)
    assert calls == ["zk1"]
    assert not login_refused.is_set()


# --- multi_read.py ------------------------------------------------------------------------------------------


def test_any_request_object_can_be_queued_with_call(client: KazooClient) -> None:
    _require(_parameters(KazooClient._call) == ["self", "request", "async_object"], "KazooClient._call", MULTI_READ)
    _require(callable(getattr(client.handler, "async_result", None)), "handler.async_result", MULTI_READ)
    _require(isinstance(getattr(client, "chroot", None), str), "KazooClient.chroot", MULTI_READ)
    submit = inspect.getsource(ConnectionHandler._submit)
    _require("request.type" in submit and "request.serialize()" in submit, "ConnectionHandler._submit", MULTI_READ)
    _require(
        "request.deserialize(buffer, offset)" in inspect.getsource(ConnectionHandler._read_response),
        "ConnectionHandler._read_response",
        MULTI_READ,
    )


def test_the_serialization_helpers_keep_their_shapes() -> None:
    _require(serialization.GetData.type == 4, "GetData.type", MULTI_READ)
    _require(serialization.stat_struct.format == "!qqqqiiiqiiq", "stat_struct", MULTI_READ)
    _require(len(ZnodeStat._fields) == 11, "ZnodeStat's fields", MULTI_READ)
    _require(EXCEPTIONS[NoNodeError.code] is NoNodeError, "kazoo.exceptions.EXCEPTIONS", MULTI_READ)


# --- children_list.py ---------------------------------------------------------------------------------------


def test_a_get_children_request_of_any_subclass_leaves_its_watcher_for_its_path() -> None:
    _require(serialization.GetChildren.type == 8, "GetChildren.type", CHILDREN_LIST)
    _require(serialization.GetChildren._fields == ("path", "watcher"), "GetChildren's fields", CHILDREN_LIST)
    _require(_parameters(serialization.read_string) == ["buffer", "offset"], "read_string", CHILDREN_LIST)
    source = inspect.getsource(ConnectionHandler._read_response)
    _require(
        "isinstance(request, (GetChildren, GetChildren2))" in source
        and "client._child_watchers[request.path].add(watcher)" in source,
        "how ConnectionHandler._read_response registers a children watch",
        CHILDREN_LIST,
    )


def test_the_handler_interface_waits_through_select(client: KazooClient) -> None:
    handler = "app/storage/zk/poll_handler.py"
    _require(_parameters(type(client.handler).select) == ["self", "args", "kwargs"], "handler.select", handler)
    for name in ("_read", "_write", "_connect_attempt"):
        _require("self.handler.select(" in inspect.getsource(getattr(ConnectionHandler, name)), name, handler)


TRANSACTION = "app/storage/zk/transaction.py"


def test_a_transactions_operations_are_the_request_records_it_sends(client: KazooClient) -> None:
    transaction = client.transaction()
    _require(transaction.operations == [], "TransactionRequest.operations", TRANSACTION)
    transaction.create("/a", b"x", acl=[], sequence=True)
    transaction.delete("/b", version=3)
    create, delete = transaction.operations
    _require(
        create == serialization.Create("/a", b"x", [], 2) and isinstance(create, serialization.Create),
        "the Create request record",
        TRANSACTION,
    )
    _require(delete == serialization.Delete("/b", 3), "the Delete request record", TRANSACTION)
    _require("self.operations" in inspect.getsource(type(transaction).commit_async), "commit_async", TRANSACTION)


# --- persistent_watch.py ------------------------------------------------------------------------------------

PERSISTENT_WATCH = "app/storage/zk/persistent_watch.py"


def test_watch_events_are_read_by_one_method_called_through_the_instance() -> None:
    method = getattr(ConnectionHandler, "_read_watch_event", None)
    _require(method is not None, "ConnectionHandler._read_watch_event", PERSISTENT_WATCH)
    _require(_parameters(method) == ["self", "buffer", "offset"], "_read_watch_event's parameters", PERSISTENT_WATCH)
    _require(
        "self._read_watch_event(buffer, offset)" in inspect.getsource(ConnectionHandler._read_socket),
        "how ConnectionHandler._read_socket calls _read_watch_event",
        PERSISTENT_WATCH,
    )


def test_a_watch_event_is_its_type_state_and_path() -> None:
    body = serialization.int_int_struct.pack(1, 3) + serialization.write_string("/a/b")
    _require(serialization.Watch.deserialize(body, 0)[0] == (1, 3, "/a/b"), "Watch.deserialize", PERSISTENT_WATCH)
    _require(EXCEPTIONS[-6] is UnimplementedError, "UnimplementedError's code", PERSISTENT_WATCH)


def test_the_adapter_routes_created_children_and_hands_every_event_on_to_kazoo(client: KazooClient) -> None:
    handled: list[tuple[bytes, int]] = []
    client._connection._read_watch_event = lambda buffer, offset: handled.append((buffer, offset))
    watches = created_children(client)
    names: list[str | None] = []
    watches.add("/queue", names.append)

    for kind, path in ((1, "/queue/change_0000000001"), (2, "/queue/change_0000000001"), (1, "/elsewhere/x")):
        event = b"pad" + serialization.int_int_struct.pack(kind, 3) + serialization.write_string(path)
        client._connection._read_watch_event(event, 3)

    assert names == ["change_0000000001"]
    assert len(handled) == 3
