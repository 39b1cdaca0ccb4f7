"""Every shell example of README.md and docs/ says whether it runs (tests/doc_blocks.py has the convention): the
newcomer test and the walkthrough test run the runnable ones, so an unmarked block would go untested unseen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_blocks import (
    ROOT,
    classification_problems,
    code_blocks,
    exported_names,
    pages,
    values_block,
)


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_code_block_is_fenced_with_a_language_and_every_shell_block_is_marked(page: Path) -> None:
    problems = [problem for block in code_blocks(page) for problem in classification_problems(block)]
    assert problems == []


def test_every_page_of_docs_is_read() -> None:
    assert set(pages()) == {ROOT / "README.md", *(ROOT / "docs").glob("*.md")}


def test_the_readme_and_the_walkthrough_have_runnable_blocks() -> None:
    blocks = [block for page in pages() for block in code_blocks(page)]
    assert sum(block.runnable for block in blocks if block.page == ROOT / "README.md") >= 3
    assert sum(block.runnable_against_brokers for block in blocks if block.page.name == "deployment.md") >= 3


def test_the_values_a_reader_brings_are_named_by_the_pages() -> None:
    """The newcomer test gives the README's blocks KTS_SERVER and PASSWORD from the banner, the walkthrough test
    gives the walkthrough's blocks their cluster values: each only because the page tells its reader to set them."""
    assert exported_names(values_block(ROOT / "README.md", "banner")) == {"KTS_SERVER", "PASSWORD"}
    walkthrough = values_block(ROOT / "docs" / "deployment.md", "your cluster's values")
    assert exported_names(walkthrough) == {"PATH", "BOOTSTRAP", "KTS_SERVER"}
    assert "broker-admin.properties" in walkthrough.text and "client.properties" in walkthrough.text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("    make run\n", "an indented code block"),
        ("```\nmake run\n```\n", "a fence without a language"),
        ("```sh\nmake run\n```\n", "a shell block without"),
        ("<!-- not runnable -->\n```sh\nmake run\n```\n", "is none of"),
        ("<!-- runnable -->\n```yaml\na: b\n```\n", "a yaml block marked as a shell block"),
    ],
)
def test_what_the_check_refuses(tmp_path: Path, text: str, problem: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# a page\n\n{text}", encoding="utf-8")
    found = [found for block in code_blocks(page) for found in classification_problems(block)]
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize(
    "text",
    [
        "<!-- runnable -->\n```sh\nmake run\n```\n",
        "<!-- runnable against Kafka brokers -->\n```sh\nmake run\n```\n",
        "<!-- not runnable: a synopsis -->\n```bash\nkts dev [--port N]\n```\n",
        "```text\nmake run\n```\n",
    ],
)
def test_what_the_check_accepts(tmp_path: Path, text: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# a page\n\n{text}", encoding="utf-8")
    assert [found for block in code_blocks(page) for found in classification_problems(block)] == []
