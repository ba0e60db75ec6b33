"""Lazy package exports (PEP 562), the shape of scientific-python's ``lazy_loader``: a package names what it
exports and the module that defines each, and a name is imported on first use, so ``import memkit`` and the
command line start at once while ``import chromadb`` waits for what needs it. A leaf: imports nothing of memkit."""

from __future__ import annotations

import sys
import warnings
from importlib import import_module
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from importlib.util import spec_from_loader
from types import ModuleType
from typing import Any, Callable, Sequence


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


class Moved(MetaPathFinder, Loader):
    """Old import paths of modules that moved (``memkit.recall`` is now ``memkit.read.recall``): importing the
    old path gives the module itself, under both names, with a ``DeprecationWarning``. For one version."""

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = moved
        self._own: dict[str, ModuleSpec | None] = {}  # each module's own spec, by its own name

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        return spec_from_loader(name, self) if name in self.moved else None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the next version", DeprecationWarning,
                      stacklevel=2)
        module = import_module(new)  # one module, two names
        self._own[new] = module.__spec__  # the import system sets the old path's spec on it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module ran under its own name; give it back its own spec, or importlib.reload (and Jupyter's
        # %autoreload) would reload it through the old path and move its package, breaking its relative imports
        module.__spec__ = self._own[module.__name__]


def moved(modules: dict[str, str]) -> None:
    """Answer the old import paths ``modules`` maps to the new ones (``Moved``), once per process."""
    if not any(isinstance(f, Moved) and f.moved == modules for f in sys.meta_path):
        sys.meta_path.append(Moved(modules))
