"""memmesh: a team-sharing, peer-to-peer memory network for developers and their agents.

``from memmesh import Memory`` (or ``AsyncMemory``) is the Python SDK (:mod:`memmesh.sdk`,
docs/sdk.md). It is imported at first use, so that `mem` starts without it.
"""

from memmesh.errors import MemmeshError

# Not typing's: importing typing would cost every `import memmesh`; type checkers know it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from memmesh.sdk import AsyncMemory, Memory

__version__ = "0.1.0"

__all__ = ["AsyncMemory", "MemmeshError", "Memory", "__version__"]


def __getattr__(name: str) -> object:
    """The SDK's classes, imported when first asked for."""
    if name in ("Memory", "AsyncMemory"):
        import memmesh.sdk

        return getattr(memmesh.sdk, name)
    raise AttributeError(f"module 'memmesh' has no attribute {name!r}")
