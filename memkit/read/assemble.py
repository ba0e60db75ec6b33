"""Packing recalled items into a token budget: pure functions from recalled facts, episodes and session
turns to the parts of a ``Context``, each item with its tokens and why it got in.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import re
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..models import tokens
from ..write.summarize import Summary
from ..types import Episode, Hit, Part, Recalled, Turn
from .packing import PackOptions
from .lines import (date_label, episode_line, line_cost, name_cost, render_episodes, said_order, session_header,
                    unnamed)

# The line above each part in the messages (``ReadOptions(headers={...})`` replaces any of them)
HEADERS = {"facts": "What you know about the user:", "episodes": "From earlier conversations:",
           "summary": "Summary of earlier turns in this session:",
           "documents": "Reference documents (not facts about the user):"}


class FactLines:
    """The facts block as it is packed: ``take`` a hit if its line fits what is left (profile lines also within
    ``profile_tokens``, and none after the first that does not fit them); ``part`` renders it."""

    def __init__(self, profile_tokens: int) -> None:
        self.profile_tokens, self.profile_full = profile_tokens, False
        self.lines: list[str] = []
        self.items: list[dict[str, Any]] = []
        self.profile_used = 0
        self.sources: set[str] = set()  # the turns the shown facts came from

    def take(self, h: Hit, left: int) -> int:
        """The tokens ``h``'s line took of ``left`` (0: it was not taken)."""
        line = f"- {h.fact.text}"
        cost = line_cost(line)
        profile = h.why.kind == "profile"
        if profile and (self.profile_full or self.profile_used + cost > self.profile_tokens):
            self.profile_full = True
            return 0
        if cost > left:
            return 0
        self.profile_used += cost if profile else 0
        self.lines.append(line)
        self.sources.update(h.fact.source)
        self.items.append({"id": h.fact.id, "text": h.fact.text, "similarity": _round(h.similarity),
                           "score": _round(h.score), "why": h.why, "source": list(h.fact.source),
                           "date": date_label(h.fact.valid_from)})
        return cost

    def part(self) -> Part:
        text = "\n".join(self.lines)
        return Part("facts", text, tokens.count(text), tuple(self.items))


@functools.lru_cache(maxsize=1 << 13)  # a read keys each candidate's words two or three times, and read after read
def line_key(text: str) -> str:
    """What makes two lines the same: their words, ignoring case, punctuation and spacing."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@functools.lru_cache(maxsize=1 << 13)  # keys come from ``line_key``'s cache: the same strings, read after read
def key_words(key: str) -> frozenset[str]:
    """A line key's words (``near``)."""
    return frozenset(key.split())


def repeat_key(e: Episode) -> str:
    """What makes two episodes the same line: speaker and words, ignoring case, punctuation and spacing."""
    return line_key(f"{e.speaker}: {e.content}")


def near(a: set[str], b: set[str]) -> float:
    """How alike two lines' words are (Jaccard: shared words over all words)."""
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def diversified(stream: Iterable[Recalled | Hit], diversity: float, window: int = 10) -> Iterator[Recalled | Hit]:
    """Maximal marginal relevance over the next ``window`` items of a ranked stream: each time the item with
    the best ``(1 - diversity) * score / best score - diversity * (words most alike an item already given)``
    (``near``), so near-duplicates do not crowd out the rest. ``diversity`` 0 keeps the stream's order."""
    it = iter(stream)
    if diversity <= 0:
        yield from it
        return
    pool: list[list[Any]] = []  # [item, its words, its greatest likeness to an item given], kept up to date
    given: list[set[str]] = []
    while True:
        while len(pool) < window:
            nxt = next(it, None)
            if nxt is None:
                break
            words = set(line_key(nxt.fact.text if isinstance(nxt, Hit) else nxt.item.content).split())
            pool.append([nxt, words, _nearest(words, given)])
        if not pool:
            return
        top = pool[0][0].score
        for x, _, _ in pool:  # max(), written out: the read path's hottest loop
            if x.score > top:
                top = x.score
        top = top or 1.0
        best, value = 0, None
        for i, (x, _, alike) in enumerate(pool):  # the first of the best, as max() with a key
            v = (1 - diversity) * x.score / top - diversity * alike
            if value is None or v > value:
                best, value = i, v
        item, words, _ = pool.pop(best)
        given.append(words)
        n = len(words)
        for entry in pool:  # near(entry's words, words), inlined: the read path's hottest loop
            shared = len(entry[1] & words)
            if shared and shared / (len(entry[1]) + n - shared) > entry[2]:
                entry[2] = shared / (len(entry[1]) + n - shared)
        yield item


