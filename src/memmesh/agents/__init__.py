"""Coding agents use memmesh: the MCP server, the session brief and the clients' configuration.

Only :mod:`memmesh.agents.server` needs the optional MCP SDK; the brief and the configuration
installer work without it.
"""

__all__: list[str] = []
