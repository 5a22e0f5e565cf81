"""One error model: every error has a stable code, the root docstring draws the real tree, the
CLI speaks in named exit codes, and the HTTP harness sends each error's code."""

import ast
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import httpx
import msgspec
import pytest

import memmesh
from memmesh import errors as root
from memmesh.errors import ExitCode, MemmeshError
from memmesh.local.errors import HomeNotCreated, ItemNotFound
from memmesh.local.store import Store
from memmesh.net.app import Endpoint, create_app
from memmesh.net.connect import coordinator_client
from memmesh.net.errors import InsecureBind
from memmesh.net.server import check_bind
from memmesh.policy import parse_policy, policy_template
from memmesh.policy.errors import NoCoordinator
from memmesh.registry import load_identity
from memmesh.registry.errors import IdentityInvalid, IdentityUnreadable
from memmesh.registry.identity import KEY_FILENAME
from tests._servers import running

CLI_SOURCES = sorted((Path(memmesh.__file__).parent / "cli").glob("*.py"))
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


def _errors_modules() -> list[ModuleType]:
    """Every ``memmesh.<subpackage>.errors`` module, imported."""
    found = []
    for info in pkgutil.iter_modules(memmesh.__path__):
        if info.ispkg and importlib.util.find_spec(f"memmesh.{info.name}.errors"):
            found.append(importlib.import_module(f"memmesh.{info.name}.errors"))
    return found


ERRORS_MODULES = _errors_modules()


def _every_error() -> list[type[MemmeshError]]:
    """The root and every class below it, after importing every errors module."""
    assert ERRORS_MODULES, "no errors modules were found"
    pending, seen = [MemmeshError], []
    while pending:
        error = pending.pop()
        seen.append(error)
        pending.extend(error.__subclasses__())
    return seen


def _tree(error: type[MemmeshError], prefix: str = "", last: bool = True) -> list[str]:
    """The lines of the root docstring's tree below ``error``: name, exit code, status, code."""
    if error is MemmeshError:
        label, below = error.__name__, ""
    else:
        label, below = f"{prefix}{'└── ' if last else '├── '}{error.__name__}", prefix
        below += "    " if last else "│   "
        if error.__base__ is MemmeshError:
            label += f" ({error.__module__.split('.')[1]})"
    lines = [f"{label:<36}{error.exit_code:>4}{error.status:>8}  {error.code}"]
    children = sorted(error.__subclasses__(), key=lambda child: child.__name__)
    for index, child in enumerate(children):
        lines += _tree(child, below, index == len(children) - 1)
    return lines


def test_every_errors_module_is_covered() -> None:
    names = {module.__name__ for module in ERRORS_MODULES}
    assert {
        "memmesh.agents.errors",
        "memmesh.embed.errors",
        "memmesh.local.errors",
        "memmesh.net.errors",
        "memmesh.policy.errors",
        "memmesh.registry.errors",
        "memmesh.service.errors",
        "memmesh.team.errors",
    } <= names


def test_every_error_class_has_its_own_snake_case_code() -> None:
    for error in _every_error():
        parent = error.__mro__[1]
        assert error.code != getattr(parent, "code", None), f"{error.__qualname__} inherits it"
        assert SNAKE_CASE.fullmatch(error.code), f"{error.__qualname__}.code = {error.code!r}"


def test_no_two_error_classes_share_a_code() -> None:
    owners: dict[str, list[str]] = {}
    for error in _every_error():
        owners.setdefault(error.code, []).append(error.__qualname__)
    assert {code: names for code, names in owners.items() if len(names) > 1} == {}


def test_every_error_class_lives_in_an_errors_module() -> None:
    modules = {module.__name__ for module in ERRORS_MODULES} | {"memmesh.errors"}
    for error in _every_error():
        assert error.__module__ in modules, f"{error.__qualname__} is in {error.__module__}"


def test_exit_codes_are_the_designed_ones() -> None:
    assert {code.name: int(code) for code in ExitCode} == {
        "OK": 0,
        "ERROR": 1,
        "USAGE": 2,
        "REFUSED": 3,
        "UNREACHABLE": 4,
        "INTERRUPTED": 130,
        "CLOSED_PIPE": 141,
    }
    for error in _every_error():
        assert isinstance(error.exit_code, ExitCode), error.__qualname__


def test_root_docstring_draws_the_real_tree() -> None:
    expected = "\n".join(_tree(MemmeshError))
    assert root.__doc__ is not None
    drawn = "\n".join(line.removeprefix("    ").rstrip() for line in root.__doc__.splitlines())
    assert expected in drawn, f"the tree in memmesh/errors.py should read:\n{expected}"


def test_the_architecture_page_draws_the_same_tree() -> None:
    page = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
    expected = "\n".join(_tree(MemmeshError))
    assert expected in page.read_text(encoding="utf-8"), f"docs/architecture.md:\n{expected}"


