"""The facts part of ``FactStore``: a fact's vector, its words and its profile row change together, and a
similarity search reads ids from the vector index and rows from the maintained profile (docs/architecture.md
§2). It writes only to the parts it is given and never calls back into the store.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Sequence

from ..errors import IsolationError
from ..types import Event, Fact, Hit, current, fold
from .base import TextIndex, VectorIndex, matches, rank_score
from .log import EventLog


class FactIndex:
    """One user's current facts across the vector index, the text index and the profile."""

    def __init__(self, vectors: VectorIndex, text: TextIndex, log: EventLog, embedder: Any,
                 unit: Callable[[], ContextManager[Any]]) -> None:
        self.vectors, self.text, self.log, self.embedder, self.unit = vectors, text, log, embedder, unit

    def change(self, owner: str, user_id: str, facts: Sequence[Fact], ids: Sequence[str]) -> None:
        """Upsert ``facts``, then delete ``ids``: in the vector index, then in the text index, then in the profile."""
        if not facts and not ids:
            return
        for f in facts:
            if f.user_id != user_id:
                raise IsolationError(f"fact {f.id} belongs to {f.user_id!r}, not {user_id!r}")
        vectors = self.embedder([f.text for f in facts]) if facts else []
        with self.unit():
            if facts:
                self.vectors.put(owner, user_id, "facts", [f.id for f in facts], vectors)
            if ids:
                self.vectors.remove(owner, user_id, "facts", ids)
            self.text.change(owner, "facts", [(f.id, f.text) for f in facts], ids)
            self.log.put_profile(owner, facts)
            self.log.drop_profile(owner, ids)

    def effect(self, owner: str, user_id: str, events: Sequence[Event]) -> None:
        """Bring the index to what ``events`` leave: current versions upserted, deleted or closed ones removed
        (a closed version lives on in the event log)."""
        state = fold(events)
        now_current = current(state)
        self.change(owner, user_id, now_current, [i for i in state if i not in {f.id for f in now_current}])

    def search(self, owner: str, user_id: str, vector: Sequence[float], k: int, min_score: float,
               where: dict[str, Any] | None, weights: tuple[float, float]) -> list[Hit]:
        """The top ``k`` facts by ``rank_score`` among those nearest ``vector`` that pass ``where`` and the floor."""
        # the nearest ``want`` facts that pass the filter: ids and similarities of more items than that (the
        # user's episodes share the index), more again if too few were such facts, then their rows from the
        # maintained profile
        want, n = max(k * 3, 10), 8 * max(k * 3, 10)
        while True:
            items = self.vectors.nearest(owner, user_id, vector, n)
            sims = {item_id: sim for part, item_id, sim in items if part == "facts"}
            rows = [f for f in self.log.profile(owner, user_id, ids=list(sims)) if matches(where, f)]
            if len(rows) >= want or len(items) < n:
                break
            n *= 4
        top = {f.id for f in sorted(rows, key=lambda f: -sims[f.id])[:want]}
        hits = [Hit(f, sims[f.id], rank_score(sims[f.id], f.importance, weights)) for f in rows if f.id in top]
        hits.sort(key=lambda h: -h.score)
        return [h for h in hits if h.similarity >= min_score][:k]
