"""The ``Memory`` facade: wires the episodic buffer, the extractor, the conflict policy and the fact store.

``observe`` is the write path, ``context`` the read path. No pipeline logic lives here beyond the order
of the calls and the token budget of the assembled context.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from . import reconcile, tokens, validate
from .config import Settings
from .episodic import EpisodicBuffer, SessionStore
from .errors import ExtractionError, IsolationError, StoreUnavailable
from .extract import Extractor, LLMExtractor
from .facts import DEFAULT_FLOOR, FactStore
from .rules import RuleExtractor
from .summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from .types import Candidate, Context, Event, EventKind, Fact, Hit, Part, Turn

Retriever = Callable[[str], Sequence[str]]


def newest_per_key(facts: Sequence[Fact]) -> dict[str, Fact]:
    """The newest fact of each key (how the append policy resolves conflicts at read time)."""
    best: dict[str, Fact] = {}
    for f in facts:
        if f.key is not None and (f.key not in best or f.valid_from > best[f.key].valid_from):
            best[f.key] = f
    return best


class Memory:
    """Two-layer memory for agents. ``Memory()`` is the offline default: MiniLM, rules, keyed upserts, in memory."""

    def __init__(self, store: FactStore | None = None, extractor: Extractor | None = None,
                 summarizer: Summarizer | None = None, policy: str = "keyed", chat_model: Any = None,
                 sessions: SessionStore | None = None, window_tokens: int = 600, summary_tokens: int = 200,
                 k: int = 5, min_score: float = DEFAULT_FLOOR, retriever: Retriever | None = None,
                 document_share: float = 0.25, profile_tokens: int = 150) -> None:
        if policy not in reconcile.POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose one of {reconcile.POLICIES}")
        self.store = store or FactStore.ephemeral()
        self.extractor = extractor or RuleExtractor()
        self.summarizer = summarizer or ExtractiveSummarizer()
        self.policy = policy
        self.chat_model = chat_model
        self.sessions_store = sessions
        self.window_tokens, self.summary_tokens = window_tokens, summary_tokens
        self.k, self.min_score = k, min_score
        self.retriever, self.document_share = retriever, document_share
        self.profile_tokens = profile_tokens
        self.sessions: dict[str, EpisodicBuffer] = {}
        self.pending: list[tuple[str, list[Candidate]]] = []
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memkit")

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
        """The session's buffer: open, resumed from the session store, or new."""
        validate.user_id(user_id)
        validate.session_id(session_id)
        buf = self.sessions.get(session_id)
        if buf is None and self.sessions_store is not None:
            buf = EpisodicBuffer.resume(self.sessions_store, session_id, window_tokens=self.window_tokens,
                                        summary_tokens=self.summary_tokens, summarizer=self.summarizer)
        if buf is None:
            buf = EpisodicBuffer(session_id, user_id, self.window_tokens, self.summary_tokens,
                                 self.summarizer, self.sessions_store)
        if buf.user_id != user_id:
            raise IsolationError(f"session {session_id!r} belongs to another user")
        self.sessions[session_id] = buf
        return buf

    def end_session(self, user_id: str, session_id: str, keep: bool = False) -> None:
        """Close a session: kept in the session store to resume later, or discarded."""
        buf = self.session(user_id, session_id)
        if not keep:
            buf.discard()
        self.sessions.pop(session_id, None)

    # ---- write path --------------------------------------------------------------------------
    def observe(self, user_id: str, session_id: str, role: str, content: str,
                turn_id: str | None = None, time: float | None = None) -> list[Event]:
        """Record a turn; for user turns, extract durable facts and apply the conflict policy. Returns the events."""
        turn = self.session(user_id, session_id).append(role, content, turn_id, time)
        if role != "user":
            return []
        try:
            cands = self.extractor.extract(turn.content, (turn.id,))
        except ExtractionError as e:
            event = Event(EventKind.ERROR, user_id, reason=str(e), source=(turn.id,), time=turn.time)
            self._record(user_id, [event])
            return [event]
        return self.write(user_id, cands, turn.time)

    def write(self, user_id: str, cands: Sequence[Candidate], time: float | None = None) -> list[Event]:
        """Plan and apply ``cands`` under the policy; if the store is down they wait in ``pending``."""
        if not cands:
            return []
        try:
            events = reconcile.plan(self.policy, self.store, user_id, cands, time, model=self.chat_model)
            reconcile.apply(self.store, user_id, events)
        except ExtractionError as e:
            event = Event(EventKind.ERROR, user_id, reason=str(e), source=cands[0].source)
            self._record(user_id, [event])
            return [event]
        except StoreUnavailable:
            self.pending.append((user_id, list(cands)))
            raise
        return events

    def flush(self) -> list[Event]:
        """Retry the writes that waited for an unreachable store."""
        waiting, self.pending = self.pending, []
        events: list[Event] = []
        for i, (user_id, cands) in enumerate(waiting):
            try:
                events += self.write(user_id, cands)
            except StoreUnavailable:
                self.pending += waiting[i + 1:]
                raise
        return events

    def _record(self, user_id: str, events: list[Event]) -> None:
        try:
            self.store.record(user_id, events)
        except StoreUnavailable:
            pass  # the event is still returned to the caller

    # ---- read path ---------------------------------------------------------------------------
    def search(self, user_id: str, query: str, k: int | None = None, min_score: float | None = None) -> list[Hit]:
        """The user's facts for ``query``: the top ``k`` above the similarity floor (``why="similar"``), then
        the rest of the current facts, most important first (``why="profile"``). Under ``append`` only the
        newest fact of each key is shown (add-only stores resolve conflicts at read time).

        The profile candidates are the seeds' user-profile block: ``context`` admits them only up to
        ``profile_tokens``, so a user with few facts gets all of them and a user with many gets the most
        important ones; each carries its measured similarity, so the account shows why it got in.
        """
        k = k or self.k
        floor = self.min_score if min_score is None else min_score
        append = self.policy == "append"
        ranked = self.store.search(user_id, query, k=2 * k + 20, min_score=-1.0)
        measured = {h.fact.id: h for h in ranked}
        current = self.store.get(user_id) if self.profile_tokens or append else []
        newest = newest_per_key(current) if append else {}
        if append:
            current = [f for f in current if f.key is None or newest[f.key].id == f.id]
        nan = float("nan")

        def as_hit(f: Fact, why: str) -> Hit:
            m = measured.get(f.id)
            return Hit(f, m.similarity if m else nan, m.score if m else nan, why=why)

        # under append, a key's newest fact stands in for an older one that matched; other policies
        # resolve conflicts when writing, so what is stored is what is shown
        matched = [newest.get(h.fact.key, h.fact) if h.fact.key else h.fact
                   for h in ranked if h.similarity >= floor]
        hits = [as_hit(f, "similar") for f in {f.id: f for f in matched}.values()][:k]
        if not self.profile_tokens:
            return hits
        have = {h.fact.id for h in hits} | {h.fact.key for h in hits if h.fact.key}
        rest = sorted((f for f in current if f.id not in have and f.key not in have),
                      key=lambda f: (-f.importance, -f.valid_from))
        return hits + [as_hit(f, "profile") for f in rest]

    def context(self, user_id: str, session_id: str, query: str, budget: int = 1200) -> Context:
        """Facts, summary, newest turns (and documents) for ``query``, within ``budget`` tokens, with an account."""
        buf = self.session(user_id, session_id)
        facts_future = self._pool.submit(self.search, user_id, query)
        docs_future = self._pool.submit(self.retriever, query) if self.retriever else None
        summary, window = buf.summary, list(buf.window)  # the episodic read
        hits = facts_future.result()
        doc_budget = int(budget * self.document_share) if docs_future else 0
        left = budget - doc_budget
        parts: list[Part] = []

        newest = window[-1] if window else None
        reserve = min(newest.tokens, left) if newest else 0  # the newest turn is never crowded out
        lines, items, profile_used = [], [], 0
        for h in hits:
            line = f"- {h.fact.text}"
            cost = tokens.count(line) + 1
            if h.why == "profile" and profile_used + cost > self.profile_tokens:
                break
            if tokens.count("\n".join(lines + [line])) > left - reserve:
                continue
            profile_used += cost if h.why == "profile" else 0
            lines.append(line)
            items.append({"id": h.fact.id, "text": h.fact.text, "similarity": round(h.similarity, 3),
                          "score": round(h.score, 3), "why": h.why, "source": list(h.fact.source)})
        facts_text = "\n".join(lines)
        parts.append(Part("facts", facts_text, tokens.count(facts_text), tuple(items)))
        left -= parts[-1].tokens

        reserve = min(newest.tokens, left) if newest else 0
        summary_text = tokens.truncate(summary.text, max(left - reserve, 0)) if summary.text else ""
        parts.append(Part("summary", summary_text, tokens.count(summary_text),
                          tuple({"turn_id": t} for t in summary.turn_ids)))
        left -= parts[-1].tokens

        chosen: list[Turn] = []
        for t in reversed(window):
            if t.tokens > left and chosen:
                break
            if t.tokens > left:  # only the newest turn can be cut, and only when it alone overflows the budget
                cut = tokens.truncate(t.content, max(left, 0))
                t = Turn(t.id, t.session_id, t.user_id, t.role, cut, tokens.count(cut), t.time)
            chosen.insert(0, t)
            left -= t.tokens
        parts.append(Part("turns", "\n".join(f"{t.role}: {t.content}" for t in chosen), sum(t.tokens for t in chosen),
                          tuple({"turn_id": t.id, "role": t.role, "tokens": t.tokens} for t in chosen)))

        doc_lines: list[str] = []
        if docs_future:
            for d in docs_future.result():
                if tokens.count("\n".join(doc_lines + [d])) > doc_budget:
                    break
                doc_lines.append(d)
            doc_text = "\n".join(doc_lines)
            parts.append(Part("documents", doc_text, tokens.count(doc_text), tuple({"text": d} for d in doc_lines)))

        messages: list[dict[str, str]] = []
        if facts_text:
            messages.append({"role": "system", "content": "What you know about the user:\n" + facts_text})
        if summary_text:
            messages.append({"role": "system", "content": "Summary of earlier turns in this session:\n" + summary_text})
        if doc_lines:
            messages.append({"role": "system", "content": "Reference documents (not facts about the user):\n"
                             + "\n".join(doc_lines)})
        messages += [{"role": t.role, "content": t.content} for t in chosen]
        return Context(tuple(messages), tuple(parts), budget, tuple(t.id for t in chosen) + summary.turn_ids,
                       tuple(i["id"] for i in items))

    def profile(self, user_id: str) -> str:
        """The user's current facts as a compact block."""
        facts = sorted(self.store.get(user_id), key=lambda f: (f.key or "~", f.created_at))
        return "User profile:\n" + "\n".join(f"- {f.text}" for f in facts) if facts else "User profile: (empty)"

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self.store.close()
