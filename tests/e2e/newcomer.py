"""A newcomer's first hour, as code: a fresh clone, ``make run`` in it, and the runnable shell blocks of the docs run
as written, in order, in a shell that holds only what the pages told the reader to set.

The blocks run one ``bash -euo pipefail`` each, so that every broken example is reported, not only the first; what
one block leaves behind for the next (its variables, exported or not, and its working directory) is carried over
as one long shell session would carry it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from shlex import quote

import httpx

from tests.doc_blocks import CodeBlock

# The PATH of a fresh login on Debian: no virtualenv, no ~/.local/bin. What the pages add to it, they add.
NEWCOMER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The machine's own network and package-index settings pass through to `make run` (a newcomer behind a proxy has
# them too); nothing of kts's.
_PASSED_TO_MAKE = re.compile(r"^(https?_proxy|no_proxy|HTTPS?_PROXY|NO_PROXY|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL)$")
BANNER_URL = re.compile(r"kts dev on (http://127\.0\.0\.1:\d+)")
BANNER_PASSWORD = re.compile(r"super user: admin\s+password: (\S+)\s+\(shown only now\)")


def clone(root: Path, destination: Path) -> str:
    """``git clone`` of the checkout under test, at its committed HEAD; returns the commit."""
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(root), str(destination)], check=True)
    subprocess.run(["git", "-C", str(destination), "checkout", "--quiet", "--detach", head], check=True)
    return head


def base_environment(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": NEWCOMER_PATH, "HOME": str(home), "LANG": "C.UTF-8"}


def make_environment(home: Path) -> dict[str, str]:
    """What ``make run`` runs with: a fresh HOME and PATH, the machine's proxy and index settings, and the
    machine's pip download cache (downloads only: the clone's virtualenv is built from nothing)."""
    env = base_environment(home)
    env |= {key: value for key, value in os.environ.items() if _PASSED_TO_MAKE.match(key)}
    cache = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))
    if cache.is_dir():
        env["PIP_CACHE_DIR"] = str(cache)
    return env


@dataclass(frozen=True)
class Stack:
    url: str
    password: str
    log: Path


@contextmanager
def make_run(checkout: Path, port: int, env: dict[str, str], log: Path, timeout_s: float) -> Iterator[Stack]:
    """``make run PORT=port`` in its own process group, until its banner and ``/readyz`` say it serves; the whole
    group (make, kts dev, ZooKeeper) is stopped on the way out."""
    with log.open("w") as output:
        process = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=checkout,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield _wait_for_banner(process, log, timeout_s)
    finally:
        stop_group(process)


def _wait_for_banner(process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> Stack:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if process.poll() is not None:
            raise AssertionError(f"make run exited with {process.returncode}:\n{text[-4000:]}")
        url, password = BANNER_URL.search(text), BANNER_PASSWORD.search(text)
        if url and password and _ready(url.group(1)):
            return Stack(url.group(1), password.group(1), log)
        time.sleep(0.5)
    raise AssertionError(f"make run did not serve within {timeout_s} s:\n{log.read_text(errors='replace')[-4000:]}")


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group make leads (kts dev then stops its ZooKeeper); SIGKILL what is left after a minute."""
    for sig, grace_s in ((signal.SIGTERM, 60.0), (signal.SIGKILL, 15.0)):
        deadline = time.monotonic() + grace_s
        try:
            os.killpg(process.pid, sig)
            while time.monotonic() < deadline:
                process.poll()  # reap make, or the group never empties
                os.killpg(process.pid, 0)
                time.sleep(0.2)
        except ProcessLookupError:
            return


@dataclass(frozen=True)
class BlockRun:
    block: CodeBlock
    returncode: int
    output: str

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    def report(self) -> str:
        return f"--- {self.block.where} exited {self.returncode}\n{self.block.text}--- output\n{self.output[-3000:]}"


def _prologue(state: Path) -> str:
    """Before a block: the directory and the variables the blocks before it left."""
    return f'cd -- "$(cat {quote(str(state / "cwd"))})"\n. {quote(str(state / "variables"))}\n'


def _epilogue(state: Path) -> str:
    """After a block: its directory and its variables (bash's own apart, PATH and HOME included) for the next."""
    own, cwd, variables = (quote(str(state / name)) for name in ("bash-own", "cwd", "variables"))
    return (
        f"\npwd > {cwd}\n"
        f"declare -p $(compgen -v | grep -vxF -f {own}) > {variables}.next 2>/dev/null || true\n"
        f"mv {variables}.next {variables}\n"
    )


def run_blocks(
    blocks: list[CodeBlock],
    cwd: Path,
    env: dict[str, str],
    state: Path,
    before: Callable[[CodeBlock], None] | None = None,
) -> list[BlockRun]:
    """Run each block as written, in order, after what the blocks before it left; never stops at a failure.
    ``before`` runs ahead of each block (what the page has the reader do between blocks: start a server)."""
    state.mkdir(parents=True)
    bash_own = subprocess.run(["env", "-i", "bash", "-c", "compgen -v"], capture_output=True, text=True, check=True)
    own = {name for name in bash_own.stdout.split() if name not in ("PATH", "HOME")}
    (state / "bash-own").write_text("\n".join(sorted(own)) + "\n")
    (state / "cwd").write_text(f"{cwd}\n")
    (state / "variables").write_text("")
    runs = []
    for block in blocks:
        if before is not None:
            before(block)
        script = f"{_prologue(state)}{block.text}{_epilogue(state)}"
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=300,
        )
        runs.append(BlockRun(block, result.returncode, result.stdout))
    return runs
