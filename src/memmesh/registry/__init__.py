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

__all__ = [
    "BadSignature",
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
    "create_identity",
    "eligible",
    "load_identity",
    "open_envelope",
    "plan",
    "publish",
    "reconcile",
    "retract",
    "seal",
    "withdraw",
    "withdrawals",
    "withheld",
]
