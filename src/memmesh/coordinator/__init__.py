"""The passive coordinator on the team host: its service, store and HTTP routes."""

from memmesh.coordinator.app import coordinator_app, endpoints
from memmesh.coordinator.service import Coordinator

__all__ = ["Coordinator", "coordinator_app", "endpoints"]
