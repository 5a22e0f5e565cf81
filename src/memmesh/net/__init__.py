"""The HTTP harness both daemons share, and the client side of the protocol."""

from memmesh.net.app import Endpoint, create_app
from memmesh.net.client import Client
from memmesh.net.errors import NetError
from memmesh.net.server import ServeSettings, serve

__all__ = ["Client", "Endpoint", "NetError", "ServeSettings", "create_app", "serve"]
