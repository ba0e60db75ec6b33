"""The read path (docs/architecture.md §5): how a read is shaped (``ReadOptions``), and the one function that
turns a session's buffer, the store and those options into a ``Context`` (``read``), in order: the budget
plan (``budget.py``), recall (``recall.py``), packing (``assemble.py``). ``Memory.context`` validates its
arguments and calls it.
"""

from __future__ import annotations

import warnings
from concurrent.futures import Future
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from . import assemble, lines, packing, timeframe
from .. import validate
from .budget import plan_budget
from ..errors import ConfigError
from ..models.embed import traits
from .recall import RecallOptions, dense_rankings, fact_hits, fused_facts, recall
from ..store import DEFAULT_FLOOR, FactStore
from ..types import Context, Hit, Turn

if TYPE_CHECKING:
    from ..write.episodic import EpisodicBuffer
    from ..write.reconcile import Policy


@dataclass(frozen=True)
class ReadOptions:
    """How ``Memory.context`` reads: what it searches, how it ranks, what it shows, and each share of the budget.

    ``k`` facts recalled above the similarity floor ``min_score``; ``profile_tokens`` for the user's most
    important facts whatever the question (at most 15% of the budget); ``recall`` the channels and their
    fusion; ``facts`` and ``episodes`` which long-term items are searched; ``neighbours`` turns around each
    recalled turn; ``episode_dates`` a date line per session shown; ``speaker_runs`` a speaker's name once
    for their lines one after another (``lines.render_episodes``); ``episodes_for_facts`` whether a shown
    fact's source turn is shown too; ``window_share`` of the budget kept for this session's newest turns;
    ``document_share`` for a retriever's documents; ``fold_repeats`` and ``near_repeats`` (words this alike)
    show a line said again once; ``passages_per_turn`` of a long turn before other turns have theirs;
    ``diversity`` maximal marginal relevance's weight on novelty; ``profile_after`` the recalled items taken
    before the rest of the profile block, each of its facts also in the place of the first recalled turn it
    came from (0: the block first); ``headers`` the lines above each part.
    The reasons for each default are in docs/decisions.md.
    """

    k: int = 5
    min_score: float = DEFAULT_FLOOR
    profile_tokens: int = 150
    recall: RecallOptions = field(default_factory=RecallOptions)
    facts: bool = True
    episodes: bool = True
    neighbours: int = 0
    episode_dates: bool = True
    speaker_runs: bool = True
    episodes_for_facts: bool = False
    window_share: float = 0.3
    document_share: float = 0.25
    fold_repeats: bool = True
    near_repeats: float = packing.NEAR_REPEATS
    passages_per_turn: int = packing.PASSAGES_PER_TURN
    diversity: float = packing.DIVERSITY
    profile_after: int = packing.PROFILE_AFTER
    headers: Mapping[str, str] = field(default_factory=lambda: dict(assemble.HEADERS))

    def __post_init__(self) -> None:
        """Every field checked here (types, ranges, NaN, strings for booleans): a bad one fails where it is set."""
        validate.positive_int("k", self.k, validate.MAX_K)
        validate.number("min_score", self.min_score, -1.0, 1.0)  # a cosine similarity
        validate.count("profile_tokens", self.profile_tokens, validate.MAX_BUDGET)
        validate.count("neighbours", self.neighbours, validate.MAX_K)
        validate.count("passages_per_turn", self.passages_per_turn, validate.MAX_K)
        validate.count("profile_after", self.profile_after, validate.MAX_K)
        for name in ("window_share", "document_share", "near_repeats", "diversity"):
            validate.share(name, getattr(self, name))
        for name in ("facts", "episodes", "episode_dates", "speaker_runs", "episodes_for_facts", "fold_repeats"):
            validate.flag(name, getattr(self, name))
        if not isinstance(self.recall, RecallOptions):
            raise ConfigError(f"recall must be a RecallOptions, not {type(self.recall).__name__}")
        if not isinstance(self.headers, Mapping) or not all(isinstance(v, str) for v in self.headers.values()):
            raise ConfigError(f"headers must map part names to strings, got {self.headers!r}")
        unknown = set(self.headers) - set(assemble.HEADERS)
        if unknown:
            raise ConfigError(f"unknown headers {sorted(unknown)}; choose from {sorted(assemble.HEADERS)}")
        object.__setattr__(self, "headers", {**assemble.HEADERS, **self.headers})

    @property
    def packing(self) -> packing.PackOptions:
        """The options the packer takes, as one object."""
        return packing.PackOptions(spare_sources=not self.episodes_for_facts, diversity=self.diversity,
                                    dates=self.episode_dates, fold_repeats=self.fold_repeats,
                                    near_repeats=self.near_repeats, passages_per_turn=self.passages_per_turn,
                                    speaker_runs=self.speaker_runs, profile_after=self.profile_after)

    @classmethod
    def names(cls) -> frozenset[str]:
        """The options' names (what ``split`` takes out of a flat set of memory options)."""
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def given(cls, read: Any, deprecated: Mapping[str, Any]) -> "ReadOptions":
        """What ``Memory(read=..., **deprecated)`` was given, as read options: only a ``ReadOptions`` (or None);
        the options passed one by one (``Memory(k=3)``), as before 0.3, still work and warn."""
        if read is not None and not isinstance(read, cls):
            raise ConfigError(f"read must be a ReadOptions (memkit.ReadOptions(...)), not {type(read).__name__}")
        if deprecated:
            unknown = sorted(set(deprecated) - cls.names())
            if unknown:
                raise TypeError(f"Memory() got unexpected keyword arguments {unknown}")
            warnings.warn(f"Memory({', '.join(f'{n}=...' for n in deprecated)}) is deprecated: pass "
                          "read=ReadOptions(...) (memkit.ReadOptions)", DeprecationWarning, stacklevel=3)
            read, _ = cls.split(deprecated, read)
        return read or cls()

    @classmethod
    def split(cls, options: Mapping[str, Any], base: "ReadOptions | None" = None) -> tuple["ReadOptions", dict[str, Any]]:
        """A flat set of memory options (a benchmark's, a deprecated ``Memory(k=...)``) as the read options it
        names (on ``base``) and the rest."""
        mine = {key: v for key, v in options.items() if key in cls.names() and v is not None}
        return replace(base or cls(), **mine), {key: v for key, v in options.items() if key not in cls.names()}


