"""What every ``VectorIndex`` promises, as checks a backend runs against itself (memkit's own run in
tests/test_conformance.py on Chroma in memory, on disk and as a server, and on pgvector):

    from memkit.store.conformance import check_vector_index
    check_vector_index(lambda: MyIndex(...))  # AssertionError naming the first promise it breaks

The base promises hold for every backend; each extra a backend declares in ``extras`` (``VECTOR_EXTRAS``) is
checked to be there. ``make`` is called once per check, each on a fresh index (or the same one: the checks
use owners of their own).
"""

from __future__ import annotations

import math
import uuid
from typing import Callable, Sequence

from .base import VECTOR_EXTRAS, VectorIndex, owner_of


def _unit(dimension: int, *weights: float) -> list[float]:
    """A unit vector with ``weights`` on the first axes."""
    vector = [0.0] * dimension
    for i, w in enumerate(weights):
        vector[i] = w
    norm = math.sqrt(sum(w * w for w in weights))
    return [w / norm for w in vector]


def _user() -> tuple[str, str]:
    user_id = f"conformance-{uuid.uuid4().hex[:8]}"
    return owner_of(user_id), user_id


def _declares(index: VectorIndex) -> None:
    assert isinstance(index.dimension, int) and index.dimension >= 3, "dimension is an int of at least 3"
    unknown = set(index.extras) - set(VECTOR_EXTRAS)
    assert not unknown, f"extras {sorted(unknown)} are none of VECTOR_EXTRAS {sorted(VECTOR_EXTRAS)}"
    if "migrate" in index.extras:
        assert callable(getattr(index, "migrate", None)), "declares 'migrate' but has no migrate()"
    if "collections" in index.extras:
        assert isinstance(index.collection_name(owner_of("someone")), str), "collection_name(owner) is a str"
    if "database" in index.extras:
        assert getattr(index, "db", None) is not None, "declares 'database' but has no db"


def _nearest_first(index: VectorIndex) -> None:
    owner, user = _user()
    d = index.dimension
    index.put(owner, user, "facts", ["a", "b"], [_unit(d, 1), _unit(d, 0, 1)])
    index.put(owner, user, "episodes", ["c"], [_unit(d, 1, 1)])
    hits = index.nearest(owner, user, _unit(d, 1), 3)
    assert [(p, i) for p, i, _ in hits[:2]] == [("facts", "a"), ("episodes", "c")], f"nearest first: {hits}"
    assert abs(hits[0][2] - 1.0) < 1e-3, f"an item's similarity to its own vector is 1, got {hits[0][2]}"
    assert [s for _, _, s in hits] == sorted((s for _, _, s in hits), reverse=True), "closest first"
    assert len(index.nearest(owner, user, _unit(d, 1), 1)) == 1, "at most n"
    assert index.nearest(owner, user, _unit(d, 1), 0) == [], "n = 0 finds nothing"


def _owners_apart(index: VectorIndex) -> None:
    (a, alice), (b, bob) = _user(), _user()
    d = index.dimension
    index.put(a, alice, "facts", ["same-id"], [_unit(d, 1)])
    index.put(b, bob, "facts", ["other"], [_unit(d, 0, 1)])
    assert [i for _, i, _ in index.nearest(b, bob, _unit(d, 1), 5)] == ["other"], "an owner finds only its own"
    index.put(b, bob, "facts", ["same-id"], [_unit(d, 0, 0, 1)])  # the same id under another owner
    assert [i for _, i, _ in index.nearest(a, alice, _unit(d, 1), 5)] == ["same-id"]
    assert abs(index.nearest(a, alice, _unit(d, 1), 1)[0][2] - 1.0) < 1e-3, "another owner's put changed nothing"
    assert index.nearest(*_user(), _unit(d, 1), 5) == [], "an owner with nothing finds nothing"


def _replace_remove_drop(index: VectorIndex) -> None:
    owner, user = _user()
    d = index.dimension
    index.put(owner, user, "facts", ["a", "b"], [_unit(d, 1), _unit(d, 0, 1)])
    index.put(owner, user, "facts", ["a"], [_unit(d, 0, 0, 1)])  # replaced, not added
    hits = index.nearest(owner, user, _unit(d, 0, 0, 1), 5)
    assert [i for _, i, _ in hits] == ["a", "b"] and abs(hits[0][2] - 1.0) < 1e-3, f"put replaces by id: {hits}"
    index.remove(owner, user, "facts", ["a"])
    assert [i for _, i, _ in index.nearest(owner, user, _unit(d, 1), 5)] == ["b"], "remove takes the item out"
    index.remove(owner, user, "facts", ["never-put"])  # removing what is not there is no error
    index.warm(owner, user)
    other, someone = _user()
    index.put(other, someone, "episodes", ["kept"], [_unit(d, 1)])
    index.drop(owner, user)
    assert index.nearest(owner, user, _unit(d, 1), 5) == [], "drop takes every item of the owner out"
    assert [i for _, i, _ in index.nearest(other, someone, _unit(d, 1), 5)] == ["kept"], "and no other owner's"


CHECKS: Sequence[Callable[[VectorIndex], None]] = (_declares, _nearest_first, _owners_apart, _replace_remove_drop)


def check_vector_index(make: Callable[[], VectorIndex], close: bool = True) -> list[str]:
    """Run every check on an index from ``make`` (closed after each when ``close``); the names of the checks
    that passed, or ``AssertionError`` naming the first promise broken."""
    passed = []
    for check in CHECKS:
        index = make()
        try:
            check(index)
        finally:
            if close:
                index.close()
        passed.append(check.__name__.strip("_"))
    return passed
