"""The coordinator's image, run without a container engine: its entrypoint, chrooted into
the image's read-only root (`podman image mount`), in a mount and network namespace of its
own, as its user, with a writable /data and /tmp bound in, as a container would have them.

The image is ``$MEMMESH_IMAGE`` (.ci/run builds it with deploy/ci/build-image and sets it).
Unset, the tests that need it are skipped; set, an image that is not there, or a machine
where it cannot be run (no podman, not root), fails them, so CI cannot pass without having
run them.
"""

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._servers import stop


def image_name() -> str:
    """The image to run, or a skip (a failure where CI asked for one that is not there)."""
    asked = os.environ.get("MEMMESH_IMAGE", "")
    if not asked:
        pytest.skip("no coordinator image given (MEMMESH_IMAGE; deploy/ci/build-image makes it)")
    podman = shutil.which("podman")
    if podman is None or os.geteuid() != 0:
        pytest.fail(f"MEMMESH_IMAGE names {asked}, which needs podman and root to run here")
    found = subprocess.run([podman, "image", "exists", asked], check=False)
    if found.returncode != 0:
        pytest.fail(f"MEMMESH_IMAGE names {asked}, which is not there: .ci/run builds it")
    return asked


@dataclass(frozen=True)
class Image:
    """An image's root, mounted read-only, and how it runs."""

    name: str
    root: Path
    config: dict[str, Any]
    healthcheck: list[str]

    @property
    def user(self) -> tuple[int, int]:
        """The uid and gid of the image's user, as its /etc/passwd has them."""
        name = self.config["User"]
        for line in (self.root / "etc" / "passwd").read_text(encoding="utf-8").splitlines():
            fields = line.split(":")
            if fields[0] == name:
                return int(fields[2]), int(fields[3])
        raise AssertionError(f"the image's user {name} is not in its /etc/passwd")

    @property
    def environment(self) -> dict[str, str]:
        """The environment the image gives its processes."""
        return dict(entry.split("=", 1) for entry in self.config.get("Env", []))


@contextmanager
def mounted(name: str) -> Iterator[Image]:
    """``name``'s root, mounted for the ``with``."""
    inspected = json.loads(
        subprocess.run(
            ["podman", "image", "inspect", name], capture_output=True, check=True, text=True
        ).stdout
    )[0]
    root = subprocess.run(
        ["podman", "image", "mount", name], capture_output=True, check=True, text=True
    ).stdout.strip()
    test = (inspected.get("Healthcheck") or {}).get("Test") or []
    try:
        yield Image(
            name=name,
            root=Path(root),
            config=inspected["Config"],
            healthcheck=test[1:] if test[:1] == ["CMD"] else test,
        )
    finally:
        subprocess.run(["podman", "image", "unmount", name], capture_output=True, check=False)


def in_a_container(
    image: Image,
    folder: Path,
    command: Sequence[str],
    *,
    environment: Mapping[str, str] | None = None,
    sockets: Mapping[Path, str] | None = None,
) -> list[str]:
    """The words that run ``command`` (a path inside the image first) as the image would run
    it: chrooted into its root as its user, with its environment (and ``environment``), in
    a mount and network namespace of its own, with ``folder``'s ``data`` and ``tmp`` (made
    here) as /data and /tmp, and each of ``sockets`` (a Unix socket of this machine) at its
    path under /tmp."""
    data, tmp = folder / "data", folder / "tmp"
    for made in (data, tmp):
        made.mkdir(parents=True)
    os.chown(data, *image.user)
    tmp.chmod(0o1777)
    root = str(image.root)
    mounts = [("--bind", data, "/data"), ("--bind", tmp, "/tmp"), ("--rbind", Path("/dev"), "/dev")]
    lines = ["set -e", "PATH=$PATH:/usr/sbin:/sbin", "ip link set lo up"]
    lines += [shlex.join(["mount", how, str(src), root + inside]) for how, src, inside in mounts]
    lines.append(shlex.join(["mount", "-t", "proc", "proc", f"{root}/proc"]))
    for socket, inside in (sockets or {}).items():
        assert inside.startswith("/tmp/"), inside
        (tmp / inside.removeprefix("/tmp/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp / inside.removeprefix("/tmp/")).touch()
        lines.append(shlex.join(["mount", "--bind", str(socket), root + inside]))
    given = {**image.environment, **(environment or {})}
    uid, gid = image.user
    chrooted = ["chroot", f"--userspec={uid}:{gid}", root, "env", "-i"]
    chrooted += [f"{name}={value}" for name, value in given.items()]
    lines.append("exec " + shlex.join([*chrooted, *command]))
    return ["unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", "\n".join(lines)]


class Running:
    """The image's entrypoint with ``args`` for its command, running as the image would
    (:func:`in_a_container`): what it prints goes to :attr:`log`, what it keeps to
    :attr:`data`."""

    def __init__(
        self,
        image: Image,
        folder: Path,
        args: Sequence[str],
        *,
        environment: Mapping[str, str] | None = None,
        sockets: Mapping[Path, str] | None = None,
    ) -> None:
        self.image = image
        self.data = folder / "data"
        self.log = folder / "entrypoint.log"
        command = in_a_container(
            image,
            folder,
            [*image.config["Entrypoint"], *args],
            environment=environment,
            sockets=sockets,
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)

    def output(self) -> str:
        """What it printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        """Whether it still runs."""
        return self.process.poll() is None

    def in_its_network(self) -> list[str]:
        """The words that run a command of this machine in its network namespace."""
        return ["nsenter", f"--net=/proc/{self.process.pid}/ns/net", "--"]

    def inside(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """``command`` run in its container: its namespaces, root and user, the image's
        environment."""
        uid, gid = self.image.user
        return subprocess.run(
            [
                "nsenter",
                f"--target={self.process.pid}",
                "--mount",
                "--net",
                "--root",
                "--wd",
                f"--setuid={uid}",
                f"--setgid={gid}",
                "--",
                *command,
            ],
            capture_output=True,
            text=True,
            env=self.image.environment,
            timeout=timeout,
            check=False,
        )

    def stop(self) -> None:
        """SIGTERM, as a container engine stops it, and wait."""
        stop(self.process)
