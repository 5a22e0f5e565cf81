"""The source tree keeps its seams: layers import one way, the store's insides stay in local/,
and no module grows past what one concept needs. Each check reads the source, so it keeps
holding as code is added."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "memmesh"
ARCHITECTURE = SRC.parent.parent / "docs" / "architecture.md"
MAX_LINES = 450
# Every table in the store file and the package that owns it (docs/architecture.md): only
# the owner writes SQL that names it.
OWNERS = {
    **dict.fromkeys(
        (
            "items",
            "items_fts",
            "events",
            "meta",
            "reindex_vectors",
            "schema_versions",
            "recall_traces",
            "team_cache",
            "team_cache_gone",
            "team_cache_meta",
            "hook_runs",
            "team_given",
            "team_tallies",
            "team_tally_cursor",
            "inbox",
        ),
        "local",
    ),
    "registry": "registry",
    "registry_receipts": "registry",
    "peer_disclosures": "peer",
    **dict.fromkeys(
        (
            "coord_envelopes",
            "coord_presence",
            "coord_members",
            "coord_invites",
            "coord_disclosures",
            "coord_usage",
            "coord_purged",
            "coord_tallies",
            "coord_tally_cursor",
            "coord_roster_chain",
            "coord_vectors",
            "coord_nonces",
            "coord_meta",
            "coord_schema_versions",
        ),
        "coordinator",
    ),
}
_SQL_TABLE = re.compile(
    r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|EXISTS|ON)\s+(" + "|".join(OWNERS) + r")\b",
    re.IGNORECASE,
)


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    """The top-level part of memmesh a module belongs to (``local``, ``errors``, ...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every memmesh module ``path`` imports (at any depth: TYPE_CHECKING and function-level
    imports are dependencies too), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("memmesh")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memmesh"):
            found.append((node.lineno, str(node.module)))
            # `from memmesh.local import recall` may name a submodule too.
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if _package(name) or name == "memmesh"]


def _layers() -> list[set[str]]:
    """The layer order docs/architecture.md draws, top first: ``{coordinator, peer}`` is one
    layer of two packages that must not import each other."""
    text = " ".join(ARCHITECTURE.read_text(encoding="utf-8").split())
    match = re.search(r"`(cli → [^`]+)`", text)
    assert match, "docs/architecture.md no longer draws the layer order"
    return [set(layer.strip(" {}").split(", ")) for layer in match.group(1).split(" → ")]


def test_the_layer_order_names_every_package() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    drawn = set().union(*_layers())
    assert packages - drawn == set(), "a package is missing from docs/architecture.md's layers"


def test_no_import_runs_against_the_layer_order() -> None:
    layers = _layers()
    rank = {package: index for index, layer in enumerate(layers) for package in layer}
    # The root's shared modules sit below every layer.
    rank.update(errors=len(layers), _urls=len(layers), __main__=-1)
    against: list[str] = []
    for path in _modules():
        module = _module_name(path)
        source = _package(module)
        if source not in rank:
            continue
        for line, target in _imports(path):
            dest = _package(target)
            if dest in ("", source) or dest not in rank:
                continue
            if rank[dest] <= rank[source]:
                against.append(f"{path.relative_to(SRC)}:{line} imports {target}")
    assert against == []


def test_only_local_touches_the_store_connection_or_its_tables() -> None:
    touching: list[str] = []
    for path in _modules():
        if path.relative_to(SRC).parts[0] == "local":
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            where = f"{path.relative_to(SRC)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr in ("db", "_db"):
                touching.append(f"{where} reaches .{node.attr}")
            elif isinstance(node, ast.Name | ast.alias) and "connection_of" in ast.dump(node):
                touching.append(f"{where} unwraps a transaction")
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if any(n == "sqlite3" or n.startswith("memmesh.local._") for n in names):
                    touching.append(f"{where} imports {', '.join(filter(None, names))}")
    assert touching == []


def test_only_the_owner_of_a_table_writes_sql_on_it() -> None:
    trespassing: list[str] = []
    for path in _modules():
        package = path.relative_to(SRC).parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            for table in _SQL_TABLE.findall(node.value):
                if OWNERS[table.lower()] != package:
                    trespassing.append(f"{path.relative_to(SRC)}:{node.lineno} names {table}")
    assert trespassing == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_module_holds_one_concept(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC)} has {lines} lines"
