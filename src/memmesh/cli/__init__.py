"""The `mem` command."""

from memmesh.cli.main import main

__all__ = ["main"]
