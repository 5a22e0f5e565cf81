"""The laptop daemon: answers teammates from its owner's published items, heartbeats, discovery."""

from memmesh.peer._disclosures import PeerDisclosure, peer_disclosures
from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = ["PRESENCE_TTL", "Peer", "PeerDisclosure", "peer_disclosures"]
