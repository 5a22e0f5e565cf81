"""Team operations: sync with the coordinator, and (later) recall across the team."""

from memmesh.team.sync import SyncReport, coordinator_client, sync

__all__ = ["SyncReport", "coordinator_client", "sync"]
