"""What the in-memory user store alone does (the cases every user store passes are the contract suite's,
tests/contract/test_user_store.py): it keeps what a broker keeps of a credential, never the salted password kts
derived (what a cluster taking KIP-554's form needs)."""

from __future__ import annotations

from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.memory.users import MemoryUserStore


def test_the_store_never_keeps_the_salted_password() -> None:
    store = MemoryUserStore()
    credential = derive(Mechanism.SCRAM_SHA_256, "pw", 4096)
    assert credential.salted_password  # positive control: kts derived it

    store.put_credential("ann", Mechanism.SCRAM_SHA_256, credential)

    (kept,) = store.credentials("ann").values()
    assert kept.salted_password == b""
    assert (kept.salt, kept.stored_key, kept.server_key, kept.iterations) == (
        credential.salt,
        credential.stored_key,
        credential.server_key,
        4096,
    )
