"""The laptop daemon: answers teammates from its owner's published items, heartbeats, discovery."""

from memmesh.peer.service import PRESENCE_TTL, Peer

__all__ = ["PRESENCE_TTL", "Peer"]
