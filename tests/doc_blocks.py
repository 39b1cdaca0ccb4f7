"""The code blocks of the project's Markdown pages, and how each shell block is marked.

Every shell block (a fence whose language is ``sh``, ``bash``, ``shell``, ``console`` or ``zsh``) carries, on the
line just before its fence, an HTML comment that GitHub does not show:

- ``<!-- runnable -->``: a reader may run it as written, in order, after the blocks before it; the newcomer test
  (``tests/e2e/test_newcomer.py``) does, against ``make run`` in a fresh clone;
- ``<!-- runnable against Kafka brokers -->``: the same against a Kafka cluster, once the page's values are the
  reader's (``docs/deployment.md``'s walkthrough; ``tests/e2e/kafka/test_walkthrough.py`` runs them on a real broker);
- ``<!-- not runnable: why -->``: it needs what a fresh clone does not give (Kubernetes, a running service of
  the reader's, the reader's own values), or it runs until stopped, or it is a synopsis; the reason is required.

Every fenced block names its language (``text`` for diagrams and output), and indented code blocks are not
used: a block without a language could hide a command no mark covers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console", "zsh"})
RUNNABLE = "runnable"
RUNNABLE_AGAINST_BROKERS = "runnable against Kafka brokers"
_MARK = re.compile(r"^<!--\s*(runnable|not runnable:\s*(?P<reason>\S.*?))\s*-->$", re.DOTALL)


def pages() -> list[Path]:
    """The pages a newcomer reads, in the order they read them: the README, then docs/ in the order of
    docs/README.md's table (pages it does not list come last, by name)."""
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = [ROOT / "docs" / name for name in re.findall(r"\]\(([\w-]+\.md)\)", index)]
    others = sorted(set((ROOT / "docs").glob("*.md")) - set(listed) - {ROOT / "docs" / "README.md"})
    return [ROOT / "README.md", ROOT / "docs" / "README.md", *dict.fromkeys(listed), *others]


@dataclass(frozen=True)
class CodeBlock:
    page: Path
    line: int  # 1-based line of the opening fence (or the first indented line)
    language: str  # "" for a fence without one, "indented" for an indented block
    text: str
    mark: str | None  # the comment before the fence, without <!-- -->, or None

    @property
    def where(self) -> str:
        """``README.md:12``: the page relative to the checkout it is in (this one or a clone), and the line."""
        for root in (ROOT, *self.page.parents):
            if (root / ".git").exists() and self.page.is_relative_to(root):
                return f"{self.page.relative_to(root)}:{self.line}"
        return f"{self.page.name}:{self.line}"

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL_LANGUAGES

    @property
    def runnable(self) -> bool:
        return self.mark == RUNNABLE

    @property
    def runnable_against_brokers(self) -> bool:
        return self.mark == RUNNABLE_AGAINST_BROKERS

    @property
    def not_runnable_reason(self) -> str | None:
        match = _MARK.match(f"<!-- {self.mark} -->") if self.mark is not None else None
        return match.group("reason") if match is not None else None


def code_blocks(page: Path) -> list[CodeBlock]:
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    blocks = []
    for index, token in enumerate(tokens):
        if token.type not in ("fence", "code_block"):
            continue
        previous = tokens[index - 1] if index > 0 else None
        mark = None
        if previous is not None and previous.type == "html_block" and previous.map and token.map:
            comment = previous.content.strip()
            if previous.map[1] == token.map[0] and comment.startswith("<!--") and comment.endswith("-->"):
                mark = comment.removeprefix("<!--").removesuffix("-->").strip()
        language = token.info.split()[0] if token.type == "fence" and token.info.strip() else ""
        blocks.append(
            CodeBlock(
                page=page,
                line=(token.map[0] + 1) if token.map else 0,
                language=language if token.type == "fence" else "indented",
                text=token.content,
                mark=mark,
            )
        )
    return blocks


def classification_problems(block: CodeBlock) -> list[str]:
    """What is wrong with how a block is marked; empty when nothing is."""
    if block.language == "indented":
        return [f"{block.where}: an indented code block; use a fence with a language (sh, text, ...)"]
    if not block.language:
        return [f"{block.where}: a fence without a language; name one (sh, text, properties, ...)"]
    if not block.is_shell:
        if block.mark is not None and block.mark.split(":")[0] in (RUNNABLE, RUNNABLE_AGAINST_BROKERS, "not runnable"):
            return [f"{block.where}: a {block.language} block marked as a shell block"]
        return []
    if block.mark is None:
        return [f"{block.where}: a shell block without <!-- runnable --> or <!-- not runnable: why --> before it"]
    if not (block.runnable or block.runnable_against_brokers) and block.not_runnable_reason is None:
        return [
            f"{block.where}: the mark {block.mark!r} is none of 'runnable', '{RUNNABLE_AGAINST_BROKERS}' "
            "and 'not runnable: <why>'"
        ]
    return []


def exported_names(block: CodeBlock) -> set[str]:
    """The variables a block exports (``export NAME=...``), for the blocks that hold a reader's own values."""
    return set(re.findall(r"^export ([A-Z_][A-Z0-9_]*)=", block.text, flags=re.MULTILINE))


def values_block(page: Path, about: str) -> CodeBlock:
    """The one not-runnable block of ``page`` that holds the reader's values, its reason naming ``about``."""
    (block,) = [
        block
        for block in code_blocks(page)
        if block.is_shell and block.not_runnable_reason is not None and about in block.not_runnable_reason
    ]
    return block
