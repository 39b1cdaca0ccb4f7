"""Every client-command example of README.md runs as written against ``kts dev``, the stack the README starts.

The README's fenced ``sh`` blocks are run with bash, ``kts`` on the PATH, ``$PASSWORD`` the admin password
``kts dev`` was given and ``KTS_SERVER`` pointing at its (free) port, since a test cannot count on 8080. The
credentials come the way the README gives them (``KTS_COMMAND_CONFIG`` exported in the block). Only the
long-running commands (``kts serve``, ``kts dev``, ``kts sidecar``) are not run; every other ``kts`` line
of the README must be in a block that is.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from app.cli.server.embedded_zookeeper import free_port
from tests.e2e.cli_helpers import client_env
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready

README = ROOT / "README.md"
LONG_RUNNING = ("serve", "dev", "sidecar")
_FENCED_SH = re.compile(r"^```sh\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _code(text: str) -> str:
    """The README's code: fenced blocks and indented (four-space) lines."""
    fenced = "\n".join(_FENCED_SH.findall(text))
    indented = "\n".join(line for line in _FENCED_SH.sub("", text).splitlines() if line.startswith("    "))
    return fenced + "\n" + indented


def _kts_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("kts ")]


def _client_lines(text: str) -> list[str]:
    return [line for line in _kts_lines(text) if line.split()[1] not in LONG_RUNNING]


def test_readme_client_examples_run_as_written(tmp_path: Path, processes: list[subprocess.Popen[str]]) -> None:
    text = README.read_text(encoding="utf-8")
    blocks = [block for block in _FENCED_SH.findall(text) if _client_lines(block)]
    assert blocks, "the README has no runnable client examples"
    ran = [line for block in blocks for line in _client_lines(block)]
    assert sorted(ran) == sorted(_client_lines(_code(text))), "a kts example outside the runnable sh blocks"
    assert {line.split()[1] for line in ran} >= {"tokens", "acls", "users", "audit"}

    port = free_port()
    password = "readme-admin-pw"
    dev = subprocess.Popen(
        [*KTS, "dev", "--port", str(port), "--data-dir", str(tmp_path / "dev")],
        cwd=ROOT,
        env=kts_env(KTS_ADMIN_PASSWORD=password),
        stdout=(tmp_path / "dev.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    processes.append(dev)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, dev, timeout_s=90)

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kts"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m app.cli.main "$@"\n')
    shim.chmod(0o755)
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = client_env(
        KTS_SERVER=url,
        PASSWORD=password,
        AIRFLOW_PASSWORD="airflow-pw",
        PATH=f"{bin_dir}:{client_env()['PATH']}",
        PYTHONPATH=str(ROOT),
    )
    output = ""
    for block in blocks:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, f"{block}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
        output += result.stdout

    lines = output.splitlines()
    for expected in (
        "Completed updating config for user airflow.",
        "SCRAM credential configs for user-principal 'airflow' are SCRAM-SHA-512=iterations=8192",
        "Adding ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: ",
        " \t(principal=User:airflow, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) ",
        "Calling create token operation with renewers :[User:airflow] , max-life-time-period :-1",
        "Calling describe token operation for owners :[User:joe]",
        "Total number of tokens : 1",
    ):
        assert expected in lines, expected
    assert any(line.startswith("Created delegation token with tokenId : ") for line in lines)
    audit_rows = [line.split() for line in lines if "token.create" in line.split()]
    assert audit_rows and all(row[4] == "User:admin" and row[5] == "User:joe" for row in audit_rows), output
    assert "airflow-pw" not in output and password not in output
