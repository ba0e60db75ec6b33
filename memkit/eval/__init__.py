"""Evaluation: benchmark data, metrics and a runner that compares memory strategies (docs/architecture.md §5)."""

from .data import (FORMATS, SUITES, Conversation, Probe, builtin_suite, load, load_locomo, load_longmemeval,
                   load_memkit, write_suite)
from .runner import DEFAULT_STRATEGIES, run

__all__ = ["DEFAULT_STRATEGIES", "FORMATS", "SUITES", "Conversation", "Probe", "builtin_suite", "load", "load_locomo",
           "load_longmemeval", "load_memkit", "run", "write_suite"]
