"""What every ``VectorIndex`` and every ``TextIndex`` promises, as checks a backend runs against itself
(memkit's own run in tests/test_conformance.py: Chroma in memory, on disk and as a server, and pgvector;
tantivy in memory and on disk, and PostgreSQL's BM25):

    from memkit.store.conformance import check_text_index, check_vector_index
    check_vector_index(lambda: MyIndex(...))  # AssertionError naming the first promise it breaks
    check_text_index(lambda: MyWords(...))
    vector_index_report(lambda: MyIndex(...))  # every promise, each with whether it held and why not

The base promises hold for every backend; each ``Capability`` a backend has (found by what it defines:
``capabilities(index)``) is checked to work. ``make`` is called once per check, each on a fresh index (or the same one: the checks
use owners of their own).
"""

from __future__ import annotations

import math
import uuid
from typing import Callable, NamedTuple, Sequence

from .base import Capability, TextIndex, VectorIndex, capabilities, owner_of


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
    found = capabilities(index)
    if Capability.MIGRATE in found:
        assert callable(index.migrate), "has a migrate that is not a method"  # type: ignore[attr-defined]
    if Capability.COLLECTIONS in found:
        assert isinstance(index.collection_name(owner_of("someone")), str), "collection_name(owner) is a str"  # type: ignore[attr-defined]
        for name in ("owners", "count", "fact_ids"):
            assert callable(getattr(index, name, None)), f"has collection_name but no {name}()"


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


def _ids(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


def _words_rank(index: TextIndex) -> None:
    owner, _ = _user()
    index.change(owner, "episodes", [("a", "I painted a landscape of the lake"), ("b", "My cat is named Tom"),
                                     ("c", "Painting landscapes, painting the lake again: painting every day")])
    hits = index.search(owner, "episodes", "painting", 5)
    assert sorted(_ids(hits)) == ["a", "c"], f"the items with the word (stemmed: painted, painting): {hits}"
    assert _ids(hits)[0] == "c", f"the item that says it most ranks first: {hits}"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True), "best first"
    assert len(index.search(owner, "episodes", "painting lake cat", 1)) == 1, "at most k"
    assert index.search(owner, "episodes", "painting", 0) == [], "k = 0 finds nothing"
    assert index.search(owner, "episodes", "what is it about", 5) == [], "a question of stopwords finds nothing"


def _text_owners_apart(index: TextIndex) -> None:
    (a, _), (b, _) = _user(), _user()
    index.change(a, "facts", [("same-id", "User plays the cello")])
    index.change(b, "facts", [("same-id", "User plays the violin")])
    index.change(b, "episodes", [("e1", "cello lessons on Tuesday")])
    assert _ids(index.search(b, "facts", "cello", 5)) == [], "an owner finds only its own"
    assert _ids(index.search(a, "facts", "cello", 5)) == ["same-id"], "another owner's same id changed nothing"
    assert _ids(index.search(b, "episodes", "cello", 5)) == ["e1"], "a part finds only its own"
    assert index.search(_user()[0], "facts", "cello", 5) == [], "an owner with nothing finds nothing"


def _text_replace_remove_drop(index: TextIndex) -> None:
    (owner, _), (other, _) = _user(), _user()
    index.change(owner, "facts", [("f1", "User lives in Oslo"), ("f2", "User lives in Lima")])
    index.change(owner, "facts", [("f1", "User lives in Rome")])  # replaced, not added
    assert _ids(index.search(owner, "facts", "Oslo", 5)) == [], "change replaces an id's text"
    assert _ids(index.search(owner, "facts", "Rome", 5)) == ["f1"]
    index.change(owner, "facts", [], remove=["f2", "never-put"])  # removing what is not there is no error
    assert _ids(index.search(owner, "facts", "lives", 5)) == ["f1"], "remove takes the item out"
    index.change(owner, "episodes", [("e1", "Rome in spring")])
    index.change(other, "facts", [("f1", "User lives in Rome")])
    index.drop(owner, ["facts"])
    assert index.search(owner, "facts", "Rome", 5) == [], "drop takes the owner's parts out"
    assert _ids(index.search(owner, "episodes", "Rome", 5)) == ["e1"], "and no other part"
    assert _ids(index.search(other, "facts", "Rome", 5)) == ["f1"], "and no other owner's"


def _fill(index: TextIndex) -> None:
    (a, _), (b, _) = _user(), _user()
    index.fill(iter([(a, "facts", "f1", "User prefers metric units"), (b, "episodes", "e1", "metric or imperial?")]))
    assert _ids(index.search(a, "facts", "metric", 5)) == ["f1"], "fill indexes rows of any owners"
    assert _ids(index.search(b, "episodes", "metric", 5)) == ["e1"]
    index.fill(iter([]))  # nothing to fill is no error
    index.mark_filled()
    assert index.filled, "mark_filled() makes filled true"


TEXT_CHECKS: Sequence[Callable[[TextIndex], None]] = (_words_rank, _text_owners_apart, _text_replace_remove_drop, _fill)


class Outcome(NamedTuple):
    """One promise checked: its name, whether it held, and what broke it (the assertion's message, or an
    error's name and message)."""

    check: str
    ok: bool
    detail: str = ""


def outcomes(checks: Sequence[Callable[[object], None]], make: Callable[[], object], close: bool = True) -> list[Outcome]:
    """Every check run on a fresh object from ``make``, whatever the others gave: the full report."""
    found = []
    for check in checks:
        subject = make()
        try:
            check(subject)
            found.append(Outcome(check.__name__.strip("_"), True))
        except Exception as e:  # noqa: BLE001 - a broken promise, or a call that fails outright: both reported
            detail = str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
            found.append(Outcome(check.__name__.strip("_"), False, detail))
        finally:
            if close:
                subject.close()  # type: ignore[attr-defined]
    return found


def vector_index_report(make: Callable[[], VectorIndex], close: bool = True) -> list[Outcome]:
    """Every vector-index promise on indexes from ``make``, each with whether it held and why not."""
    return outcomes(CHECKS, make, close)  # type: ignore[arg-type]


def text_index_report(make: Callable[[], TextIndex], close: bool = True) -> list[Outcome]:
    """Every text-index promise on indexes from ``make``, each with whether it held and why not."""
    return outcomes(TEXT_CHECKS, make, close)  # type: ignore[arg-type]


def _run(checks: Sequence[Callable[[object], None]], make: Callable[[], object], close: bool) -> list[str]:
    found = outcomes(checks, make, close)
    broken = next((o for o in found if not o.ok), None)
    if broken is not None:
        raise AssertionError(f"{broken.check}: {broken.detail}")
    return [o.check for o in found]


def check_vector_index(make: Callable[[], VectorIndex], close: bool = True) -> list[str]:
    """Run every check on an index from ``make`` (closed after each when ``close``); the names of the checks
    that passed, or ``AssertionError`` naming the first promise broken."""
    return _run(CHECKS, make, close)  # type: ignore[arg-type]


def check_text_index(make: Callable[[], TextIndex], close: bool = True) -> list[str]:
    """The same for a ``TextIndex``: words ranked (BM25 or alike, stemmed, stopwords out), owners and parts
    apart, change replaces and removes, drop, fill."""
    return _run(TEXT_CHECKS, make, close)  # type: ignore[arg-type]
