"""Lazy package exports (PEP 562), the shape of scientific-python's ``lazy_loader``: a package names what it
exports and the module that defines each, and a name is imported on first use, so ``import memkit`` and the
command line start at once while ``import chromadb`` waits for what needs it. A leaf: imports nothing of memkit."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable


def exports(package: str, names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose ``names`` map each exported name to its submodule."""
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *names])

    return __getattr__, __dir__
