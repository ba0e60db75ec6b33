"""A bench run's cache warm-up: before its jobs start, every text the run's memories will embed that the
embedding cache lacks (each distinct turn text or passage and each question, across all conversations),
sorted by length so the encoder's batches are full, and split into shards the run's workers embed
(``execution.run_jobs``). A job then finds its vectors in the cache."""

from __future__ import annotations

from typing import Any, Sequence

from .spec import Job


def texts_to_embed(jobs: Sequence[Job], passage_tokens: int, dense_passages: int = 0) -> list[str]:
    """What the run's memories will embed, as the stores will ask for it: each distinct turn text (whole for the
    raw-turn baselines, as passages for two-layer memory, the first ``dense_passages`` of a turn's, 0: all) and
    each probe question, longest last."""
    from ..store.base import dense_items
    from ..strategies import embeds_episodes
    from ..types import Episode
    from .. import validate

    texts: dict[str, None] = {}
    for conv, name, _ in jobs:
        sizes = embeds_episodes(name, passage_tokens)
        if sizes is None:
            continue
        for s in conv.sessions:
            for t in s.turns:
                e = Episode("", "", s.id, t.id, t.speaker or t.role, t.role, validate.content(t.content), 0.0, 0,
                            passage_tokens=sizes, dense_passages=dense_passages)
                texts.update((text, None) for _, text in dense_items(e))
        texts.update((validate.query(p.question), None) for p in conv.probes)
    return sorted(texts, key=len)


def shards(jobs: Sequence[Job], spec: Any, options: dict[str, Any], n: int) -> list[list[str]]:
    """The texts of ``jobs`` that ``spec``'s cache lacks, their memories built with ``options`` (the run's
    ``passage_tokens`` and ``dense_passages``), in ``n`` shards (fewer for fewer texts), interleaved so that
    each has long and short texts and the workers end together (``CacheTooSmall`` warns when the cache cannot
    keep them all)."""
    from ..models.embed import shared_embedder
    from ..store.embed_cache import cached
    from ..store.passages import PASSAGE_TOKENS

    wanted = texts_to_embed(jobs, options.get("passage_tokens", PASSAGE_TOKENS), options.get("dense_passages", 0))
    texts = cached(shared_embedder(spec.embedder), spec.embed_cache).missing(wanted)
    n = min(n, len(texts))
    return [texts[i::n] for i in range(n)]


def warm_job(spec: Any, texts: Sequence[str], threads: int | dict[str, int] = 0) -> int:
    """Embed ``texts`` into the spec's cache (a worker's share of the warm-up); how many were embedded."""
    from ..models.embed import shared_embedder
    from ..store.embed_cache import cached
    from .cores import enter_worker

    enter_worker(threads, spec.embedder)
    c = cached(shared_embedder(spec.embedder), spec.embed_cache)
    for start in range(0, len(texts), 1024):
        c(list(texts[start:start + 1024]))
    return c.embedded


__all__ = ["shards", "texts_to_embed", "warm_job"]
