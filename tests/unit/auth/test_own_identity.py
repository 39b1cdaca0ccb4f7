"""kts's own principals and the start-up warning of a shared identity (app/auth/own_identity.py), over fakes."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from app.auth.own_identity import OwnIdentity, shared_identity_warnings
from app.domain.credentials import Mechanism
from app.domain.errors import NotAuthenticated, StoreUnavailable
from app.domain.principal import KafkaPrincipal

KTS = KafkaPrincipal.user("kts")
ADMIN = KafkaPrincipal.user("admin")


class Users:
    def __init__(self, *names: str, down: bool = False) -> None:
        self.names = set(names)
        self.down = down
        self.asked: list[str] = []

    def mechanisms(self, user_name: str) -> Mapping[Mechanism, int]:
        self.asked.append(user_name)
        if self.down:
            raise StoreUnavailable("ZooKeeper is not reachable.")
        return {Mechanism.SCRAM_SHA_512: 4096} if user_name in self.names else {}


def test_the_learned_principal_joins_the_configured_ones_once_known() -> None:
    learned: list[KafkaPrincipal | None] = [None]
    identity = OwnIdentity([KTS], lambda: learned[0])
    assert identity.principals() == {KTS}
    learned[0] = KafkaPrincipal.user("CN=kts,OU=platform")
    assert identity.principals() == {KTS, KafkaPrincipal.user("CN=kts,OU=platform")}
    assert not identity.is_own(ADMIN)
    identity.refuse(ADMIN)  # anyone else passes
    with pytest.raises(NotAuthenticated, match="User:CN=kts,OU=platform is the principal kts itself uses"):
        identity.refuse(KafkaPrincipal.user("CN=kts,OU=platform"))


def test_no_warning_for_kts_s_own_scram_login_alone() -> None:
    users = Users("kts")
    assert shared_identity_warnings(OwnIdentity([KTS]), [ADMIN], users, own_scram_login="kts") == []
    assert users.asked == []  # its own credential is not a shared one


def test_one_line_naming_each_way_in() -> None:
    identity = OwnIdentity([KTS], source="its SASL login to ZooKeeper")
    (line,) = shared_identity_warnings(identity, [ADMIN, KTS], Users("kts"))
    assert line.startswith("User:kts is kts's own principal toward the Kafka cluster (its SASL login to ZooKeeper)")
    assert "super.users names it and a SCRAM user of that name exists on the cluster" in line
    assert "\n" not in line


def test_an_unreachable_store_still_warns_about_super_users_and_never_fails_the_start() -> None:
    (line,) = shared_identity_warnings(OwnIdentity([KTS]), [KTS], Users(down=True))
    assert "super.users names it:" in line
    assert shared_identity_warnings(OwnIdentity([KTS]), [], Users(down=True)) == []
