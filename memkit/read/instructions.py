"""Standing instructions at read time: the ones a question falls under.

The rules keep "Always quote prices in euros when I ask about hotels." as a procedural fact keyed
``user.style.*`` (``memkit/write/instructions.py``); a read shows it first when the question is like its
condition ("hotels"), and the profile block leaves it out otherwise (``recall.fact_hits``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..models.embed import identity
from ..store import FactStore
from ..types import Fact, Hit
from ..write.instructions import condition


def instruction_hits(store: FactStore, standing: Sequence[Fact], vector: Sequence[float] | None, floor: float,
                     n: int) -> list[Hit]:
    """Of the user's ``standing`` instructions, the ``n`` that hold for the question: those whose condition
    ("when I ask about hotels": "hotels", ``instructions.condition``) is most like it (cosine to the question's
    ``vector``), at ``floor`` or above (``why="instruction"``; shown first, ``assemble.pack_memory``). An
    instruction without a condition holds for every question: the profile block shows it."""
    held = [(f, c) for f in standing if (c := condition(f.text))] if n and vector is not None else []
    if not held:
        return []
    q = np.asarray(vector, dtype=float)
    q = q / (np.linalg.norm(q) or 1.0)
    sims = {f.id: float(condition_vector(store.embedder, c) @ q) for f, c in held}
    best = sorted((f for f, _ in held if sims[f.id] >= floor), key=lambda f: -sims[f.id])[:n]
    return [Hit(f, sims[f.id], sims[f.id], why="instruction") for f in best]


_CONDITIONS: dict[tuple[str, str], Any] = {}  # (embedder, condition) -> its unit vector: a user's few, read after read


def condition_vector(embedder: Any, text: str) -> Any:
    """The unit vector of an instruction's condition, embedded once per process and embedder."""
    key = (identity(embedder), text)
    v = _CONDITIONS.get(key)  # one lookup: another reader may clear the memo meanwhile
    if v is None:
        if len(_CONDITIONS) >= 4096:
            _CONDITIONS.clear()
        v = np.asarray(embedder([text])[0], dtype=float)
        v = _CONDITIONS[key] = v / (np.linalg.norm(v) or 1.0)
    return v
