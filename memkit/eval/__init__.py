"""Evaluation: benchmark data, metrics and a runner that compares memory strategies (docs/architecture.md §5)."""

from .data import SUITES, Conversation, Probe, builtin_suite, load_memkit, write_suite
from .datasets import FORMATS, load, load_beam, load_locomo, load_longmemeval, load_realtalk
from .runner import DEFAULT_STRATEGIES, run

__all__ = ["DEFAULT_STRATEGIES", "FORMATS", "SUITES", "Conversation", "Probe", "builtin_suite", "load", "load_beam",
           "load_locomo", "load_longmemeval", "load_memkit", "load_realtalk", "run", "write_suite"]