def _nearest(words: set[str], given: Sequence[set[str]]) -> float:
    """The greatest ``near(words, g)`` over ``given`` (0.0 for none), inlined: the read path's hottest loop."""
    if not words:
        return 0.0
    best, n = 0.0, len(words)
    for g in given:
        shared = len(words & g)
        if shared and shared / (n + len(g) - shared) > best:
            best = shared / (n + len(g) - shared)
    return best


FIRST = ("instruction", "profile")  # the facts shown before any recalled item: standing instructions, the profile


def pack_memory(hits: Sequence[Hit], recalled: Iterable[Recalled], budget: int, profile_tokens: int,
                skip: Callable[[Episode], bool], options: PackOptions = PackOptions(),
                neighbours: Callable[[Episode], Sequence[Episode]] | None = None,
                truncates: Callable[[str], bool] | None = None) -> tuple[Part, Part]:
    """The facts and episodes parts within ``budget``: first the standing instructions the question falls
    under (``why="instruction"``), then the recalled facts and the episodes on one ranked list, taken in the
    order of their fused scores while they fit, so a fact is shown only where it outranks the episodes, with
    the profile block (the ``why="profile"`` hits, within ``profile_tokens``) on it as ``profile_in_rank``
    places it (``options.profile_after``; 0: the block first). A shown fact spares its source turns
    (``options.spare_sources``); ``neighbours`` and ``truncates`` are ``pack_episodes``'s.

    Measured on the dev splits (docs/measurements.md, "Facts on one list"): the profile last, or none, lost up to 0.17 of
    the evidence on the user-assistant shape; after the first 8 items, with each fact in its turn's place, it
    gained at 100 to 400 tokens on BEAM (docs/decisions.md, "Profile block")."""
    block, used = FactLines(profile_tokens), 0
    profile = [h for h in hits if h.why.kind == "profile"]
    for h in [h for h in hits if h.why.kind == "instruction"] + ([] if options.profile_after else profile):
        used += block.take(h, budget - used)
    stream: Iterable[Any] = diversified(heapq.merge([h for h in hits if h.why.kind not in FIRST], recalled,
                                                    key=lambda x: -x.score), options.diversity)
    if options.profile_after:
        stream = profile_in_rank(stream, profile, options.profile_after)
    spare = options.spare_sources
    eps = pack_episodes(stream, budget - used, lambda e: skip(e) or (spare and e.turn_id in block.sources), options,
                        neighbours, truncates, facts=block, spare_facts=spare)
    return block.part(), eps


def profile_in_rank(stream: Iterable[Any], profile: Sequence[Hit], after: int) -> Iterator[Any]:
    """``stream`` with the profile block's facts competing for the budget: each just before the first recalled
    turn it came from (the fact in its turn's place: a shown fact spares its turns), the rest after the first
    ``after`` items (or the last, if fewer)."""
    of_turn: dict[str, list[Hit]] = {}
    for h in profile:
        for turn in h.fact.source:
            of_turn.setdefault(turn, []).append(h)
    given: set[str] = set()
    for rank, r in enumerate(stream):
        turn = r.item.turn_id if isinstance(r, Recalled) and isinstance(r.item, Episode) else None
        for h in profile if rank == after else of_turn.get(turn, ()):
            if h.fact.id not in given:
                given.add(h.fact.id)
                yield h
        yield r
    yield from (h for h in profile if h.fact.id not in given)


