"""The README's Python examples run, and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_code_fences_are_balanced() -> None:
    """Every fence that opens a code block closes it: an unclosed one renders the rest of the README as code."""
    fences = [(number, line.strip()) for number, line in
              enumerate(README.read_text(encoding="utf-8").splitlines(), start=1) if line.lstrip().startswith("```")]
    opened: tuple[int, str] | None = None
    for number, fence in fences:
        if opened is None:
            opened = (number, fence)
        elif fence == "```":
            opened = None
        else:  # a fence with a language tag inside an open block: the earlier block never closed
            raise AssertionError(f"README.md line {opened[0]}: {opened[1]!r} is not closed before line {number}")
    assert opened is None, f"README.md line {opened[0]}: {opened[1]!r} is never closed"


def test_readme_python_examples_print_their_comments() -> None:
    blocks = python_blocks()
    assert blocks, "the README has no Python example"
    for block in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, str(README), "exec"), {})
        # A print line ends with "# <expected output>", optionally followed by two spaces and a remark.
        promised = [line.split("# ", 1)[1].split("  ")[0].strip()
                    for line in block.splitlines() if line.startswith("print(") and "# " in line]
        assert printed.getvalue().splitlines() == promised
