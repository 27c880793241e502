"""The authenticated caller: a tenant and the key it used."""

from __future__ import annotations

from dataclasses import dataclass

from wopeval.wire.runs import RunOwner, owner_for


@dataclass(frozen=True)
class Principal:
    tenant: str
    key_id: str

    def owner(self) -> RunOwner:
        return owner_for(self.tenant, self.key_id)