class EpisodePacker:
    """The episodes part being packed within ``budget`` (``pack_episodes``): what is shown, each line's
    cost (and its session's date line), and the repeats folded into a line shown."""

    def __init__(self, budget: int, skip: Callable[[Episode], bool], options: PackOptions = PackOptions(),
                 truncates: Callable[[str], bool] | None = None) -> None:
        self.budget, self.skip, self.dates, self.truncates = budget, skip, options.dates, truncates
        self.fold_repeats, self.near_repeats = options.fold_repeats, options.near_repeats
        self.speaker_runs = options.speaker_runs
        self.used = 0
        self.chosen: dict[str, tuple[Episode, dict[str, Any]]] = {}
        self.first_of: dict[str, str] = {}  # repeat key -> the episode id shown for it
        self.words_of: dict[str, frozenset[str]] = {}  # shown episode id -> its words (near repeats)
        self.lines_shown: set[str] = set()  # every shown line's words (an excerpt leaves them out)
        self.unkeyed: list[str] = []  # what the episodes shown since an excerpt last looked at them say
        self.repeats: dict[str, list[Episode]] = {}  # shown episode id -> the same line said elsewhere
        self.sessions: dict[str, Episode] = {}  # session id -> its first episode shown
        self.runs: dict[str, list[Episode]] = {}  # session id ("" without dates) -> its lines shown, as said

    @property
    def left(self) -> int:
        return self.budget - self.used

    def whole_turns(self) -> set[str]:
        """The turns shown whole (not as a passage)."""
        return {e.turn_id for e, _ in self.chosen.values() if e.span is None}

    def header_cost(self, e: Episode) -> int:
        """What a new session's header adds: its own line, and the label of any shown session of that date."""
        if not self.dates or e.session_id in self.sessions:
            return 0
        same_day = [s for s in self.sessions.values() if date_label(s.time) == date_label(e.time)]
        if not same_day:
            return line_cost(session_header(e))
        # the one session of that date shown so far gets its id too
        relabel = line_cost(session_header(same_day[0], True)) - line_cost(session_header(same_day[0]))
        return line_cost(session_header(e, True)) + (relabel if len(same_day) == 1 else 0)

    def _repeat_of(self, key: str, words: frozenset[str]) -> str | None:
        """The shown episode this line repeats (the same words, or ``near_repeats`` alike), if any."""
        if not self.fold_repeats:
            return None
        same, n, t = self.first_of.get(key), len(words), self.near_repeats
        if same is not None:
            return same
        for ref, w in self.words_of.items():  # near(words, w) >= t, inlined: the read path's hottest loop
            m = len(w)
            if n and m:
                if (n / m if n < m else m / n) < t:
                    continue  # lengths this far apart cannot be that alike: ``near`` is at most min / max
                shared = len(words & w)
                if shared / (n + m - shared) >= t:
                    return ref
            elif t <= 0.0:  # ``near`` of an empty line is 0
                return ref
        return None

    def take(self, e: Episode, rank: int, why: str, score: float | None, similarity: float | None) -> bool:
        """Show ``e`` if it is new, not skipped, and fits; a repeat is folded into the line shown for it."""
        if e.ref in self.chosen or self.skip(e):
            return False
        if self.fold_repeats and e.span is not None:  # an excerpt leaves out the lines the context already shows
            self.lines_shown.update(line_key(x) for said in self.unkeyed for x in said.splitlines())
            self.unkeyed.clear()
            kept = [x for x in e.content.splitlines() if line_key(x) and line_key(x) not in self.lines_shown]
            if not kept:
                return False
            e = e.evolve(content="\n".join(kept))
        key = repeat_key(e) if self.fold_repeats else e.ref
        words = key_words(key)
        same = self._repeat_of(key, words)
        if same is not None:  # the same line, said again: shown once, with every session it came from
            self.repeats.setdefault(same, []).append(e)
            return False
        line = episode_line(e)
        cost = line_cost(line) + self.header_cost(e)
        change, below = 0, None  # what the name before the line below ``e`` costs more (or less) once ``e`` is shown
        if self.speaker_runs:  # a line said by the speaker of the line above it goes without the name
            run = self.runs.setdefault(e.session_id if self.dates else "", [])
            at = bisect.bisect(run, said_order(e), key=said_order)
            above, below = run[at - 1] if at else None, run[at] if at < len(run) else None
            voice = above.speaker if above is not None else None
            cost -= name_cost(e) if unnamed(e, voice) else 0
            if below is not None:
                named_now, named_then = not unnamed(below, e.speaker), not unnamed(below, voice)
                change = (named_now - named_then) * name_cost(below)
        if self.used + cost + change > self.budget:
            return False
        self.used += cost + change
        if self.speaker_runs:
            run.insert(at, e)
        if change:
            self.chosen[below.ref][1]["tokens"] += change
        self.sessions.setdefault(e.session_id, e)
        item = {"turn_id": e.turn_id, "text": line, "session_id": e.session_id, "date": date_label(e.time),
                "speaker": e.speaker, "rank": rank, "why": why, "score": _round(score), "similarity": _round(similarity)}
        if e.span is not None:
            item["excerpt"] = list(e.span[:2])  # characters of the turn shown: the passage that was recalled
        elif self.truncates is not None and self.truncates(e.content):
            item["embedding"] = "truncated to the embedder's window; the lexical index has every word"
        self.chosen[e.ref] = (e, {**item, "tokens": cost})
        self.first_of[key] = e.ref
        self.unkeyed.append(e.content)  # keyed when an excerpt needs them (most reads have none)
        if self.fold_repeats and self.near_repeats < 1.0:
            self.words_of[e.ref] = words
        return True

    def part(self) -> Part:
        """The episodes shown, in the order they were said, each with the sessions and turns it stands for."""
        for shown_id, again in self.repeats.items():  # in the order they were said, whatever the ranks' ties
            e, item = self.chosen[shown_id]
            said = sorted([e] + again, key=said_order)
            item["sessions"] = list(dict.fromkeys(x.session_id for x in said))
            item["repeats"] = [x.turn_id for x in sorted(again, key=said_order)]
        ordered = sorted(self.chosen.values(), key=lambda x: said_order(x[0]))
        text = render_episodes([e for e, _ in ordered], self.dates, self.speaker_runs)
        return Part("episodes", text, tokens.count(text), tuple(item for _, item in ordered))


