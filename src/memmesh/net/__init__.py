"""The HTTP harness both daemons share, and the client side of the protocol.

The harness (``memmesh.net.app``), server (``memmesh.net.server``) and client
(``memmesh.net.client``) are imported from their modules, so that importing the package (as
every `mem` command does, for the defaults) does not load the server stack.
"""

from memmesh.net.errors import NetError
from memmesh.net.settings import DEFAULT_CONCURRENCY, ServeSettings

__all__ = ["DEFAULT_CONCURRENCY", "NetError", "ServeSettings"]
