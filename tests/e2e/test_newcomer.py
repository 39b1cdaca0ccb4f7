"""A newcomer's first hour: clone the repository, ``make run`` in the clone, and run every shell block of README.md
and docs/ marked ``<!-- runnable -->``, as written and in order (tests/doc_blocks.py has the convention).

What the blocks get is what the pages told the reader to have: a fresh HOME, Debian's PATH (the README itself adds
``.venv/bin``), and ``KTS_SERVER`` and ``PASSWORD``, which the README says to take from ``make run``'s banner, so
this test takes them from the banner too. ``make run`` serves on a free port (``make run PORT=...``), since a shared
machine cannot promise 8080. The clone is of the committed ``HEAD``: commit before running this test. ``make run``
builds the clone's own virtualenv from nothing (the machine's pip download cache is shared); it takes a couple of
minutes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.cli.server.embedded_zookeeper import free_port
from tests.doc_blocks import ROOT, code_blocks, exported_names, pages, values_block
from tests.e2e import newcomer

MAKE_RUN_TIMEOUT_S = 900.0
# What the blocks print when they work as the pages say (the README's and docs/cli.md's examples).
EXPECTED_LINES = (
    "Completed updating config for user airflow.",
    "SCRAM credential configs for user-principal 'airflow' are SCRAM-SHA-512=iterations=8192",
    "Adding ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: ",
    " \t(principal=User:airflow, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) ",
    "Calling create token operation with renewers :[User:airflow] , max-life-time-period :-1",
    "Calling describe token operation for owners :[User:joe]",
    "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192",
)


def _error_envelopes(run: newcomer.BlockRun) -> list[str]:
    """kts's error bodies in a block's output: a curl without --fail-with-body exits 0 on a 401."""
    return [line for line in run.output.splitlines() if '{"error":' in line.replace(" ", "")]


@pytest.mark.timeout(1800)
def test_a_newcomer_runs_every_runnable_example_as_written(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.fail(f"{ROOT} is not a git checkout: the newcomer test clones it", pytrace=False)
    assert exported_names(values_block(ROOT / "README.md", "banner")) == {"KTS_SERVER", "PASSWORD"}
    checkout = tmp_path / "kts"
    commit = newcomer.clone(ROOT, checkout)
    blocks = [block for page in pages() for block in code_blocks(checkout / page.relative_to(ROOT)) if block.runnable]
    assert blocks, "no runnable block"
    home = tmp_path / "home"
    port = free_port()
    with newcomer.make_run(
        checkout, port, newcomer.make_environment(home), tmp_path / "make-run.log", MAKE_RUN_TIMEOUT_S
    ) as stack:
        assert stack.url == f"http://127.0.0.1:{port}", "make run PORT=... did not serve on that port"
        env = newcomer.base_environment(home) | {"KTS_SERVER": stack.url, "PASSWORD": stack.password}
        runs = newcomer.run_blocks(blocks, checkout, env, tmp_path / "shell-state")

    broken = [run for run in runs if run.failed or _error_envelopes(run)]
    assert not broken, f"{len(broken)} of {len(runs)} examples broken at {commit[:12]}:\n" + "\n".join(
        run.report() for run in broken
    )
    lines = "\n".join(run.output for run in runs).splitlines()
    for expected in EXPECTED_LINES:
        assert expected in lines, expected
    created = [line for line in lines if line.startswith("Created delegation token with tokenId : ")]
    assert len(created) >= 2, "kts tokens --create printed no token"
    output = "\n".join(run.output for run in runs)
    for secret in ("airflow-secret", stack.password):
        assert secret not in output, "a password was printed"


def test_the_harness_reports_a_broken_block_and_carries_state_over(tmp_path: Path) -> None:
    """The positive control: a failing block is reported with its output, the blocks after it still run, and
    variables (exported or not) and the working directory carry over as in one shell session."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- runnable -->\n```sh\nmkdir -p sub && cd sub\nSEEN=one\nexport EXPORTED=two\n```\n\n"
        '<!-- runnable -->\n```sh\necho "$SEEN $EXPORTED $(basename "$PWD")"\nfalse\necho never\n```\n\n'
        '<!-- runnable -->\n```sh\necho "$UNSET_VARIABLE"\n```\n\n'
        '<!-- runnable -->\n```sh\nexport PATH="/nowhere:$PATH"\necho "$SEEN"\n```\n\n'
        '<!-- runnable -->\n```sh\ncase "$PATH" in /nowhere:*) echo kept;; esac\n```\n',
        encoding="utf-8",
    )
    runs = newcomer.run_blocks(
        code_blocks(page), tmp_path, newcomer.base_environment(tmp_path / "home"), tmp_path / "state"
    )
    assert [run.returncode for run in runs] == [0, 1, 1, 0, 0]
    assert runs[1].output == "one two sub\n"
    assert "UNSET_VARIABLE: unbound variable" in runs[2].output
    assert runs[3].output == "one\n" and runs[4].output == "kept\n"
    assert "page.md:9" in runs[1].report()


def test_make_run_stops_with_its_group(tmp_path: Path) -> None:
    """Stopping the stack stops every process ``make run`` started (here a stand-in that outlives make)."""
    script = tmp_path / "Makefile"
    script.write_text("run:\n\tsleep 600 & echo started; wait\n", encoding="utf-8")
    log = tmp_path / "make.log"
    process = subprocess.Popen(
        ["make", "run"], cwd=tmp_path, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    newcomer.stop_group(process)
    assert process.poll() is not None
    try:
        alive = subprocess.run(["pgrep", "-g", str(process.pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        alive = ""
    assert alive.strip() == ""