def pack_episodes(recalled: Iterable[Recalled | Hit], budget: int, skip: Callable[[Episode], bool],
                  options: PackOptions = PackOptions(),
                  neighbours: Callable[[Episode], Sequence[Episode]] | None = None,
                  truncates: Callable[[str], bool] | None = None, facts: FactLines | None = None,
                  spare_facts: bool = False) -> Part:
    """Episodes in fused rank until ``budget`` is spent, shown in the order they were said (``EpisodePacker``).

    ``skip`` leaves out what the context already holds (this session's turns, the sources of shown facts);
    ``neighbours`` (when given) adds the turns around each hit after it, while they fit. Of ``options``: with
    ``fold_repeats`` a line said again in other sessions, or one whose words are at least ``near_repeats``
    alike (``near``; 1.0: identical lines only), is shown once: its item lists every session it was said
    in (``sessions``) and the turns it stands for (``repeats``), and the repeats take no budget. A long turn
    shows at most ``passages_per_turn`` of its passages (0: no limit) until every recalled item had its
    chance; then what budget is left takes more of them. An excerpt leaves out the lines the context already
    shows (an assistant's sign-off said in every answer). A ``Hit`` among ``recalled`` (``pack_memory``) goes
    to the ``facts`` block, from the same budget; with ``spare_facts``, not when the whole turns it came from
    are shown already (as a shown fact spares its turns, a shown turn spares its fact: nothing said twice).
    With ``speaker_runs``, a line said by the speaker of the line above it goes without the name
    (``lines.render_episodes``), and each line is charged what it costs where it lands.
    """
    packer = EpisodePacker(budget, skip, options, truncates)
    passages_per_turn = options.passages_per_turn
    later: list[tuple[int, Recalled]] = []  # passages of turns that already show ``passages_per_turn``
    passages_of: dict[str, int] = {}  # turn id -> its passages shown
    for rank, r in enumerate(recalled, 1):
        if packer.left < 8:
            break
        if isinstance(r, Hit):
            if facts is not None and not (spare_facts and r.fact.source and set(r.fact.source) <= packer.whole_turns()):
                packer.used += facts.take(r, packer.left)
            continue
        e = r.item
        if passages_per_turn and e.span is not None and passages_of.get(e.turn_id, 0) >= passages_per_turn:
            later.append((rank, r))
            continue
        if packer.take(e, rank, r.why, r.score, r.similarity):
            if e.span is not None:
                passages_of[e.turn_id] = passages_of.get(e.turn_id, 0) + 1
            for n in neighbours(e) if neighbours else ():
                packer.take(n, rank, f"neighbour of {e.turn_id} (#{rank})", None, None)
    for rank, r in later:  # what budget is left: more of the turns already shown
        if packer.left < 8:
            break
        packer.take(r.item, rank, r.why, r.score, r.similarity)
    return packer.part()


