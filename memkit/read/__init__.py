"""The read path (docs/architecture.md §7): how a read is shaped and the one function that builds a context
(``pipeline``: ``ReadOptions``, ``read``), the budget split (``budget``), recall over both channels
(``recall``, with the question's time in ``timeframe`` and the people it names in ``subject``) and packing
(``assemble``); long turns as passages are the store's (``memkit.store.passages``)."""

from ..lazy import exports

__getattr__, __dir__ = exports(__name__, dict.fromkeys(("ReadOptions", "read", "read_notes"), "pipeline"))
