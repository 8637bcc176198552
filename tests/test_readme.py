"""The README and the pages under docs/: code fences close, Python examples run and print what their comments
say, and every relative link points to a file (and heading) that exists."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
IDS = [page.relative_to(ROOT).as_posix() for page in PAGES]


def python_blocks(page: Path, tag: str = "python") -> list[str]:
    return re.findall(rf"```{tag}\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def run_and_check(block: str, page: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block, str(page), "exec"), {})
    # A print line ends with "# <expected output>", optionally followed by two spaces and a remark.
    promised = [line.split("# ", 1)[1].split("  ")[0].strip()
                for line in block.splitlines() if line.startswith("print(") and "# " in line]
    assert printed.getvalue().splitlines() == promised, page.name


def test_the_docs_exist_and_the_readme_links_to_every_page() -> None:
    docs = [page for page in PAGES if page != README]
    assert docs, "docs/ has no page"
    readme = README.read_text(encoding="utf-8")
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in docs:
        assert f"](docs/{page.name}" in readme, f"README.md does not link to docs/{page.name}"
        if page.name != "README.md":
            assert f"]({page.name}" in index, f"docs/README.md does not list {page.name}"


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_code_fences_are_balanced(page: Path) -> None:
    """Every fence that opens a code block closes it: an unclosed one renders the rest of the page as code."""
    fences = [(number, line.strip()) for number, line in
              enumerate(page.read_text(encoding="utf-8").splitlines(), start=1) if line.lstrip().startswith("```")]
    opened: tuple[int, str] | None = None
    for number, fence in fences:
        if opened is None:
            opened = (number, fence)
        elif fence == "```":
            opened = None
        else:  # a fence with a language tag inside an open block: the earlier block never closed
            raise AssertionError(f"{page.name} line {opened[0]}: {opened[1]!r} is not closed before line {number}")
    assert opened is None, f"{page.name} line {opened[0]}: {opened[1]!r} is never closed"


def test_the_readme_has_a_python_example() -> None:
    assert python_blocks(README), "the README has no Python example"


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_python_examples_print_their_comments(page: Path) -> None:
    for block in python_blocks(page):
        run_and_check(block, page)


@pytest.mark.parametrize("page", [page for page in PAGES if page != README], ids=IDS[1:])
def test_torch_examples_in_docs_print_their_comments(page: Path) -> None:
    """``python torch`` blocks under docs/ (the README's run in tests/test_torch_frontend.py)."""
    blocks = python_blocks(page, "python torch")
    if not blocks:
        return
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    for block in blocks:
        run_and_check(block, page)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_relative_links_point_to_existing_files(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code blocks hold no links
    text = re.sub(r"`[^`\n]*`", "", text)  # nor do code spans
    links = re.findall(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    broken = []
    for link in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto:, ...
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(link)
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_tuning_tables_are_generated_from_the_settings() -> None:
    """docs/methods.md states every tuning default through docs/tuning.py, never retyped: a setting changed
    without rerunning it fails here."""
    import runpy

    tuning = runpy.run_path(str(ROOT / "docs" / "tuning.py"))
    page = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    assert tuning["block"]() in page
