"""The distribution is ``kts-kafka`` ("kts" on PyPI is an unrelated project): pyproject.toml, the version lookup and
every install hint (messages, docs, the Dockerfile) name it, and no hint names another project."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import distribution
from pathlib import Path

from app.cli.analytics_extra import INSTALL
from app.version import DISTRIBUTION, kts_version

ROOT = Path(__file__).resolve().parents[2]
# `pip install 'NAME[extra]'`, and in the docs also `NAME[extra]` in backquotes: a distribution named with an extra
# (not `local[2]`).
_PIP_INSTALL = re.compile(r"""pip install ['"]?([A-Za-z0-9][A-Za-z0-9._-]*)\[([a-z][a-z0-9_-]*)\]""")
_QUOTED = re.compile(r"""`([A-Za-z0-9][A-Za-z0-9._-]*)\[([a-z][a-z0-9_-]*)\]`""")


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def _hints() -> list[tuple[str, str, str]]:
    """(file, distribution, extra) of every install hint of the docs, the Dockerfile and the code."""
    docs = [ROOT / "README.md", ROOT / "Dockerfile", *ROOT.glob("docs/*.md"), *ROOT.glob("helm/**/*.yaml")]
    found = []
    for path in [*docs, *ROOT.glob("app/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        patterns = (_PIP_INSTALL, _QUOTED) if path in docs else (_PIP_INSTALL,)
        found += [(str(path.relative_to(ROOT)), *match) for pattern in patterns for match in pattern.findall(text)]
    return found


def test_the_version_is_read_from_the_distribution_pyproject_names() -> None:
    assert _project()["name"] == DISTRIBUTION == "kts-kafka"
    assert kts_version() == distribution(DISTRIBUTION).version != "unknown"


def test_the_command_is_still_kts() -> None:
    assert _project()["scripts"] == {"kts": "app.cli.main:main"}


def test_every_install_hint_names_this_distribution_and_an_extra_it_has() -> None:
    extras = set(_project()["optional-dependencies"])  # type: ignore[arg-type]
    hints = _hints()
    assert {where for where, _, _ in hints} >= {"docs/cli.md", "docs/deployment.md", "docs/analytics.md"}
    for where, name, extra in hints:
        assert name in (DISTRIBUTION, "."), f"{where}: {name}[{extra}] is not this project"
        assert extra in extras, f"{where}: {name}[{extra}] names no extra of pyproject.toml"


def test_the_messages_name_it() -> None:
    source = (ROOT / "app" / "cli" / "client" / "key_stores.py").read_text(encoding="utf-8")
    assert INSTALL.startswith(f"pip install '{DISTRIBUTION}[analytics]'")
    assert "(pip install '{DISTRIBUTION}[jks]')" in source
