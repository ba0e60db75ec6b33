"""The write path (docs/architecture.md §7): this session's buffer and its running summary (``episodic``,
``summarize``), facts read from a turn by rules or by a model (``rules``, ``extract``, checked against the
turn in ``support``), and the policies that reconcile them with what is known (``reconcile``); ``llm_check`` probes whether a
model can extract."""