def read_notes(query: str, window: Sequence[Turn], warming: "Future[Any] | None") -> tuple[str, ...]:
    """What the reader should know about a read: a cold read (the user's indexes still ``warming``), a question
    that is not the session's newest turn (not observed first)."""
    notes = ("cold read: the user's indexes were still loading (the session opened moments ago)",) \
        if warming is not None and not warming.done() else ()
    if query.strip() and (not window or window[-1].content != query):
        notes += ("the query is not this session's newest turn, so the messages do not hold it: observe it "
                  "first (the agent loop: observe, context, answer, observe)",)
    return notes


def read(store: FactStore, policy: "Policy", buf: "EpisodicBuffer", query: str, budget: int, options: ReadOptions,
         asked: float, notes: tuple[str, ...] = (), docs: "Future[Any] | None" = None, k: int | None = None,
         min_score: float | None = None) -> Context:
    """What to send for ``query`` within ``budget`` tokens from session ``buf`` and the user's long-term
    memory in ``store``: the budget plan, recall (facts and episodes on one list), then packing in priority
    order (this session's newest turns reserved, the profile block, the recalled items, the summary, the newest
    turns, then the ``docs`` a retriever is fetching, in their own share). ``asked`` is when the question is
    asked; ``k`` and ``min_score`` override the options' for this read."""
    user_id, session_id = buf.user_id, buf.session_id
    summary, window = buf.summary, list(buf.window)  # the episodic read: the session's buffer, in memory
    in_session = {t.id for t in buf.turns}
    plan = plan_budget(budget, [t.tokens for t in window], docs is not None, options.document_share,
                       options.window_share, options.profile_tokens, options.recall.depth)
    when = timeframe.parse(query, asked) if options.recall.timeframes else None
    notes += (f"question time {lines.date_label(asked)}: {when.describe()}",) if when else ()
    hits, episodes, subject = recall(store, policy, user_id, session_id, query, plan, k or options.k,
                                     options.min_score if min_score is None else min_score, options.recall,
                                     options.facts, options.episodes, when)
    notes += (subject.describe(),) if subject else ()
    left = plan.memory
    facts, eps = assemble.pack_memory(
        hits, episodes, left - plan.reserve, plan.profile, lambda e: e.turn_id in in_session, options.packing,
        neighbours=(lambda e: store.neighbours(user_id, e, options.neighbours)) if options.neighbours else None,
        truncates=traits(store.embedder).truncates)
    left -= facts.tokens + eps.tokens
    summary_part = assemble.pack_summary(summary, left - plan.newest)
    chosen: list[Turn] = assemble.pack_turns(window, left - summary_part.tokens)
    parts = [facts, eps, summary_part, assemble.turns_part(chosen)]
    if docs is not None:
        parts.append(assemble.pack_documents(docs.result(), plan.documents))
    return Context(assemble.messages(parts, chosen, options.headers), tuple(parts), budget, notes)


def search_facts(store: FactStore, policy: "Policy", user_id: str, query: str, options: ReadOptions,
                 k: int | None = None, min_score: float | None = None) -> list[Hit]:
    """``Memory.search``: the user's top ``k`` facts for ``query`` by hybrid recall, then the rest of the current
    facts as the profile (``why="profile"``); ``k`` and ``min_score`` default to the options'."""
    vector = store.embed_query(query) if "dense" in options.recall.channels and query.strip() else None
    dense = dense_rankings(store, user_id, vector, {"facts": options.recall.depth}, options.recall).get("facts")
    floor = options.min_score if min_score is None else min_score
    return fact_hits(store, policy, user_id, fused_facts(store, user_id, query, dense, floor, options.recall), dense,
                     k or options.k, floor, options.profile_tokens, options.recall)


def profile_block(store: FactStore, user_id: str, limit: int) -> str:
    """``Memory.profile``: the user's ``limit`` most important current facts, one a line, and how many more."""
    facts = store.profile(user_id, limit=limit)
    more = len(store.profile(user_id)) - len(facts) if len(facts) == limit else 0
    lines = [f"- {f.text}" for f in facts]  # the profile's own order
    tail = [f"(and {more} more)"] if more else []
    return "User profile:\n" + "\n".join(lines + tail) if facts else "User profile: (empty)"
