"""An item's anchors travel with its publication as paths from the repository's top and
hashes: never the folder the repository lies in on its author's disk, and a publication whose
anchor climbs out of a repository, or names an absolute path, never opens."""

import subprocess
from pathlib import Path

import pytest

from memmesh.local.anchors import anchor_file, save
from memmesh.local.store import Store
from memmesh.policy.config import Policy
from memmesh.registry import BadSignature, Identity, Publication, Registry, open_envelope, publish
from memmesh.registry.envelopes import PublishedAnchor, seal
from tests.registry._helpers import publication


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "secret-client-name" / "billing"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src").mkdir()
    (repo / "src" / "retry.py").write_text("def attempts():\n    return 3\n")
    return repo


def _anchored(store: Store, repo: Path, text: str) -> str:
    item, _ = store.remember(text, kind="decision", project="billing")
    with store.transaction() as tx:
        save(tx, item.id, [anchor_file(repo, "src/retry.py", 1, 2, store.clock())])
    return item.id


def _published(registry: Registry) -> list[Publication]:
    found = [open_envelope(entry.envelope) for entry in registry.entries()]
    return [body for body in found if isinstance(body, Publication)]


def test_a_publication_carries_the_anchor_as_a_path_and_hashes_never_the_folder(
    store: Store, registry: Registry, policy: Policy, tmp_path: Path
) -> None:
    repo = _repository(tmp_path)
    item_id = _anchored(store, repo, "attempts() gives up after 3 tries")

    publish(registry, policy, [item_id])

    (body,) = _published(registry)
    (anchor,) = body.anchors
    assert (anchor.path, anchor.first_line, anchor.last_line) == ("src/retry.py", 1, 2)
    assert len(anchor.digest) == 64
    assert len(anchor.line_hashes) == 16  # two lines, 4 bytes each, in hex
    (entry,) = registry.entries()
    assert b"secret-client-name" not in entry.envelope.payload
    assert str(tmp_path).encode() not in entry.envelope.payload


def test_an_item_without_anchors_is_signed_as_before(
    store: Store, registry: Registry, policy: Policy
) -> None:
    item, _ = store.remember("Deploys go out on Tuesdays", kind="decision", project="web")

    publish(registry, policy, [item.id])

    (entry,) = registry.entries()
    assert b'"anchors"' not in entry.envelope.payload
    (body,) = _published(registry)
    assert body.anchors == ()


def test_anchoring_a_published_item_again_publishes_a_new_version(
    store: Store, registry: Registry, policy: Policy, tmp_path: Path
) -> None:
    repo = _repository(tmp_path)
    item, _ = store.remember(
        "attempts() gives up after 3 tries", kind="decision", project="billing"
    )
    publish(registry, policy, [item.id])
    with store.transaction() as tx:
        save(tx, item.id, [anchor_file(repo, "src/retry.py", 0, 0, store.clock())])

    (planned,) = publish(registry, policy, [item.id])

    assert planned.action == "publish"
    assert [len(body.anchors) for body in _published(registry)] == [0, 1]


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../../outside", "src/../../x", "C:/Users/ada/x.py", "a\\b", ""]
)
def test_an_anchor_outside_a_repository_never_opens(identity: Identity, path: str) -> None:
    anchor = PublishedAnchor(path=path, digest="0" * 64, line_hashes="")
    body = publication(identity, anchors=(anchor,))

    with pytest.raises(BadSignature):
        open_envelope(seal(body, identity))


def test_a_well_formed_anchor_opens(identity: Identity) -> None:
    anchor = PublishedAnchor(path="src/a b/x.py", first_line=3, last_line=9, digest="a" * 64,
                             line_hashes="0123abcd")  # fmt: skip
    body = publication(identity, anchors=(anchor,))

    opened = open_envelope(seal(body, identity))

    assert isinstance(opened, Publication)
    assert opened.anchors == (anchor,)


def test_a_long_file_many_anchors_and_secret_files_never_break_the_log(
    store: Store, registry: Registry, policy: Policy, tmp_path: Path
) -> None:
    repo = _repository(tmp_path)
    (repo / "big.py").write_text("".join(f"line_{n} = {n}\n" for n in range(6000)))
    (repo / ".env").write_text("DB_PASSWORD=summer2024\n")
    (repo / "settings.py").write_text("API_KEY = 'ghp_R8x2Lq9ZtB4mK7vN1cW5yH3jD6sF0aE2uP8g'\n")
    for n in range(20):
        (repo / f"m{n:02}.py").write_text(f"x = {n}\n")
    item, _ = store.remember("the big module is generated", kind="decision", project="billing")
    files = ["big.py", ".env", "settings.py", *(f"m{n:02}.py" for n in range(20))]
    with store.transaction() as tx:
        save(tx, item.id, [anchor_file(repo, name, 0, 0, store.clock()) for name in files])

    publish(registry, policy, [item.id])

    (body,) = _published(registry)
    paths = [anchor.path for anchor in body.anchors]
    assert len(paths) == 16
    assert ".env" not in paths
    assert "settings.py" not in paths  # a secret detector fires on its text
    big = next(anchor for anchor in body.anchors if anchor.path == "big.py")
    assert big.line_hashes == ""  # past 4,096 lines: the digest alone
    assert registry.verify() == []
