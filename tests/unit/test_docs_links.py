"""The project documents itself: every relative link in README.md and docs/ (and every Markdown file a docstring
or comment names) resolves to a file in the repository, with the heading its anchor names, and nothing points
outside the checkout."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Build output and tool caches are not the project's text; hidden directories (.git, .venv, caches) are skipped too.
SKIPPED_DIRECTORIES = {"build", "dist", "test-artifacts", "__pycache__", "node_modules"}
TEXT_SUFFIXES = {".md", ".py", ".txt", ".yaml", ".yml", ".json", ".toml", ".tpl", ".cfg", ".ini", ".mako", ".sh"}
TEXT_NAMES = {"Makefile", "Dockerfile", ".dockerignore", ".helmignore", "run"}
# Places that exist only on the machines the project was written on. Spelled in pieces so that this file does not
# name them itself.
FORBIDDEN = ("../" + "shared", "/" + "work/")

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# A Markdown file named in prose, a docstring or a comment: "docs/api.md", "operations.md#tls", "README.md".
_MARKDOWN_MENTION = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)?[\w./-]*[\w-]\.md)(#[\w-]+)?\b")


def _project_files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT)
        if any(
            part.startswith(".") or part in SKIPPED_DIRECTORIES or part.endswith(".egg-info")
            for part in relative.parts[:-1]
        ):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            yield path


def markdown_files() -> list[Path]:
    return [path for path in _project_files() if path.suffix == ".md"]


def source_files() -> list[Path]:
    return [path for path in _project_files() if path.suffix == ".py"]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file offers: its headings (repeats numbered as GitHub numbers them) and HTML anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(_HTML_ANCHOR.findall(line))
        heading = _HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


@dataclass(frozen=True)
class Link:
    source: Path
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.source.relative_to(ROOT)}:{self.line}: {self.target}"


def markdown_links(path: Path) -> list[Link]:
    links = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        definition = _REFERENCE_DEFINITION.match(line)
        if definition:
            links.append(Link(path, number, definition.group(1)))
            continue
        links += [Link(path, number, target) for target in _INLINE_LINK.findall(_CODE_SPAN.sub("", line))]
    return links


def problem(link: Link, *, bases: tuple[Path, ...]) -> str | None:
    """What is wrong with a relative link (None if it resolves). External links are not checked here."""
    if _SCHEME.match(link.target) or link.target.startswith("//"):
        return None
    path_part, _, anchor = link.target.partition("#")
    if path_part.startswith("/"):
        return "an absolute path: link relative to the file instead"
    if not path_part:
        target = link.source
    else:
        candidates = [(base / path_part).resolve() for base in bases]
        existing = [candidate for candidate in candidates if candidate.exists()]
        if not existing:
            return "no such file in the repository"
        target = existing[0]
        if not target.is_relative_to(ROOT):
            return "points outside the repository"
    if anchor:
        if target.suffix != ".md":
            return "an anchor into a file that is not Markdown"
        if anchor not in anchors(target):
            return f"{target.relative_to(ROOT)} has no heading with the anchor #{anchor}"
    return None


def test_the_documents_are_found() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert {"README.md", "docs/README.md", "docs/api.md", "docs/kafka-compatibility.md"} <= names


def test_every_relative_link_in_the_documents_resolves() -> None:
    links = [link for path in markdown_files() for link in markdown_links(path)]
    assert len(links) > 50  # the extraction works
    broken = [f"{link} ({reason})" for link in links if (reason := problem(link, bases=(link.source.parent,)))]
    assert broken == []


def commentary(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a Python file's docstrings and comments: its prose, where other files are named.
    String literals in code are paths the code opens, not references for a reader."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                assert first.end_lineno is not None
                yield from ((number, lines[number - 1]) for number in range(first.lineno, first.end_lineno + 1))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_every_markdown_file_named_in_the_documents_or_the_code_exists() -> None:
    """A docstring saying 'see docs/operations.md#tls' is a link too; so is 'API.md' in a comment."""
    mentions = []
    this_file = Path(__file__).resolve()  # its examples of broken names are meant to be broken
    for path in [*markdown_files(), *(path for path in source_files() if path != this_file)]:
        lines = prose_lines(path.read_text(encoding="utf-8")) if path.suffix == ".md" else commentary(path)
        for number, line in lines:
            for name, anchor in _MARKDOWN_MENTION.findall(line):
                if name.startswith("build/"):
                    continue  # an output the make targets write (git-ignored), not a document of the repository
                mentions.append(Link(path, number, name + anchor))
    assert mentions
    # Named from a file's own folder or from the repository root (docstrings name paths from the root).
    broken = [f"{link} ({reason})" for link in mentions if (reason := problem(link, bases=(link.source.parent, ROOT)))]
    assert broken == []


def test_docstrings_and_comments_are_read_but_not_string_literals(tmp_path: Path) -> None:
    module = tmp_path / "example.py"
    module.write_text(
        '"""See docs/api.md."""\n\nPAGE = "missing.md"  # and operations.md\n\n\n'
        'def f() -> None:\n    """Or cli.md."""\n',
        encoding="utf-8",
    )
    named = [name for _, line in commentary(module) for name, _ in _MARKDOWN_MENTION.findall(line)]
    assert sorted(named) == ["cli.md", "docs/api.md", "operations.md"]


def test_nothing_points_outside_the_checkout() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {needle}"
        for path in _project_files()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)
        for needle in FORBIDDEN
        if needle in line
    ]
    assert found == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Token ids, HMACs and passwords", "token-ids-hmacs-and-passwords"),
        ("`PUT /v1/users/{name}/credentials`", "put-v1usersnamecredentials"),
        ("jute.maxbuffer and the child-list limits", "jutemaxbuffer-and-the-child-list-limits"),
        ("Logging in to Kafka with a token (SCRAM)", "logging-in-to-kafka-with-a-token-scram"),
        ("`kts dev`", "kts-dev"),
    ],
)
def test_anchors_are_computed_as_github_computes_them(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_link_or_anchor_is_reported() -> None:
    """The checks above can fail: a missing file and a missing heading are both caught."""
    page = ROOT / "docs" / "api.md"
    assert problem(Link(page, 1, "operations.md#tls"), bases=(page.parent,)) is None
    assert problem(Link(page, 1, "nowhere.md"), bases=(page.parent,)) == "no such file in the repository"
    assert "no heading" in (problem(Link(page, 1, "operations.md#no-such-heading"), bases=(page.parent,)) or "")
    assert "no heading" in (problem(Link(page, 1, "#no-such-heading"), bases=(page.parent,)) or "")
    assert problem(Link(page, 1, "https://kafka.apache.org/documentation/"), bases=(page.parent,)) is None
    assert problem(Link(page, 1, "../../"), bases=(page.parent,)) == "points outside the repository"
