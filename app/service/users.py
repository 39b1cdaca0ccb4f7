"""SCRAM credential management: who may change credentials, and the credential written."""

from __future__ import annotations

from app.auth.scram import derive
from app.domain.authorization import CLUSTER_RESOURCE_NAME, Authorizer, Caller, Operation, ResourceType
from app.domain.credentials import Mechanism
from app.domain.errors import ClusterAuthorizationFailed
from app.service.ports import UserStore


class UserCredentialService:
    def __init__(self, store: UserStore, *, authorizer: Authorizer) -> None:
        self._store = store
        self._authorizer = authorizer

    def _authorize(self, caller: Caller) -> None:
        if caller.token_authenticated or not self._authorizer.authorize(
            caller, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        ):
            raise ClusterAuthorizationFailed(
                f"{caller.principal} may not change credentials (needs Alter on Cluster:{CLUSTER_RESOURCE_NAME})."
            )

    def set_password(
        self, caller: Caller, user_name: str, mechanism: Mechanism, password: str, iterations: int
    ) -> None:
        self._authorize(caller)
        self._store.put_credential(user_name, mechanism, derive(mechanism, password, iterations))

    def delete(self, caller: Caller, user_name: str, mechanism: Mechanism) -> None:
        self._authorize(caller)
        self._store.delete_credential(user_name, mechanism)
