"""Identity keys, signed publications and tombstones, and the append-only registry log."""

from memmesh.registry.envelopes import Envelope, Publication, Retraction, open_envelope, seal
from memmesh.registry.errors import (
    BadSignature,
    IdentityExists,
    IdentityMissing,
    NotPublished,
    NotYourItem,
    RegistryError,
    RetractedBefore,
    RosterChainBroken,
)
from memmesh.registry.identity import Identity, create_identity, load_identity
from memmesh.registry.log import Entry, Live, Registry
from memmesh.registry.publish import (
    Planned,
    eligible,
    plan,
    publish,
    reconcile,
    retract,
    withdraw,
    withdrawals,
    withheld,
)
from memmesh.registry.receipts import KeptReceipt
from memmesh.registry.roster_chain import (
    ChainHead,
    RosterState,
    SignedStatement,
    display_names,
    extends,
    verify_chain,
)

__all__ = [
    "BadSignature",
    "ChainHead",
    "Entry",
    "Envelope",
    "Identity",
    "IdentityExists",
    "IdentityMissing",
    "KeptReceipt",
    "Live",
    "NotPublished",
    "NotYourItem",
    "Planned",
    "Publication",
    "Registry",
    "RegistryError",
    "RetractedBefore",
    "Retraction",
    "RosterChainBroken",
    "RosterState",
    "SignedStatement",
    "create_identity",
    "display_names",
    "eligible",
    "extends",
    "load_identity",
    "open_envelope",
    "plan",
    "publish",
    "reconcile",
    "retract",
    "seal",
    "verify_chain",
    "withdraw",
    "withdrawals",
    "withheld",
]
