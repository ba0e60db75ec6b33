"""The docs' examples run: docs/extending.md's code blocks print what their comments say, and each README
code block followed by a `text` block prints exactly that block."""

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def run_block(block: str, namespace: dict, where: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(where), "exec"), namespace)
    return out.getvalue()


@pytest.mark.parametrize("page,blocks", [("extending.md", 4), ("usage.md", 3)])
def test_docs_examples_run_and_print_what_they_claim(page, blocks, monkeypatch):
    from memkit import registry

    registry.listing()  # the built-ins loaded first: what the examples register ("first-wins") goes with the test
    for kind, made in registry._REGISTRY.items():
        monkeypatch.setitem(registry._REGISTRY, kind, dict(made))
    doc = ROOT / "docs" / page
    found = [b for b in re.findall(r"```python\n(.*?)```", doc.read_text("utf-8"), re.S)
             if "print(" in b]  # the generated reference's signatures are python blocks too, and print nothing
    assert len(found) >= blocks
    namespace: dict = {}
    for block in found:
        printed = run_block(block, namespace, doc).splitlines()
        claims = [c for c in re.findall(r"print\(.*?\)\s*#\s*(.*)", block)]
        assert len(claims) == len([p for p in printed if p]), (claims, printed)
        for claim, line in zip(claims, [p for p in printed if p]):
            assert line == claim, (line, claim)


def test_generated_docs_are_current():
    """docs/benchmarks.md, the README's results table and docs/usage.md's reference are what
    scripts/docs_pages.py writes from the result files and the code today."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_pages.py"), "--check"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_benchmarks_page_lists_every_section_with_a_link_to_it():
    """docs/benchmarks.md opens with its sections in order, each linked by the id GitHub gives a heading (its
    rule, on examples of it: punctuation out but hyphens, spaces as hyphens, repeats numbered)."""
    from memkit.eval.report import anchor

    taken: dict[str, int] = {}
    assert anchor("What's new?", taken) == "#whats-new"
    assert anchor("C++ & Rust: `Memory.context` (2 cores)", taken) == "#c--rust-memorycontext-2-cores"
    assert anchor("What's new?", taken) == "#whats-new-1"
    for page, at_least in (("docs/benchmarks.md", 5), ("docs/results/experiments.md", 20)):
        text = (ROOT / page).read_text("utf-8")
        headings = re.findall(r"^## (.+)$", text, re.M)
        links = re.findall(r"^- \[(.+)\]\((#[^)]+)\)$", text, re.M)
        assert len(headings) >= at_least and [title for title, _ in links] == headings, page
        taken = {}
        assert [link for _, link in links] == [anchor(h, taken) for h in headings], page


def test_the_changelog_and_the_benchmarks_page_stay_short_enough_to_read():
    """CHANGELOG.md says what changed for a user, per version (history is in git); docs/benchmarks.md holds
    what holds now (every experiment is on docs/results/experiments.md)."""
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert len(changelog.splitlines()) <= 200 and re.findall(r"^## ", changelog, re.M)
    assert len((ROOT / "docs" / "benchmarks.md").read_text("utf-8").splitlines()) <= 500


def test_readme_is_a_guide():
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 250
    assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", readme)  # no commit hashes
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)\)", readme):
        assert (ROOT / link).exists(), link


def test_readme_examples_print_what_the_readme_shows():
    readme = ROOT / "README.md"
    pairs = re.findall(r"```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```", readme.read_text("utf-8"), re.S)
    assert len(pairs) >= 2
    for code, shown in pairs:
        assert run_block(code, {}, readme) == shown


def test_the_agent_loop_example_calls_a_model_and_observes_its_answers(tmp_path):
    """examples/agent_loop.py against the test suite's fake OpenAI-compatible server: two requests, each with
    the memory's context, and the Friday request carries Tuesday's preference."""
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.enqueue("Noted: metric it is.")
        fake.enqueue("About 16 km this weekend.")
        env = {**os.environ, "MEMKIT_LLM_BASE_URL": fake.base_url, "MEMKIT_LLM_MODEL": "fake", "HOME": str(tmp_path)}
        r = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py")], capture_output=True, text=True,
                           timeout=300, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "[fri] assistant: About 16 km this weekend." in r.stdout
        chats = [q["body"]["messages"] for q in fake.requests if q["path"].endswith("/chat/completions")]
        assert len(chats) == 2 and chats[1][-1]["content"] == "How far should my long run be this weekend?"
        assert "metric" in " ".join(m["content"] for m in chats[1][:-1])  # Tuesday's fact, in Friday's context
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py")], capture_output=True, text=True,
                       timeout=120, env={k: v for k, v in os.environ.items() if not k.startswith(("MEMKIT_", "OPENAI_"))})
    assert r.returncode == 1 and "MEMKIT_LLM_BASE_URL" in r.stderr


GUIDES = ("docs/architecture.md", "docs/usage.md", "docs/extending.md")


MISSING = object()


def _attribute(obj: object, name: str) -> object:
    """``obj.name``, a dataclass's field without a default included, or ``MISSING``."""
    if obj is MISSING:
        return MISSING
    if name in getattr(obj, "__dataclass_fields__", {}):
        return getattr(obj, name, None)
    return getattr(obj, name, MISSING)


