"""The README's Python examples run, and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


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
