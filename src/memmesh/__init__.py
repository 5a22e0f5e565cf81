"""memmesh: a team-sharing, peer-to-peer memory network for developers and their agents."""

from memmesh.errors import MemmeshError

__version__ = "0.1.0"

__all__ = ["MemmeshError", "__version__"]
