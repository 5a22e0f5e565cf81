"""The names of the embedders (memmesh.embed registers them), importable without numpy:
command-line help lists them."""

__all__ = ["DEFAULT_EMBEDDER", "EMBEDDER_NAMES"]

DEFAULT_EMBEDDER = "minilm-static"
# In the order help lists them; memmesh.embed registers a factory under each.
EMBEDDER_NAMES = ("hashing", "minilm-static", "e5-small", "wordllama")