def stale_names(text: str) -> list[str]:
    """What a guide names in backticks that memkit does not have: a module path or file (``memkit.read.recall``,
    ``read/recall.py``), an exported class's attribute (``Memory.forget``), or a keyword of a call written out
    (``ReadOptions(facts=False)``). Store files (``memkit.sqlite3``) are not names."""
    import importlib
    import inspect
    import warnings

    import memkit

    package = ROOT / "memkit"
    found = []
    for m in re.finditer(r"`([^`\n]+)`", text):
        tok = m.group(1).strip()
        if re.fullmatch(r"(?:memkit/)?[a-z_/]+\.py", tok):
            if not (ROOT / tok).exists() and not (package / tok).exists() and not any(package.rglob(tok.split("/")[-1])):
                found.append(f"{tok}: no such file")
        elif re.fullmatch(r"memkit(\.[A-Za-z_]\w*)+", tok) and not tok.endswith((".sqlite3", ".lexical")):
            parts = tok.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    with warnings.catch_warnings():  # an old path the guide names answers with a warning
                        warnings.simplefilter("ignore", DeprecationWarning)
                        obj = importlib.import_module(".".join(parts[:i]))
                    break
                except ImportError:
                    continue
            for attr in parts[i:]:
                obj = _attribute(obj, attr)
            if obj is MISSING:
                found.append(f"{tok}: no such name")
        elif (call := re.fullmatch(r"([A-Z]\w+)(?:\.(\w+))?(?:\((.*)\))?", tok)) and call.group(1) in memkit.__all__:
            obj = getattr(memkit, call.group(1))
            if call.group(2):
                obj = _attribute(obj, call.group(2))
                if obj is MISSING:
                    found.append(f"{tok}: no such attribute")
                    continue
            if call.group(3) and callable(obj):
                params = inspect.signature(obj).parameters
                if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                    found += [f"{tok}: no parameter {k}" for k in re.findall(r"(?:^|,\s*)(\w+)=", call.group(3))
                              if k not in params]
    return found


@pytest.mark.parametrize("guide", GUIDES)
def test_every_memkit_name_a_guide_writes_exists(guide):
    assert stale_names((ROOT / guide).read_text()) == []


def test_the_name_check_finds_what_does_not_exist():
    text = ("`memkit.read.recall` `memkit.read.no_such` `read/recall.py` `read/gone.py` `Memory.forget` "
            "`Memory.remember` `ReadOptions(facts=False)` `ReadOptions(fact=False)` `memkit.sqlite3`")
    assert stale_names(text) == ["memkit.read.no_such: no such name", "read/gone.py: no such file",
                                 "Memory.remember: no such attribute", "ReadOptions(fact=False): no parameter fact"]