# -- the CLI's exit codes ----------------------------------------------------------------------


def _int_literals(node: ast.expr) -> list[ast.Constant]:
    """Integer literals that ``node`` evaluates to directly (through ``a if c else b``, ``or``)."""
    if isinstance(node, ast.Constant):
        is_int = isinstance(node.value, int) and not isinstance(node.value, bool)
        return [node] if is_int else []
    if isinstance(node, ast.IfExp):
        return _int_literals(node.body) + _int_literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [literal for value in node.values for literal in _int_literals(value)]
    return []


def _literal_exit_codes(source: str) -> list[int]:
    """Lines where ``source`` returns, exits with or assigns an exit code that is a literal."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        values: list[ast.expr] = []
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in {"exit", "_exit", "SystemExit"} and node.args:
                values = [node.args[0]]
            values += [kw.value for kw in node.keywords if kw.arg in {"status", "code"}]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = [getattr(t, "id", getattr(t, "attr", "")) for t in targets]
            if any(name in {"exit_code", "code", "status"} for name in named):
                values = [node.value]
        lines += [literal.lineno for value in values for literal in _int_literals(value)]
    return sorted(set(lines))


def test_exit_code_checker_finds_literals() -> None:
    source = (
        "def a(args):\n    return 0\n"
        "def b(args):\n    return 3 if args.x else ExitCode.OK\n"
        "def c(args):\n    sys.exit(2)\n"
        "def d(args):\n    self.exit(ExitCode.USAGE)\n    exit_code = 4\n"
        "def e(args):\n    return len(args) or ExitCode.OK\n"
    )
    assert _literal_exit_codes(source) == [2, 4, 6, 9]


@pytest.mark.parametrize("path", CLI_SOURCES, ids=lambda path: path.name)
def test_cli_exit_codes_are_named(path: Path) -> None:
    lines = _literal_exit_codes(path.read_text(encoding="utf-8"))
    assert lines == [], f"{path.name}: use memmesh.errors.ExitCode, not a number, on lines {lines}"


# -- the HTTP harness ------------------------------------------------------------------------


class _Nothing(msgspec.Struct, frozen=True):
    pass


def _missing() -> _Nothing:
    raise ItemNotFound("01ARZ3NDEKTSV4RRFFQ69G5FAV")


def test_http_error_body_carries_the_error_class_code() -> None:
    app = create_app([Endpoint(path="/missing", handler=_missing, response=_Nothing)], token=None)
    with running(app) as url:
        answer = httpx.get(f"{url}/missing", timeout=5)
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {
            "code": "item_not_found",
            "message": "no item with id '01ARZ3NDEKTSV4RRFFQ69G5FAV'",
        }
    }


# -- specific classes where a base class used to be raised --------------------------------------


def test_plain_http_beyond_loopback_without_a_token_is_an_insecure_bind() -> None:
    with pytest.raises(InsecureBind) as caught:
        check_bind("192.0.2.7", None)
    assert (caught.value.host, caught.value.code) == ("192.0.2.7", "insecure_bind")
    check_bind("192.0.2.7", None, tls=True)  # over https, signed keys are the gate
    check_bind("192.0.2.7", "token")
    check_bind("127.0.0.1", None)


def test_a_home_that_is_a_file_is_home_not_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder", encoding="utf-8")
    with pytest.raises(HomeNotCreated) as caught:
        Store(home)
    assert caught.value.message == f"cannot create the memmesh home {home}: File exists"
    assert caught.value.path == str(home)


def test_a_key_file_that_is_no_key_is_identity_invalid(tmp_path: Path) -> None:
    (tmp_path / KEY_FILENAME).write_bytes(b"-----BEGIN PRIVATE KEY-----\nnope\n")
    with pytest.raises(IdentityInvalid) as caught:
        load_identity(tmp_path)
    assert caught.value.path == str(tmp_path / KEY_FILENAME)
    assert caught.value.message.startswith(f"{tmp_path / KEY_FILENAME} is not a usable private key")


def test_a_key_file_that_cannot_be_read_is_identity_unreadable(tmp_path: Path) -> None:
    (tmp_path / KEY_FILENAME).mkdir()
    with pytest.raises(IdentityUnreadable) as caught:
        load_identity(tmp_path)
    assert caught.value.message.startswith(
        f"cannot read the identity key {tmp_path / KEY_FILENAME}"
    )


def test_a_policy_without_a_coordinator_gives_no_client() -> None:
    policy = parse_policy(policy_template(name="ada", team="core", coordinator=None))
    with pytest.raises(NoCoordinator) as caught:
        coordinator_client(policy, None)
    assert caught.value.exit_code == ExitCode.REFUSED
    assert caught.value.message == "team.yaml names no coordinator, so nothing is ever sent"
