"""Evaluation: benchmark data, metrics, a runner that compares memory strategies (docs/architecture.md §5) and
sweeps of notebooks over a parameter grid (``sweep``).

Names are imported on first use (PEP 562), so the command line's help does not wait for the runner's imports."""

from typing import TYPE_CHECKING

from ..lazy import exports
from .defaults import DEFAULT_STRATEGIES

_EXPORTS = {
    **dict.fromkeys(("SUITES", "Conversation", "Probe", "builtin_suite", "load_memkit", "write_suite"), "data"),
    **dict.fromkeys(("FORMATS", "load", "load_beam", "load_locomo", "load_longmemeval", "load_realtalk"), "datasets"),
    "run": "runner", "run_spec": "runner", "RunSpec": "spec",
}


__getattr__, __dir__ = exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from .data import SUITES, Conversation, Probe, builtin_suite, load_memkit, write_suite
    from .datasets import FORMATS, load, load_beam, load_locomo, load_longmemeval, load_realtalk
    from .runner import run, run_spec
    from .spec import RunSpec

__all__ = ["DEFAULT_STRATEGIES", "FORMATS", "SUITES", "Conversation", "Probe", "RunSpec", "builtin_suite", "load",
           "load_beam", "load_locomo", "load_longmemeval", "load_memkit", "load_realtalk", "run", "run_spec",
           "write_suite"]
