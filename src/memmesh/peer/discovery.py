"""LAN discovery with zeroconf (``_memmesh._tcp.local.``), bound to explicit interfaces.

What is heard is only a hint: a URL where some peer says it listens (``https`` when it says it
serves TLS). A client fetches that peer's signed presence, which sends nothing of its own, and
asks the peer only once the presence verifies and its key is an active member of the roster.
"""

import ipaddress
import threading
import time

import msgspec
from zeroconf import ServiceBrowser, ServiceInfo, ServiceListener, Zeroconf

__all__ = ["SERVICE_TYPE", "Advertiser", "Hint", "browse"]

SERVICE_TYPE = "_memmesh._tcp.local."


class Hint(msgspec.Struct, frozen=True, kw_only=True):
    """A peer URL heard on the LAN, with the key id and name it claims (unverified)."""

    url: str
    key_id: str
    name: str


class Advertiser:
    """Announces one peer on the given interface addresses until stopped (``scheme``: how it
    is reached, ``http`` or ``https``)."""

    def __init__(
        self, *, interfaces: list[str], name: str, key_id: str, port: int, scheme: str = "http"
    ) -> None:
        self._zeroconf = Zeroconf(interfaces=interfaces)
        addresses = [ipaddress.ip_address(ip).packed for ip in interfaces]
        label = f"{name}-{key_id}"
        properties = {"key_id": key_id, "name": name, "path": "/v1", "scheme": scheme}
        self._info = ServiceInfo(
            SERVICE_TYPE,
            f"{label}.{SERVICE_TYPE}",
            addresses=addresses,
            port=port,
            properties=properties,
            server=f"{label}.local.",
        )

    def start(self) -> "Advertiser":
        self._zeroconf.register_service(self._info)
        return self

    def stop(self) -> None:
        try:
            self._zeroconf.unregister_service(self._info)
        finally:
            self._zeroconf.close()


class _Collector(ServiceListener):
    def __init__(self) -> None:
        self.hints: dict[str, Hint] = {}
        self.lock = threading.Lock()

    def add_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        info = zc.get_service_info(type_, name, timeout=1000)
        if info is None or not info.port:
            return
        props = {
            key.decode(errors="replace"): (value or b"").decode(errors="replace")
            for key, value in info.properties.items()
        }
        scheme = "https" if props.get("scheme") == "https" else "http"
        for address in info.parsed_addresses():
            host = f"[{address}]" if ":" in address else address
            hint = Hint(
                url=f"{scheme}://{host}:{info.port}",
                key_id=props.get("key_id", "")[:64],
                name=props.get("name", "")[:64],
            )
            with self.lock:
                self.hints[hint.url] = hint

    def update_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        self.add_service(zc, type_, name)

    def remove_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        return None


def browse(interfaces: list[str], seconds: float = 1.0) -> list[Hint]:
    """Peers announced on ``interfaces`` within ``seconds``."""
    zeroconf = Zeroconf(interfaces=interfaces)
    collector = _Collector()
    try:
        browser = ServiceBrowser(zeroconf, SERVICE_TYPE, collector)
        time.sleep(seconds)
        browser.cancel()
    finally:
        zeroconf.close()
    with collector.lock:
        return list(collector.hints.values())
