"""`make run` installs only what `kts dev` needs; `make test` installs the rest; CI installs everything.

What a target would do is read from make itself: ``make --dry-run --always-make TARGET`` prints every command the
target and its prerequisites would run on a fresh checkout, with the variables expanded.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Packages only the tests use: the PostgreSQL audit tests, the browser tests, Spark's JDBC drivers.
TEST_ONLY_APT = {
    "postgresql-15",
    "chromium",
    "chromium-driver",
    "libpostgresql-jdbc-java",
    "build-essential",
    "python3-dev",
    "libxerial-sqlite-jdbc-java",
}
_APT_LOOP = re.compile(r"for p in ([^;]*); do dpkg -s")


@dataclass(frozen=True)
class Plan:
    commands: list[str]

    @property
    def apt_packages(self) -> set[str]:
        return {
            package for command in self.commands for match in _APT_LOOP.findall(command) for package in match.split()
        }

    @property
    def pip_installs(self) -> list[list[str]]:
        """The arguments after ``pip install`` of each pip command, options dropped."""
        installs = []
        for command in self.commands:
            words = shlex.split(command)
            if "pip" in words and "install" in words[words.index("pip") :]:
                arguments = words[words.index("install", words.index("pip")) + 1 :]
                installs.append([word for word in arguments if not word.startswith("-")])
        return installs

    @property
    def stamps(self) -> set[str]:
        return {command.split()[1] for command in self.commands if command.startswith("touch ")}


def plan(target: str, tmp_path: Path, *arguments: str, **environment: str) -> Plan:
    result = subprocess.run(
        ["make", "--dry-run", "--always-make", "--no-print-directory", target, *arguments],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Plan([line.strip() for line in result.stdout.splitlines() if line.strip()])


@pytest.fixture
def run(tmp_path: Path) -> Plan:
    return plan("run", tmp_path)


@pytest.fixture
def test(tmp_path: Path) -> Plan:
    return plan("test", tmp_path)


def test_make_run_installs_zookeeper_and_the_runtime_package_only(run: Plan) -> None:
    assert run.apt_packages == {"zookeeper"}
    assert run.pip_installs == [["pip"], ["."]]  # pip itself, then kts without extras
    assert not TEST_ONLY_APT & run.apt_packages
    assert not [command for command in run.commands if "[test" in command or "analytics" in command]
    assert run.commands[-1] == ".venv/bin/kts dev --port 8080"


def test_make_run_takes_another_port_on_the_command_line(tmp_path: Path) -> None:
    """`make run PORT=8081`, as the README and `kts dev`'s busy-port message say; a PORT variable left in the
    environment by some other tool does not move the stack."""
    assert plan("run", tmp_path, "PORT=8081").commands[-1] == ".venv/bin/kts dev --port 8081"
    assert plan("run", tmp_path, PORT="8082").commands[-1] == ".venv/bin/kts dev --port 8080"


def test_make_test_installs_the_rest_on_top(run: Plan, test: Plan) -> None:
    """The positive control of the test above: the same reading finds the test-only installs in `make test`."""
    assert test.apt_packages == run.apt_packages | TEST_ONLY_APT
    assert [".[test,analytics]"] in test.pip_installs
    assert run.pip_installs == test.pip_installs[: len(run.pip_installs)]  # what `make run` did is not redone
    assert run.stamps < test.stamps  # its own stamp: after `make run`, `make test` still installs the extras
    assert ".venv/bin/python -m pytest" in test.commands[-1]


def test_make_test_installs_maven_and_a_jdk_where_missing_and_make_run_does_not(run: Plan, test: Plan) -> None:
    """The Kafka brokers' tools: by command, so that a JDK or Maven installed otherwise is not doubled."""
    step = "for pair in mvn:maven javac:default-jdk-headless; do command -v"
    assert [command for command in test.commands if step in command]
    assert not [command for command in run.commands if "maven" in command]


def test_ci_installs_everything_and_runs_make_test() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (install,) = [line for line in script.splitlines() if line.startswith("apt-get install")]
    expected = {"zookeeper", "make", "python3-venv", "maven", "default-jdk-headless"} | TEST_ONLY_APT
    assert expected <= set(install.split())
    assert script.rstrip().splitlines()[-1] == "make test"


def test_make_test_runs_every_test_in_parallel_and_prints_how_long_it_took(test: Plan) -> None:
    (command,) = [command for command in test.commands if "-m pytest" in command]
    assert " -n 4 " in command and "--dist loadfile" in command and "--reruns 1" in command
    assert " -m " not in command.split("-m pytest", 1)[1]  # every test: no marker selects a part
    assert 'echo "make test: ' in command and command.rstrip().endswith("exit $status")  # pytest's status, kept


def test_make_check_lints_type_checks_and_runs_the_fast_tier(tmp_path: Path) -> None:
    check = plan("check", tmp_path)
    (command,) = [command for command in check.commands if "-m pytest" in command]
    steps = [".venv/bin/ruff check", ".venv/bin/ruff format --check", ".venv/bin/mypy", ".venv/bin/python -m pytest"]
    assert [command.index(step) for step in steps] == sorted(command.index(step) for step in steps)
    assert "-m check tests/unit tests/api" in command and " -n 2 " in command
    assert 'echo "make check: ' in command and command.rstrip().endswith("exit $status")


def pytest_in_checkout(*arguments: str) -> subprocess.CompletedProcess[str]:
    """pytest in a process of its own on this checkout (its start imports the app: slow on a loaded machine)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )


@pytest.mark.timeout(600)
def test_the_fast_tier_takes_the_api_tests_on_zookeeper_and_leaves_the_brokers_and_postgresql_to_make_test() -> None:
    files = ("tests/api/test_backends.py", "tests/api/test_audit_jobs.py")
    listed = pytest_in_checkout("--collect-only", "-q", "-m", "check", *files).stdout
    chosen = [line for line in listed.splitlines() if "::" in line]
    params = [name.partition("[")[2].rstrip("]").split("-") for name in chosen]
    assert [ids for ids in params if "zookeeper" in ids]  # the positive controls: the tier is not empty
    assert [ids for ids in params if "sqlite" in ids]
    assert not [ids for ids in params if {"kraft", "zk", "postgresql"} & set(ids)]


@pytest.mark.timeout(600)
def test_a_parallel_run_of_no_test_fails() -> None:
    """pytest exits 5 when every test was deselected, workers or not: make passes it on, so it is never green."""
    result = pytest_in_checkout("-n", "1", "--dist", "loadfile", "-m", "check", "tests/deploy/test_makefile.py")
    assert result.returncode == 5, result.stdout[-2000:]
