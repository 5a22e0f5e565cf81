"""The inbox section of the page (docs/ui.md)."""

from starlette.routing import BaseRoute

__all__ = ["routes"]

routes: list[BaseRoute] = []
