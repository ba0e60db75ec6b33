"""Hybrid recall over a user's facts and episodes: a lexical channel (BM25, tantivy) and a dense channel
(Chroma, cosine), fused by reciprocal rank. Each result keeps its rank in
every channel that found it, so the context account can say why it is there (docs/architecture.md §1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import islice
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence

from ..store import passages
from .. import validate
from ..errors import InvalidArgument, StoreFull
from .budget import BudgetPlan, profile_rows
from .fusion import Ref, fuse, one_list, ranked_ids, why
from .instructions import instruction_hits
from ..write.instructions import STANDING, condition
from ..write.rules import slug
from ..store import FactStore
from ..store.base import episode_items
from .subject import ROLES, SUBJECT, USER, Subject, name_words, named, named_all, without_words
from .timeframe import Timeframe
from ..types import Episode, Fact, Hit, Recalled

if TYPE_CHECKING:
    from ..write.reconcile import Policy

CHANNELS = ("lexical", "dense")
RRF_K = 10  # reciprocal rank fusion constant: 60 in Cormack et al. 2009; 10 (docs/decisions.md, "Reciprocal rank fusion constant")
PERSON_WEIGHT = 3.0  # the ranking of the turns of the person asked about (docs/decisions.md, "The user's own turns")
LEXICAL_WEIGHT = 0.5  # the lexical channel's, beside the dense one's 1 (docs/decisions.md, "Channel weights")
INSTRUCTIONS = 1  # standing instructions shown first (docs/decisions.md, "Standing instructions")
WEIGHTS = (("lexical", LEXICAL_WEIGHT), ("dense", 1.0))  # the channels' weights, unless a read's options give others
RANKINGS = (*CHANNELS, USER, SUBJECT, "time")  # what a fusion weighs (``RecallOptions.weights``)
DEPTH = 30  # candidates read from each channel before fusion (docs/decisions.md, "Candidates per channel")


@dataclass(frozen=True)
class RecallOptions:
    """Which channels to use, the weights in the fusion that replace the reader's own (``weight``), and how deep
    to read each one. The raw-turn baselines' own channel weights are even (``strategies.RawTurnRetrieval``)."""

    channels: tuple[str, ...] = CHANNELS
    weights: tuple[tuple[str, float], ...] = ()
    depth: int = DEPTH
    rrf_k: int = RRF_K
    timeframes: bool = True  # a question's relative time ranks the turns of that time up (memkit/read/timeframe.py)
    subjects: bool = True  # a question that names one person ranks that person's turns up (memkit/read/subject.py)
    # and, off (the default), the lexical channel searches without the words that named them: every line of theirs
    # has those words, and the ranking above carries them (docs/decisions.md, "The person a question names")
    subject_words: bool = False
    # and the dense channel too searches without the names of the people a question names (not without the
    # first person of a user's question); True keeps them (docs/decisions.md, "Names a question gives")
    dense_names: bool = False
    # "Muhammad" in a question names Muhhamed too (subject.spelt_like; docs/decisions.md, "A name spelt another way")
    name_variants: bool = True
    # the user's standing instructions ("Always quote prices in euros when I ask about hotels.") most like
    # the question, shown first among the facts, at most this many (docs/decisions.md, "Standing instructions")
    instructions: int = INSTRUCTIONS
    # True: only a first-person question to a user–assistant memory ranks the user's turns up, not any that names
    # no one (docs/decisions.md, "The user's own turns")
    first_person_only: bool = False

    def __post_init__(self) -> None:
        """Every field checked here, so a misspelt channel or a string "false" fails where it is written."""
        channels = self.channels
        if isinstance(channels, str) or not isinstance(channels, (tuple, list)):
            raise InvalidArgument(f"channels must be a tuple of channel names from {CHANNELS}, got {channels!r}")
        if not channels or set(channels) - set(CHANNELS) or len(set(channels)) != len(channels):
            raise InvalidArgument(f"channels {tuple(channels)!r}: name each of {CHANNELS} at most once, at least one")
        object.__setattr__(self, "channels", tuple(channels))
        pairs = self.weights
        if not isinstance(pairs, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
            raise InvalidArgument(f"weights must be a tuple of (ranking, weight) pairs, got {pairs!r}")
        for name, w in pairs:
            if name not in RANKINGS:
                raise InvalidArgument(f"weights: unknown ranking {name!r}; choose from {RANKINGS}")
            validate.number(f"weights[{name!r}]", w, 0.0, 1e6)
        validate.positive_int("depth", self.depth, validate.MAX_K)
        validate.positive_int("rrf_k", self.rrf_k, validate.MAX_K)
        try:
            validate.count("instructions", self.instructions, validate.MAX_K)
        except InvalidArgument as e:
            raise InvalidArgument(f"{e} (how many standing instructions a read shows; 0: none)") from None
        for name in ("timeframes", "subjects", "subject_words", "dense_names", "name_variants", "first_person_only"):
            validate.flag(name, getattr(self, name))

    def weight(self, channel: str) -> float:
        """A ranking's weight in the fusion: as ``weights`` gives it, else as ``WEIGHTS`` does (the channels), else
        ``PERSON_WEIGHT`` for the turns of the person a question is about, named or the user
        (``subject.Subject.ranking``), else 1."""
        return dict(WEIGHTS + self.weights).get(channel, PERSON_WEIGHT if channel in (USER, SUBJECT) else 1.0)


def dense_rankings(store: FactStore, user_id: str, vector: Sequence[float] | None, depths: dict[str, int],
                   options: RecallOptions = RecallOptions(), session: str | None = None,
                   caught_up: bool = False) -> dict[str, list[tuple[str, float]]]:
    """The dense channel for the parts in ``depths``, from one query of the user's collection (none when the
    channel is off or there is no vector): ``{part: [(id, similarity), ...]}``. ``session`` is the reader's own
    (``FactStore.dense``, as is ``caught_up``)."""
    if "dense" not in options.channels or vector is None:
        return {}
    return store.dense(user_id, vector, depths, session, caught_up)


def fused_facts(store: FactStore, user_id: str, query: str, dense: Sequence[tuple[str, float]] | None, floor: float,
                options: RecallOptions = RecallOptions()) -> list[tuple[str, float, dict[str, int]]]:
    """The user's facts for ``query`` by fused rank, ``(id, score, ranks)``, with the dense channel's ``(id,
    similarity)`` (None: lexical only); dense hits below ``floor`` do not count (``Memory.search``'s ranking;
    a read ranks facts and episodes on one list instead, ``recall``)."""
    if not query.strip():
        return []
    return fuse(ranked_ids(_scored(store, user_id, "facts", query, dense, options, floor, None)), options)


def recall_episodes(store: FactStore, user_id: str, query: str, dense: Sequence[tuple[str, float]] | None,
                    options: RecallOptions = RecallOptions(), page: int | None = None,
                    session: str | None = None, timeframe: Timeframe | None = None) -> Iterator[Recalled]:
    """The user's episodes (past turns, or passages of long ones as excerpts) for ``query`` by fused rank; no
    floor: they compete on rank. With a ``timeframe`` (``memkit/read/timeframe.py``) a third ranking joins the
    fusion: the turns said in its window, or the recalled turns newest or oldest first. The episodes are read
    by id from their records, ``page`` ids at a time (None: all at once). ``session`` is the reader's own
    (``FactStore.lexical``). ``dense`` are the dense channel's hits for ``query`` itself (``recall`` searches
    that channel without the names the question gives)."""
    fetch = EpisodeReader(store, user_id)
    scored = _scored_episodes(store, user_id, query, lambda q: dense, options, session, timeframe, fetch).scored
    return _fetched(fuse(ranked_ids(scored), options), dict(dense or ()), fetch, page)


class Searched(NamedTuple):
    """What the episodes' search found (``_scored_episodes``): each channel's hits, the one person the question
    is about, everyone it names, and the query each channel searched."""

    scored: dict[str, list[tuple[str, float]]]
    subject: Subject | None
    people: tuple[str, ...]
    lexical_query: str
    dense_query: str


def _scored_episodes(store: FactStore, user_id: str, query: str,
                     dense_for: Callable[[str], Sequence[tuple[str, float]] | None], options: RecallOptions,
                     session: str | None, timeframe: Timeframe | None, fetch: "EpisodeReader",
                     caught_up: bool = False) -> Searched:
    """The episodes' channels (``_scored``; ``dense_for(q)``: the dense channel's hits for a query, None when
    it is off); with a ``timeframe`` the time ranking of what they found; and when the question names one of
    the people who said what they found, those people's turns of it (``subject``), with the person. Also the
    query each channel searched (lexical, dense).

    Unless ``options.subject_words``, the channels search without the words that named people: every line
    of a person carries their name (``store.base.episode_text``), so a name ranks that person's short lines
    up, and the ranking of their turns carries it. The people a question names (one or several) are found
    among the speakers of what the lexical channel finds for the whole question, and then both channels
    search without their names (the dense one keeps them with ``options.dense_names``). The user of a
    first-person question ("my app") is found among what both channels found, and only the lexical
    channel then searches without the first person."""
    lexical = "lexical" in options.channels
    whole = store.lexical(user_id, "episodes", query, options.depth, session, caught_up) if lexical else []
    said = _speakers(fetch, [i for i, _ in whole]) if options.subjects and whole else {}
    people_of: dict[frozenset[str], tuple[Subject | None, dict[str, str]]] = {}  # one alias lookup per speaker set

    def people(speakers: set[str]) -> tuple[Subject | None, dict[str, str]]:
        key = frozenset(speakers)
        if key not in people_of:
            people_of[key] = _people(store, user_id, query, speakers, options.name_variants,
                                     options.first_person_only)
        return people_of[key]

    named_people = people(set(said.values()))[1] if said else {}
    lexical_query = _without(query, set().union(*(name_words(w) | name_words(p) for p, w in named_people.items()))) \
        if named_people and not options.subject_words else query
    dense_query = query if options.dense_names else lexical_query
    scored: dict[str, list[tuple[str, float]]] = {}
    dense = dense_for(dense_query) if "dense" in options.channels else None
    if dense is not None:
        scored["dense"] = list(dense)
    if lexical:
        scored["lexical"] = whole if lexical_query == query else \
            store.lexical(user_id, "episodes", lexical_query, options.depth, session, caught_up)
    found = [i for i, _, _ in fuse(ranked_ids(scored), options)]
    subject = None
    if options.subjects and found:
        said |= _speakers(fetch, [r for r in found if r not in said])
        subject = people(set(said.values()))[0]
        if subject is not None and lexical_query == query and not options.subject_words and lexical:
            # the first person of a user's question (or a person only the dense channel found)
            lexical_query = _without(query, name_words(subject.word) | name_words(subject.speaker))
            if lexical_query != query:
                scored["lexical"] = store.lexical(user_id, "episodes", lexical_query, options.depth, session,
                                                  caught_up)
                found = [i for i, _, _ in fuse(ranked_ids(scored), options)]
                said |= _speakers(fetch, [r for r in found if r not in said])
        if subject is not None:
            scored[SUBJECT] = [(r, 0.0) for r in found if said.get(r) == subject.speaker]
    if timeframe is not None:
        scored["time"] = [(r, 0.0) for r in _by_time(store, user_id, fetch, found, timeframe, options.depth, session)]
    return Searched(scored, subject, tuple(named_people), lexical_query, dense_query)


def _facts_about(store: FactStore, user_id: str, subject: Subject, scored: dict[str, list[tuple[str, float]]],
                 options: RecallOptions) -> set[str]:
    """The ids of the found facts about the person the question names (their keys are namespaced by them,
    ``rules.attribute``), so a fact about them keeps its place above the turn it came from."""
    found = [i for i, _, _ in fuse(ranked_ids(scored), options)]
    prefix = f"{slug(subject.speaker)}."
    return {f.id for f in store.profile(user_id, ids=found) if (f.key or "").startswith(prefix)}


def _people(store: FactStore, user_id: str, query: str, speakers: set[str],
            variants: bool = True, first_person_only: bool = False) -> tuple[Subject | None, dict[str, str]]:
    """The one person of ``speakers`` the question is about, by name or by the name their ``<person>.name``
    fact gives ("I'm Kate": ``emi.name`` = Kate), or a spelling of either (``variants``), or in a user–assistant
    memory the user or the assistant (``subject.named``); and everyone of ``speakers`` it names (``named_all``)."""
    people = sorted(s for s in speakers if s.lower() not in ROLES)
    if not people:
        return named(query, sorted(speakers), first_person_only=first_person_only), {}  # a user-assistant memory
    keys = {f"{slug(p)}.name": p for p in people}
    aliases = {f.value: keys[f.key] for f in store.profile(user_id, keys=sorted(keys)) if f.value and f.key in keys}
    return named(query, people, aliases, variants), named_all(query, people, aliases, variants)


def _speakers(fetch: "EpisodeReader", refs: Sequence[str]) -> dict[str, str]:
    """Who said each of the episodes ``refs``: ``{ref: speaker}``."""
    return {r: e.speaker for r, e in fetch(refs).items()}


def _without(query: str, words: set[str]) -> str:
    """``query`` without ``words`` (``subject.without_words``), or the whole query if nothing else is left."""
    stripped = without_words(query, words)
    return stripped if stripped.strip() else query


class EpisodeReader:
    """Episodes by index id for one read of one user's memory: a whole turn, or the excerpt a passage's id
    names (``memkit/store/passages.py``). A read asks for the same turns several times (whose they are, when they
    were said, then to pack them), so each is read from the store once."""

    def __init__(self, store: FactStore, user_id: str) -> None:
        self.store, self.user_id = store, user_id
        self.read: dict[str, Episode | None] = {}  # episode id -> the episode (None: not in the store)

    def __call__(self, refs: Sequence[str]) -> dict[str, Episode]:
        parsed = [passages.parse(r) for r in refs]
        missing = [i for i in dict.fromkeys(i for i, _ in parsed) if i not in self.read]
        if missing:
            found = {e.id: e for e in self.store.episodes(self.user_id, missing)}
            self.read.update((i, found.get(i)) for i in missing)
        got = [(r, self.read[i], span) for r, (i, span) in zip(refs, parsed)]
        return {r: e if span is None else e.excerpt(span) for r, e, span in got if e is not None}


def _by_time(store: FactStore, user_id: str, fetch: EpisodeReader, refs: list[str], timeframe: Timeframe,
             depth: int, session: str | None) -> list[str]:
    """The time ranking: the turns said in the window, in the order they were said; or, for an order, the
    recalled items newest (or oldest) first."""
    if timeframe.order is not None:
        found = fetch(refs)
        return sorted(found, key=lambda r: found[r].time, reverse=timeframe.order == "latest")[:depth]
    # the window's turns in the order they were said (recalled ones first ranked the window's answers above
    # the requests they answer: docs/measurements.md, "The question's time"), each by its best-recalled item
    inside = store.episodes_between(user_id, timeframe.start or 0.0, timeframe.end or 0.0, depth, session)
    best: dict[str, str] = {}
    for r in refs:
        best.setdefault(passages.parse(r)[0], r)
    return [best.get(e.id) or episode_items(e)[0][0] for e in inside]


def _scored(store: FactStore, user_id: str, part: str, query: str, dense: Sequence[tuple[str, float]] | None,
            options: RecallOptions, floor: float, session: str | None) -> dict[str, list[tuple[str, float]]]:
    """Each channel's hits of one part, ``(id, the channel's own score)`` best first (dense below ``floor`` out)."""
    scored: dict[str, list[tuple[str, float]]] = {}
    if "dense" in options.channels and dense is not None:
        scored["dense"] = [(i, sim) for i, sim in dense if sim >= floor]
    if "lexical" in options.channels:
        scored["lexical"] = store.lexical(user_id, part, query, options.depth, session)
    return scored


def _fetched(fused: list[tuple[str, float, dict[str, int]]], sims: dict[str, float],
             fetch: Callable[[list[str]], dict[str, Any]], page: int | None) -> Iterator[Recalled]:
    """The fused items, read by id from their store of record as the caller takes them, a page at a time, so a
    read that stops early (a full budget) fetches no more."""
    size = page or max(len(fused), 1)
    for start in range(0, len(fused), size):
        chunk = fused[start:start + size]
        items = fetch([i for i, _, _ in chunk])
        yield from (Recalled(items[i], s, r, sims.get(i, math.nan), why(r)) for i, s, r in chunk if i in items)


def fact_hits(store: FactStore, policy: "Policy", user_id: str, fused: list[tuple[str, float, dict[str, int]]],
              dense: Sequence[tuple[str, float]] | None, k: int, floor: float, profile_tokens: int,
              options: RecallOptions = RecallOptions(), vector: Sequence[float] | None = None) -> list[Hit]:
    """The facts to show: the standing instructions that hold for the question (``instruction_hits``, by its
    ``vector``), the top ``k`` of ``fused`` (the facts ranked already: alone, ``fused_facts``, or on one list
    with the episodes, ``recall``), resolved by ``policy`` when it resolves conflicts at read time, then the
    profile block's facts (``why="profile"``), most important first."""
    resolves = policy.resolves_at_read
    # a policy that resolves at write time has one current fact per key: the first k recalled are the k shown
    page = None if resolves else k
    found = _fetched(fused, dict(dense or ()), lambda ids: {f.id: f for f in store.profile(user_id, ids=ids)}, page)
    recalled = list(found if resolves else islice(found, k))
    standing = store.profile(user_id, prefix=STANDING) if options.instructions else []
    told = instruction_hits(store, standing, vector, floor, options.instructions)
    # the profile block: the most important current facts, from the maintained profile, as many as the
    # block can hold besides the k shown; an instruction with a condition only where it holds (``told``)
    conditional = {f.id for f in standing if condition(f.text)}
    top = [f for f in store.profile(user_id, limit=profile_rows(profile_tokens, k) + len(conditional))
           if f.id not in conditional] if profile_tokens else []
    shown_for_key: dict[str, Fact] = {}
    if resolves:
        # a policy that resolves conflicts at read time (append) shows the fact each key resolves to, in
        # place of a recalled or top one of that key; the others resolved them when writing
        keys = sorted({f.key for f in [r.item for r in recalled] + [h.fact for h in told] + top if f.key})
        same_key = policy.resolve(store.profile(user_id, keys=keys))
        shown_for_key = {f.key: f for f in same_key if f.key}
        top = policy.resolve(top + [f for f in same_key if f.id not in {t.id for t in top}])
        told = [replace(h, fact=shown_for_key.get(h.fact.key, h.fact)) if h.fact.key else h for h in told]
    hits: dict[str, Hit] = {h.fact.id: h for h in told}
    for r in recalled:
        f = shown_for_key.get(r.item.key, r.item) if r.item.key else r.item
        hits.setdefault(f.id, Hit(f, r.similarity, r.score, why=r.why))
    shown = list(hits.values())[:len(told) + k]
    if not profile_tokens:
        return shown
    have = {h.fact.id for h in shown} | {h.fact.key for h in shown if h.fact.key}
    rest = sorted((f for f in top if f.id not in have and f.key not in have),
                  key=lambda f: (-f.importance, -f.valid_from))
    nan = float("nan")
    return shown + [Hit(f, nan, nan, why="profile") for f in rest]


def recall(store: FactStore, policy: "Policy", user_id: str, session_id: str, query: str, plan: BudgetPlan, k: int,
           floor: float, options: RecallOptions = RecallOptions(), facts: bool = True,
           episodes: bool = True, timeframe: Timeframe | None = None
           ) -> tuple[list[Hit], Iterator[Recalled], Subject | None]:
    """A read's recall: the facts to show (``fact_hits``) and the episodes, both with their fused scores on one
    list, the episodes read a page at a time as packing takes them; one dense query for both parts, the
    session's own pending turns left pending. Also the person the question names, if it names one."""
    if not query.strip():
        return fact_hits(store, policy, user_id, [], None, k, floor, plan.profile, options), iter(()), None
    deeper = replace(options, depth=plan.episode_depth)
    depths = {part: d for part, d, wanted in (("facts", options.depth, facts), ("episodes", deeper.depth, episodes))
              if wanted}
    searched: dict[str, dict[str, list[tuple[str, float]]]] = {}
    vectors: dict[str, list[float] | None] = {}

    def dense_for(q: str) -> dict[str, list[tuple[str, float]]]:
        # one dense query of both parts per text searched (a question that names people is searched without them)
        if q not in searched:
            vectors[q] = store.embed_query(q) if "dense" in options.channels else None
            searched[q] = dense_rankings(store, user_id, vectors[q], depths, options, session_id, caught_up=episodes)
        return searched[q]

    # facts and episodes on one list: each item's fused score is its place among both, so the packer takes
    # them in one order and a fact is shown only where it outranks the episodes (assemble.pack_memory)
    fetch = EpisodeReader(store, user_id)
    if episodes:  # once for the read's searches of them, which then do not look again (``caught_up``)
        try:
            store.embed_pending(user_id, session_id)
        except StoreFull:  # the catch-up is a write: on a full disk the read goes on with what is indexed
            pass
    scored, subject, people, lexical_query, dense_query = _scored_episodes(
        store, user_id, query, lambda q: dense_for(q).get("episodes"), deeper, session_id, timeframe, fetch,
        caught_up=True) if episodes else Searched({}, None, (), query, query)
    dense = dense_for(dense_query)
    # the facts' lexical channel searches what the episodes' did, so their scores rank on one list
    scored_facts = _scored(store, user_id, "facts", lexical_query, dense.get("facts"), options, floor, None) \
        if facts else {}
    ranked = one_list(scored_facts, {c: v for c, v in scored.items() if c != SUBJECT})
    if subject is not None:
        # the person's turns and facts in their order on the one list: a fact found deep in one channel does not
        # jump ahead of the person's turns that both channels rank high
        about = {Ref("episodes", i) for i, _ in scored[SUBJECT]}
        if scored_facts:
            about |= {Ref("facts", i) for i in _facts_about(store, user_id, subject, scored_facts, options)}
        ranked[subject.ranking] = [key for key, _, _ in fuse(ranked, options) if key in about]
    fused = fuse(ranked, options)
    # the profile block is the user's: a question that names people (one or several) gets their facts by recall
    profile = 0 if people or (subject is not None and subject.ranking == SUBJECT) else plan.profile
    shown = fact_hits(store, policy, user_id, [(ref.id, s, r) for ref, s, r in fused if ref.part == "facts"],
                      dense.get("facts"), k, floor, profile, options, vectors.get(dense_query)) if facts else []
    found = _fetched([(ref.id, s, r) for ref, s, r in fused if ref.part == "episodes"], dict(dense.get("episodes") or ()),
                     fetch, plan.page)
    return shown, found, subject
