"""docs/extending.md: every code block runs, in order, and prints what the comments say."""

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def test_extending_examples_run_and_print_what_they_claim():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(DOC), "exec"), namespace)
        printed = out.getvalue().splitlines()
        claims = [c for c in re.findall(r"print\(.*?\)\s*#\s*(.*)", block)]
        for claim, line in zip(claims, [p for p in printed if p]):
            assert line == claim, (line, claim)
