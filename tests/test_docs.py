"""The docs' examples run: docs/extending.md's code blocks print what their comments say, and each README
code block followed by a `text` block prints exactly that block."""

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def run_block(block: str, namespace: dict, where: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(where), "exec"), namespace)
    return out.getvalue()


def test_extending_examples_run_and_print_what_they_claim():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        printed = run_block(block, namespace, DOC).splitlines()
        claims = [c for c in re.findall(r"print\(.*?\)\s*#\s*(.*)", block)]
        for claim, line in zip(claims, [p for p in printed if p]):
            assert line == claim, (line, claim)


def test_readme_examples_print_what_the_readme_shows():
    readme = ROOT / "README.md"
    pairs = re.findall(r"```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```", readme.read_text("utf-8"), re.S)
    assert len(pairs) >= 2
    for code, shown in pairs:
        assert run_block(code, {}, readme) == shown
