"""The write path of a memory: a turn's extraction, the conflict policy's plan, and the retry queue that keeps
what could not be done yet (docs/architecture.md §3).

``Memory.observe`` records a turn and hands it here; ``WritePath`` extracts its candidates, plans and applies
them under the policy one writer per user at a time, and keeps in the store's records (``store.queue``) the
turns that wait for the model and the writes that wait for the store, for ``flush()`` to finish, in this
process or a later one. Every outcome is an event: a fact, nothing durable, or an ERROR naming why.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import ExtractionError, ModelUnavailable, StoreUnavailable
from ..models.llm import probing
from ..types import Candidate, Episode, Event, EventKind, Turn
from . import reconcile
from .extract import Extractor, refused_of
from .rules import attribute

# Extractions of one turn whose reply could not be used (each already asked again once: LLMExtractor.retries)
# before the turn is settled with its ERROR event; until then it waits for flush() (docs/decisions.md)
EXTRACT_ATTEMPTS = 3


class WritePath:
    """Extraction, planning and the retry queue of one store, under one extractor and one policy."""

    def __init__(self, store: Any, extractor: Extractor, policy: reconcile.Policy) -> None:
        self.store, self.extractor, self.policy = store, extractor, policy

    def turn(self, user_id: str, turn: Turn, speaker: str | None, episode_id: str) -> list[Event]:
        """Extract and write the facts of a recorded turn (its episode ``episode_id`` is marked to extract)."""
        try:
            cands = self.extractor.extract(turn.content, (turn.id,))
            refused = refused_of(cands)
            if speaker is not None:
                cands = attribute(cands, speaker)
        except ModelUnavailable as e:  # the turn stays marked in the records: any later flush() extracts it
            return [self.error(user_id, f"{type(e).__name__}: {e}; the turn waits for flush()", (turn.id,), turn.time)]
        except ExtractionError as e:  # a reply that could not be used: tried again by flush(), a bounded number of times
            attempts = self.store.queue.attempted(user_id, episode_id)
            if attempts < EXTRACT_ATTEMPTS:
                return [self.error(user_id, f"{e}; attempt {attempts} of {EXTRACT_ATTEMPTS}: the turn waits for flush()",
                                   (turn.id,), turn.time)]
            self.store.queue.extracted(user_id, episode_id)
            return [self.error(user_id, f"{e}; given up after {attempts} attempts", (turn.id,), turn.time)]
        try:
            events = self.write(user_id, cands, turn.time)
        except StoreUnavailable:  # the candidates wait in the records (write): the turn itself is settled
            self.store.queue.extracted(user_id, episode_id)
            raise
        self.store.queue.extracted(user_id, episode_id)
        if refused:  # named in the log beside what was kept, never retried: the reply was read
            events = [*events, self.error(user_id, f"refused from the model's reply: {'; '.join(refused)}; the "
                                          f"other {len(cands)} kept", (turn.id,), turn.time)]
        return events

    def write(self, user_id: str, cands: Sequence[Candidate], time: float | None = None) -> list[Event]:
        """Plan and apply ``cands`` under the policy, one writer per user at a time. If the store (or the
        policy's model) is down while planning, the candidates wait in the store's records for ``flush()``; if
        it goes down while applying, the planned events are already in the event log and ``flush()`` applies
        them."""
        try:
            return self._write(user_id, cands, time)
        except ModelUnavailable as e:
            self.store.queue.wait(user_id, cands, time)
            return [self.error(user_id, f"{type(e).__name__}: {e}; the facts wait for flush()", cands[0].source, time)]
        except StoreUnavailable:
            self.store.queue.wait(user_id, cands, time)
            raise

    def _write(self, user_id: str, cands: Sequence[Candidate], time: float | None) -> list[Event]:
        if not cands:
            return []
        with self.store.user_lock(user_id):
            try:
                events = reconcile.plan(self.policy, self.store, user_id, cands, time)
            except ExtractionError as e:
                return [self.error(user_id, str(e), cands[0].source, time)]
            reconcile.apply(self.store, user_id, events)  # logged before the index changes
        return events

    def flush(self) -> list[Event]:
        """Apply what the event log holds unapplied (never planned again), extract the turns that waited for the
        model, then plan the writes that waited for the store, all from the store's records. A write that meets
        the outage again keeps waiting (``StoreUnavailable`` is raised; the rest stays for the next flush)."""
        events = self.store.replay() + self._extract_waiting()
        for wait_id, user_id, cands, time in self.store.queue.waiting():
            try:
                done = self._write(user_id, cands, time)
            except ModelUnavailable as e:
                events.append(self.error(user_id, f"{type(e).__name__}: {e}; the facts wait for flush()", cands[0].source, time))
                continue
            self.store.queue.written(user_id, wait_id)
            events += done
        return events

    def _extract_waiting(self) -> list[Event]:
        """The turns that wait for the model, oldest first. A circuit breaker left open by an outage lets the
        first call try the model now (``llm.probing``): whoever flushes expects it tried. If it is still down,
        that turn's ERROR event says so and the others keep waiting, without an event each."""
        events: list[Event] = []
        with probing():
            for episode in self.store.queue.to_extract():
                done = self.turn(episode.user_id, turn_of(episode), speaker_of(episode), episode.id)
                events += done
                if done and done[0].kind is EventKind.ERROR and done[0].reason.startswith(ModelUnavailable.__name__):
                    break
        return events

    def pending_turns(self) -> list[tuple[str, Turn, str | None]]:
        """``(user_id, turn, speaker)`` of the turns whose extraction waits (for the model, or for a process
        that died before it finished), from the store's records."""
        return [(e.user_id, turn_of(e), speaker_of(e)) for e in self.store.queue.to_extract()]

    def pending(self) -> list[tuple[str, list[Candidate], float | None]]:
        """``(user_id, candidates, time)`` of the writes whose planning waits for the store or the model."""
        return [(user_id, cands, time) for _, user_id, cands, time in self.store.queue.waiting()]

    def error(self, user_id: str, reason: str, source: tuple[str, ...], time: float | None) -> Event:
        """An ERROR event, recorded in the user's log when the store can take it (it is returned either way)."""
        event = Event(EventKind.ERROR, user_id, reason=reason, source=source, **({"time": time} if time is not None else {}))
        try:
            self.store.record(user_id, [event])
        except StoreUnavailable:
            pass
        return event


def turn_of(e: Episode) -> Turn:
    """The session turn an episode records."""
    return Turn(e.turn_id, e.session_id, e.user_id, e.role, e.content, e.tokens, e.time)


def speaker_of(e: Episode) -> str | None:
    """The named speaker ``observe`` was given for an episode's turn, or None (the episode then names its role)."""
    return None if e.speaker == e.role else e.speaker