def pack_turns(window: Sequence[Turn], budget: int) -> list[Turn]:
    """The newest turns that fit ``budget``; the newest one alone is cut to fit rather than dropped."""
    chosen: list[Turn] = []
    left = budget
    for t in reversed(window):
        if t.tokens > left and chosen:
            break
        if t.tokens > left:
            cut = tokens.truncate(t.content, max(left, 0))
            t = Turn(t.id, t.session_id, t.user_id, t.role, cut, tokens.count(cut), t.time)
        chosen.insert(0, t)
        left -= t.tokens
    return chosen


def turns_part(turns: Sequence[Turn]) -> Part:
    """The session's turns shown, as the account lists them."""
    return Part("turns", "\n".join(f"{t.role}: {t.content}" for t in turns), sum(t.tokens for t in turns),
                tuple({"turn_id": t.id, "role": t.role, "tokens": t.tokens} for t in turns))


def pack_summary(summary: Summary, budget: int) -> Part:
    """The running summary cut to ``budget``; its items are the turns it covers."""
    text = tokens.truncate(summary.text, max(budget, 0)) if summary.text else ""
    return Part("summary", text, tokens.count(text), tuple({"turn_id": t} for t in summary.turn_ids))


def pack_documents(documents: Sequence[str], budget: int) -> Part:
    """The retriever's documents in order, while they fit ``budget``."""
    lines: list[str] = []
    for d in documents:
        if tokens.count("\n".join(lines + [d])) > budget:
            break
        lines.append(d)
    text = "\n".join(lines)
    return Part("documents", text, tokens.count(text), tuple({"text": d} for d in lines))


def messages(parts: Sequence[Part], turns: Sequence[Turn], headers: dict[str, str] = HEADERS) -> tuple[dict[str, str], ...]:
    """The chat messages: one system message per non-empty part under its header (facts, episodes, summary,
    documents), then the session's turns shown."""
    by_name = {p.name: p for p in parts}
    out = [{"role": "system", "content": headers[name] + "\n" + by_name[name].text}
           for name in ("facts", "episodes", "summary", "documents") if name in by_name and by_name[name].text]
    return tuple(out + [{"role": t.role, "content": t.content} for t in turns])


def _round(x: float | None) -> float | None:
    return None if x is None or x != x else round(float(x), 3)
