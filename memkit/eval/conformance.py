"""What every conflict policy and every embedder promises, as full reports (``Outcome`` per promise: held, or
what broke it), beside the vector and text indexes' (``memkit.store.conformance``). ``report()`` runs them on
every registered policy (but those that need a model) and every registered embedder; a plugin's components
are checked the same way (docs/extending.md). Not every policy makes every promise: ``similarity`` matches by
meaning, not by key, so two values of one key can both stay current under it (its report says so).

    from memkit.eval.conformance import embedder_report, policy_report, report
    policy_report(MyPolicy())        # [Outcome(check='one_value_per_key', ok=True, detail=''), ...]
    embedder_report(MyEmbedder())
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import registry
from ..models.embed import embed_queries, identity, traits
from ..store import FactStore
from ..store.conformance import Outcome, outcomes
from ..types import Candidate
from ..write.path import WritePath
from ..write.rules import RuleExtractor


class _Policy:
    """A policy under test, with a fresh in-memory store and the write path over both."""

    def __init__(self, policy: Any, embedder: Any) -> None:
        self.policy, self.store = policy, FactStore.ephemeral(embedder)
        self.path = WritePath(self.store, RuleExtractor(), policy)

    def shown(self, user: str, key: str) -> list[Any]:
        """The facts of ``key`` a reader sees under this policy."""
        facts = self.store.profile(user, keys=[key])
        return [f for f in (self.policy.resolve(facts) if self.policy.resolves_at_read else facts) if f.key == key]

    def close(self) -> None:
        self.store.close()


def _city(value: str) -> Candidate:
    return Candidate(text=f"User lives in {value}.", key="user.city", value=value, source=(f"t-{value}",))


def _one_value_per_key(p: _Policy) -> None:
    for t, city in enumerate(("Oslo", "Paris", "Lima"), 1):
        p.path.write("u", [_city(city)], 1.7e9 + t)
    shown = p.shown("u", "user.city")
    assert [f.value for f in shown] == ["Lima"], f"a reader sees the newest value of a key alone, got {[f.value for f in shown]}"


def _one_reply_one_value(p: _Policy) -> None:
    p.path.write("u", [_city("Oslo"), _city("Rome")], 1.7e9)
    shown = p.shown("u", "user.city")
    assert [f.value for f in shown] == ["Rome"], f"two values of a key in one write: the later alone, got {[f.value for f in shown]}"


def _repeat_is_not_a_second_fact(p: _Policy) -> None:
    p.path.write("u", [_city("Oslo")], 1.7e9)
    p.path.write("u", [_city("Oslo")], 1.7e9 + 1)
    assert len(p.store.profile("u")) == 1, f"the same fact twice is one fact, got {len(p.store.profile('u'))}"


def _history_kept(p: _Policy) -> None:
    p.path.write("u", [_city("Oslo")], 1.7e9)
    p.path.write("u", [_city("Paris")], 1.7e9 + 1)
    said = " ".join(f"{e.before.value if e.before else ''} {e.after.value if e.after else ''}" for e in p.store.history("u"))
    assert "Oslo" in said, "a changed value stays in the history"


def _users_apart(p: _Policy) -> None:
    p.path.write("a", [_city("Oslo")], 1.7e9)
    p.path.write("b", [_city("Paris")], 1.7e9 + 1)
    assert [f.value for f in p.store.profile("a")] == ["Oslo"], "a write for one user leaves another's facts alone"


POLICY_CHECKS: Sequence[Callable[[_Policy], None]] = (_one_value_per_key, _one_reply_one_value,
                                                      _repeat_is_not_a_second_fact, _history_kept, _users_apart)


def policy_report(policy: Any, embedder: Any = None) -> list[Outcome]:
    """Every policy promise on ``policy`` (an object, or a registered name), each on a fresh in-memory store."""
    policy = registry.as_policy(policy)
    return outcomes(POLICY_CHECKS, lambda: _Policy(policy, embedder))  # type: ignore[arg-type]


TEXTS = ["I prefer metric units.", "Ana works as a nurse in Lisbon.", "我喜欢喝茶。"]


class _Kept:
    """One embedder for every check (loading a model per check would cost more than the checks)."""

    def __init__(self, embedder: Any) -> None:
        self.e = embedder

    def __call__(self) -> "_Kept":
        return self

    def close(self) -> None:
        pass


def _declares(k: _Kept) -> None:
    t = traits(k.e)
    assert isinstance(k.e.name(), str) and k.e.name(), "has a name"
    assert t.dimension is None or (isinstance(t.dimension, int) and t.dimension > 0), "a dimension, if any, is a positive int"
    assert identity(k.e) == identity(k.e), "its identity is stable"


def _shape(k: _Kept) -> None:
    vectors = k.e(TEXTS)
    dims = {len(v) for v in vectors}
    assert len(vectors) == len(TEXTS) and len(dims) == 1, "one vector per text, all of one length"
    assert traits(k.e).dimension in (None, dims.pop()), "vectors as long as its dimension says"


def _deterministic(k: _Kept) -> None:
    assert np.allclose(k.e(TEXTS[:1])[0], k.e(TEXTS[:1])[0], atol=1e-6), "the same text gives the same vector"


def _batch_is_singles(k: _Kept) -> None:
    alone = [k.e([t])[0] for t in TEXTS]
    assert all(np.allclose(a, b, atol=1e-3) for a, b in zip(k.e(TEXTS), alone)), "a text's vector does not depend on its batch"


def _questions(k: _Kept) -> None:
    q = embed_queries(k.e, ["Which units do I prefer?"])
    assert len(q) == 1 and len(q[0]) == len(k.e(TEXTS[:1])[0]), "a question's vector is as long as a text's"


EMBEDDER_CHECKS: Sequence[Callable[[_Kept], None]] = (_declares, _shape, _deterministic, _batch_is_singles,
                                                      _questions)


def embedder_report(embedder: Any) -> list[Outcome]:
    """Every embedder promise on ``embedder``, each with whether it held and why not."""
    return outcomes(EMBEDDER_CHECKS, _Kept(embedder))  # type: ignore[arg-type]


def report(embedder: Any = None) -> list[tuple[str, str, Outcome]]:
    """``(kind, name, outcome)`` for every registered policy that needs no model and every registered offline
    embedder (an embedder whose package is not installed is reported as such)."""
    rows = [("policy", name, o) for name in registry.names("policy") if not registry.needs_model("policy", name)
            for o in policy_report(name, embedder)]
    for name in registry.names("embedder"):
        try:
            made = registry.shared("embedder", name)
        except Exception as e:  # noqa: BLE001 - a missing extra is a finding of the report, not its end
            rows.append(("embedder", name, Outcome("available", False, f"{type(e).__name__}: {e}")))
            continue
        rows += [("embedder", name, o) for o in embedder_report(made)]
    return rows
