"""The ``Memory`` facade: wires the episodic buffer, the extractor, the conflict policy and the fact store.

``observe`` is the write path, ``context`` the read path: wiring of the budget plan (``budget.py``), recall
(``recall.py``) and packing (``assemble.py``), in that order.
"""

from __future__ import annotations

import warnings
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from contextlib import contextmanager
from datetime import datetime
from time import time as clock
from typing import Any, Callable, Iterator, Sequence

from .write import reconcile
from . import registry, validate
from .store.passages import PASSAGE_TOKENS
from .config import Settings
from .write.episodic import EpisodicBuffer, SessionStore
from .errors import ConfigError, StoreClosed
from .write.extract import Extractor, LLMExtractor
from .write.path import WritePath
from .store import BULK_SIZE, FactStore
from .read.pipeline import ReadOptions, profile_block, read, read_notes, search_facts
from .write.rules import RuleExtractor
from .write.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .types import Candidate, Context, Episode, Event, Hit, Turn

Retriever = Callable[[str], Sequence[str]]


class Memory:
    """Two-layer memory for agents. ``Memory()`` is the offline default: MiniLM, rules, keyed upserts, in memory."""

    def __init__(self, store: FactStore | None = None, extractor: Extractor | None = None,
                 summarizer: Summarizer | None = None, policy: "str | reconcile.Policy" = "keyed", chat_model: Any = None,
                 sessions: SessionStore | None = None, window_tokens: int = 600, summary_tokens: int = 200,
                 passage_tokens: int = PASSAGE_TOKENS, retriever: Retriever | None = None,
                 read: ReadOptions | None = None, dense_passages: int = 0, **deprecated: Any) -> None:
        """``read`` shapes every ``context`` (``memkit.ReadOptions``: k, the floor, the profile block, recall,
        what is shown). The read options passed one by one (``Memory(k=3, profile_tokens=0)``), as before
        0.3, still work and warn: they go in ``read``."""
        self.read_options = ReadOptions.given(read, deprecated)  # ConfigError for anything but ReadOptions
        if isinstance(policy, str) and registry.needs_model("policy", policy):
            policy = registry.as_policy(policy, model=chat_model)  # ConfigError without a model
        validate.positive_int("window_tokens", window_tokens)
        self._owns_store = store is None  # close() closes a store it made, never one it was given
        self.store = store or FactStore.ephemeral()
        self.summarizer = summarizer or ExtractiveSummarizer()
        policy = registry.as_policy(policy)  # a registered name, or an object
        if not isinstance(policy, reconcile.Policy):
            raise ConfigError(f"{policy!r} is not a policy: it needs name, resolves_at_read, plan() and resolve() "
                              "(memkit.write.reconcile.Policy)")
        # extraction, the policy and the retry queue (memkit/write/path.py)
        self.writes = WritePath(self.store, extractor or RuleExtractor(), policy)
        self.chat_model = chat_model
        self.sessions_store = sessions
        self.window_tokens, self.summary_tokens = window_tokens, summary_tokens
        # a turn longer than this is indexed as passages, and a read can show the one that answers (0: whole turns)
        self.passage_tokens = validate.count("passage_tokens", passage_tokens, validate.MAX_BUDGET)
        # of those passages, the first this many get a vector, the rest are found by their words (0: all of them;
        # docs/decisions.md, "Encoder batches")
        self.dense_passages = validate.count("dense_passages", dense_passages, validate.MAX_K)
        self.retriever = retriever
        self.open_sessions: dict[tuple[str, str], EpisodicBuffer] = {}  # (user_id, session_id) -> its live buffer
        # documents and session warm-ups each on a thread of their own; memory is searched in the caller's thread (on
        # 2 cores another thread made reads slower: docs/measurements.md, "Read path at scale")
        self._docs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memkit-docs")
        self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memkit-warm")
        self._warming: dict[str, Future] = {}  # user_id -> the background load started when a session opened
        self._bulk = False  # inside bulk(): sessions neither warm up nor embed as they open and end
        self._closed = False  # close() or the end of its `with` block: every later call raises StoreClosed

    @property
    def sessions(self) -> dict[tuple[str, str], EpisodicBuffer]:
        """Deprecated (0.3): ``open_sessions``, beside ``sessions_store`` (the ``sessions=`` it was given)."""
        warnings.warn("Memory.sessions is now Memory.open_sessions", DeprecationWarning, stacklevel=2)
        return self.open_sessions

    @classmethod
    def from_settings(cls, settings: Settings | None = None, store: FactStore | None = None, **kwargs: Any) -> "Memory":
        """Offline when nothing is configured; with ``MEMKIT_LLM_*`` the LLM extractor and summarizer."""
        settings = settings or Settings.from_env()
        model = settings.chat_model()
        if model is not None:
            kwargs.setdefault("extractor", LLMExtractor(model))
            kwargs.setdefault("summarizer", LLMSummarizer(model))
        return cls(store=store or FactStore.ephemeral(settings.embedder()), chat_model=model, **kwargs)

    # ---- episodic ----------------------------------------------------------------------------
    def session(self, user_id: str, session_id: str) -> EpisodicBuffer:
        """The user's session ``session_id``: open, resumed from the session store, or new. A session id is the
        user's own: two users may each have a session "mon"."""
        key = (validate.user_id(user_id), validate.session_id(session_id))
        self._check_open()
        buf = self.open_sessions.get(key)
        if buf is not None:
            return buf
        if self.sessions_store is not None:
            buf = EpisodicBuffer.resume(self.sessions_store, session_id, user_id, window_tokens=self.window_tokens,
                                        summary_tokens=self.summary_tokens, summarizer=self.summarizer)
        if buf is None:
            buf = EpisodicBuffer(session_id, user_id, self.window_tokens, self.summary_tokens,
                                 self.summarizer, self.sessions_store)
        # a session opens: load the user's indexes in the background, embedding what other sessions had pending
        # now (not what they add while it runs: their own end or the next read batches that, so the batches are
        # the same in every run)
        if not self._bulk:
            self._warming = {u: f for u, f in self._warming.items() if not f.done()}
            waiting = self.store.pending_episodes(user_id, but_session=session_id)
            self._warming[user_id] = self._warmer.submit(self.store.warm, user_id, session_id, waiting)
        self.open_sessions[key] = buf
        return buf

    def ready(self, user_id: str, timeout: float | None = None) -> bool:
        """Whether the background load a session opening started for ``user_id`` has finished, waiting up to
        ``timeout`` seconds for it (None: as long as it takes). True when nothing is loading."""
        try:
            if user_id in self._warming:
                self._warming[user_id].result(timeout=timeout)
        except TimeoutError:
            return False
        except Exception:  # noqa: BLE001 - a failed warm-up is not the read path's problem: a read loads what it needs
            pass
        return True

    def end_session(self, user_id: str, session_id: str, keep: bool = False) -> None:
        """Close a session: kept in the session store to resume later, or discarded (its turns stay as episodes)."""
        buf = self.session(user_id, session_id)
        if not self._bulk:
            self.store.embed_pending(user_id)
        if not keep:
            buf.discard()
        self.open_sessions.pop((user_id, session_id), None)

    @contextmanager
    def bulk(self, size: int = BULK_SIZE) -> Iterator["Memory"]:
        """Observe a burst of turns at the encoder's speed (importing a history, a benchmark's ingest): sessions
        neither warm up as they open nor embed as they end; turns are embedded ``size`` at a time, of any users
        (``FactStore.bulk``). Reads inside it see every turn; facts and vectors are the same as outside it."""
        with self.store.bulk(size):
            self._bulk = True
            try:
                yield self
            finally:
                self._bulk = False

    # ---- write path --------------------------------------------------------------------------
    def observe(self, user_id: str, session_id: str, role: str, content: str,
                turn_id: str | None = None, time: "float | datetime | None" = None,
                speaker: str | None = None) -> list[Event]:
        """Record a turn: in the session window, and as an episode (every role, every speaker). Extract durable
        facts from the user's turns and from any turn of a named ``speaker`` (facts then name that person and
        their keys are namespaced by them), and apply the conflict policy. Returns the events."""
        speaker = validate.speaker(speaker)
        time = validate.timestamp(time)
        turn = self.session(user_id, session_id).append(role, content, turn_id, time)
        extract = role == "user" or speaker is not None
        # the record says, in its own commit, that the turn is still to be extracted (the durable retry queue)
        episode = self.store.add_episode(user_id, Episode("", user_id, session_id, turn.id, speaker or role, role,
                                                          turn.content, turn.time, turn.tokens,
                                                          passage_tokens=self.passage_tokens,
                                                          dense_passages=self.dense_passages), extract=extract)
        return self.writes.turn(user_id, turn, speaker, episode.id) if extract else []

    @property
    def extractor(self) -> Extractor:
        return self.writes.extractor

    @extractor.setter
    def extractor(self, extractor: Extractor) -> None:
        self.writes.extractor = extractor

    @property
    def policy(self) -> reconcile.Policy:
        return self.writes.policy

    @policy.setter
    def policy(self, policy: reconcile.Policy) -> None:
        self.writes.policy = policy

    @property
    def pending_turns(self) -> list[tuple[str, Turn, str | None]]:
        """``(user_id, turn, speaker)`` of the turns whose extraction waits (for the model, or for a process
        that died before it finished), from the store's records: what ``flush()`` extracts."""
        return self.writes.pending_turns()

    @property
    def pending(self) -> list[tuple[str, list[Candidate], float | None]]:
        """``(user_id, candidates, time)`` of the writes whose planning waits for the store or the model, from
        the store's records: what ``flush()`` plans."""
        return self.writes.pending()

    def write(self, user_id: str, cands: Sequence[Candidate], time: float | None = None) -> list[Event]:
        """Plan and apply ``cands`` under the policy, one writer per user at a time (``WritePath.write``: what
        the store or the model could not take waits in the store's records for ``flush()``)."""
        return self.writes.write(user_id, cands, time)

    def flush(self) -> list[Event]:
        """Apply what the event log holds unapplied (never planned again), extract the turns that waited for the
        model, then plan the writes that waited for the store: all of it read from the store's records, so a
        later process finishes what an earlier one could not. A write that meets the outage again keeps
        waiting (``StoreUnavailable`` is raised; what is left stays for the next ``flush()``)."""
        self._check_open()
        return self.writes.flush()

    # ---- read path ---------------------------------------------------------------------------
    def search(self, user_id: str, query: str, k: int | None = None, min_score: float | None = None) -> list[Hit]:
        """The user's facts for ``query``: the top ``k`` by hybrid recall (lexical and dense, fused by rank;
        dense matches below the similarity floor do not count), then the rest of the current facts, most
        important first (``why="profile"``). Under ``append`` only the newest fact of each key is shown.

        Each recalled hit's ``why`` names the channels and ranks that found it (``"dense #1 + lexical #3"``);
        ``context`` admits profile facts only up to ``profile_tokens`` (and 15% of the budget).
        """
        query = validate.query(query)
        k = None if k is None else validate.positive_int("k", k, validate.MAX_K)
        self._check_open()
        return search_facts(self.store, self.policy, user_id, query, self.read_options, k, min_score)

    def context(self, user_id: str, session_id: str, query: str, budget: int = 1200, k: int | None = None,
                min_score: float | None = None, now: "float | datetime | None" = None) -> Context:
        """What to send for ``query`` within ``budget`` tokens, with an account of every item and why.

        In priority order: this session's newest turns are reserved (up to ``window_share`` of the budget);
        then the user's profile block; then the recalled facts and past episodes on one ranked list (hybrid
        recall; each episode with its session date and speaker, never one already in this session or the
        source of a shown fact); then the running summary and the newest turns; then documents in their own
        share.
        ``k`` and ``min_score`` override the memory's own for this read (what a widget's sliders pass).
        ``now`` is when the question is asked (default: the session's newest turn, else the clock): a
        relative expression in it ("two weeks ago", "most recently") ranks the turns of that time up
        (``memkit/read/timeframe.py``), and the notes say how.
        """
        budget = validate.positive_int("budget", budget, validate.MAX_BUDGET)
        k = None if k is None else validate.positive_int("k", k, validate.MAX_K)
        query = validate.query(query)
        buf = self.session(user_id, session_id)
        notes = read_notes(query, buf.window, self._warming.get(user_id))
        docs = self._docs.submit(self.retriever, query) if self.retriever else None
        asked = validate.time_point("now", now) if now is not None else buf.window[-1].time if buf.window else clock()
        return read(self.store, self.policy, buf, query, budget, self.read_options, asked, notes, docs, k, min_score)

    def profile(self, user_id: str, limit: int = 20) -> str:
        """The user's ``limit`` most important current facts as a compact block, most important first (from the
        maintained profile; equal importance: the newest first)."""
        return profile_block(self.store, user_id, limit)

    def forget(self, user_id: str) -> None:
        """Remove ``user_id`` from everything this memory holds: open and kept sessions with their summaries, and
        the store's records, indexes, profile, history and retry queue (``FactStore.drop_user``); docs/usage.md,
        "What memkit guarantees"."""
        self._check_open()
        self.ready(validate.user_id(user_id))  # a load under way finishes before the user is dropped
        self.open_sessions = {key: buf for key, buf in self.open_sessions.items() if key[0] != user_id}
        if self.sessions_store is not None:
            self.sessions_store.drop_user(user_id)
        self.store.drop_user(user_id)

    def close(self) -> None:
        """Stop the background threads and close the store (embedding what waits)."""
        self._stop()
        self.store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("this Memory was closed (close(), or its `with` block ended); make a new Memory")
        self.store._check_open()

    def _stop(self) -> None:
        self._closed = True
        self._warmer.shutdown(wait=True, cancel_futures=True)
        self._docs.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        """``with Memory() as memory:`` closes the store on leaving if this memory made it (no ``store=``); a
        store you passed stays open for you (the background threads stop either way)."""
        self.close() if self._owns_store else self._stop()
