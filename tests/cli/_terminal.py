"""Running the real `mem` command line with a terminal on stdin and stderr."""

import os
import pty
import subprocess
import sys
import termios
from pathlib import Path


def on_terminal(home: Path, *args: str, typed: str = "") -> tuple[int, str, str]:
    """Run `mem --home HOME ARGS` with a terminal (that does not echo) on stdin and stderr, on
    which ``typed`` was typed; its exit code, stdout, and what it showed on the terminal."""
    controller, terminal = pty.openpty()
    try:
        attributes = termios.tcgetattr(terminal)
        attributes[3] &= ~termios.ECHO
        termios.tcsetattr(terminal, termios.TCSANOW, attributes)
        os.write(controller, typed.encode())
        done = subprocess.run(
            [sys.executable, "-m", "memmesh", "--home", str(home), *args],
            stdin=terminal, stdout=subprocess.PIPE, stderr=terminal, timeout=60, check=False,
        )  # fmt: skip
        os.close(terminal)
        shown = b""
        while chunk := _read(controller):
            shown += chunk
    finally:
        os.close(controller)
    return done.returncode, done.stdout.decode(), shown.decode().replace("\r\n", "\n")


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the terminal's other end is closed: all was read
        return b""


def with_stdin_open(home: Path, *args: str) -> tuple[int, str, str]:
    """Run `mem --home HOME ARGS` with standard input a pipe that stays open, unwritten, until it
    exits (within 30 s, else the test fails); its exit code, stdout and stderr."""
    command = [sys.executable, "-m", "memmesh", "--home", str(home), *args]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, text=True) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        try:
            code = process.wait(timeout=30)
        finally:
            process.kill()  # when it waited on standard input, past the timeout
        process.stdin.close()
        return code, process.stdout.read(), process.stderr.read()
