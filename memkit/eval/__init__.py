"""Evaluation: benchmark data, metrics and a runner that compares memory strategies (DESIGN §6–7)."""

from .data import FORMATS, Conversation, Probe, load, load_locomo, load_longmemeval, load_memkit
from .runner import DEFAULT_STRATEGIES, run

__all__ = ["DEFAULT_STRATEGIES", "FORMATS", "Conversation", "Probe", "load", "load_locomo", "load_longmemeval",
           "load_memkit", "run"]
