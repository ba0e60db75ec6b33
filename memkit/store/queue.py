"""The durable retry queue, a view of the records (docs/architecture.md §3): turns whose extraction is not
settled (the model was down, or the process died) and candidate writes whose planning met an outage.
``Memory.flush()`` in any process that opens the same records drains it."""

from __future__ import annotations

from typing import Callable, Sequence

from ..types import Candidate, Episode
from .base import owner_of
from .records import Records


class RetryQueue:
    """What waits for a model or for the store, kept in the records so that it survives the process."""

    def __init__(self, records: Records, check_open: Callable[[], None]) -> None:
        self._records, self._check_open = records, check_open

    def to_extract(self) -> list[Episode]:
        """Turns of every user whose extraction is not settled, oldest first."""
        self._check_open()
        return self._records.to_extract()

    def extracted(self, user_id: str, episode_id: str) -> None:
        """The turn's extraction is settled: its facts are written or waiting, or its failure was reported."""
        self._check_open()
        self._records.extracted(owner_of(user_id), episode_id)

    def attempted(self, user_id: str, episode_id: str) -> int:
        """An extraction of the turn met a reply that could not be used: the count of such attempts, now."""
        self._check_open()
        return self._records.attempted(owner_of(user_id), episode_id)

    def wait(self, user_id: str, cands: Sequence[Candidate], time: float | None) -> None:
        """Keep candidate facts whose planning met an outage, for a later ``Memory.flush()``."""
        self._check_open()
        self._records.wait(owner_of(user_id), user_id, cands, time)

    def waiting(self) -> list[tuple[int, str, list[Candidate], float | None]]:
        """``(id, user_id, candidates, time)`` of every write waiting to be planned, oldest first."""
        self._check_open()
        return self._records.waiting()

    def written(self, user_id: str, wait_id: int) -> None:
        """A waiting write was planned and applied: forget it."""
        self._check_open()
        self._records.written(owner_of(user_id), wait_id)
