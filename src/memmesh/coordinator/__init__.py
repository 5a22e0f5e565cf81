"""The passive coordinator on the team host: its service, store and HTTP routes, and the one
way to start it (:mod:`memmesh.coordinator.serve`; for any ASGI server,
:mod:`memmesh.coordinator.asgi`)."""

from memmesh.coordinator.app import coordinator_app, endpoints
from memmesh.coordinator.serve import CoordinatorSettings, create_app, open_coordinator
from memmesh.coordinator.service import Coordinator

__all__ = [
    "Coordinator",
    "CoordinatorSettings",
    "coordinator_app",
    "create_app",
    "endpoints",
    "open_coordinator",
]
