"""PostgreSQL as the vector and text index of ``FactStore.postgres(url)``: pgvector for the dense channel and
PostgreSQL's full-text search for the lexical one, in the same database as the records and the event log, so
one write is one transaction (docs/architecture.md §8).

The dense query is exact within the owner: it reads the owner's rows by the primary key and orders them by
cosine distance. pgvector's HNSW index is not used, on purpose: the pgvector that ships here (0.6) has no
iterative index scan, so an HNSW scan filtered by owner returns at most ``hnsw.ef_search`` (40) items of
*everyone's* before the filter, and a user would get fewer than the items asked for, or none. A user holds
hundreds to thousands of items; an exact scan of them costs milliseconds (``memkit bench-scale --backend
postgres``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from ..models import embed as _embed
from ..errors import DimensionMismatch, EmbedderMismatch
from collections import Counter

from .base import PARTS
from .lexicon import query_terms, scored_length, stems
from .sql import Database

VECTOR_STEPS = (
    """CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
CREATE TABLE vector_space (dimension INTEGER NOT NULL, embedder TEXT NOT NULL);
CREATE TABLE items (owner TEXT NOT NULL, part TEXT NOT NULL, id TEXT NOT NULL, vector public.vector NOT NULL,
  PRIMARY KEY (owner, part, id))""",
)
TEXT_STEPS = (
    """CREATE TABLE lexemes (owner TEXT NOT NULL, part TEXT NOT NULL, id TEXT NOT NULL, tsv tsvector NOT NULL,
  PRIMARY KEY (owner, part, id));
CREATE INDEX lexemes_words ON lexemes USING GIN (tsv)""",
    # BM25 in place of ts_rank_cd (docs/measurements.md, "PostgreSQL backend"): postings and lengths per item; the
    # index is derived, so a database of the first step is filled again from the records when it opens
    """DROP TABLE lexemes;
CREATE TABLE postings (owner TEXT NOT NULL, part TEXT NOT NULL, term TEXT NOT NULL, id TEXT NOT NULL,
  tf INTEGER NOT NULL, PRIMARY KEY (owner, part, term, id));
CREATE TABLE doclen (owner TEXT NOT NULL, part TEXT NOT NULL, id TEXT NOT NULL, len INTEGER NOT NULL,
  PRIMARY KEY (owner, part, id));
CREATE TABLE text_filled (filled INTEGER NOT NULL)""",
    # the terms of tantivy's en_stem (lexicon.stems) in place of to_tsvector's: the same words as the default
    # backend's index (docs/measurements.md, "PostgreSQL backend"); filled again from the records at open
    """DELETE FROM postings;
DELETE FROM doclen;
DELETE FROM text_filled""",
)
K1, B = 1.2, 0.75  # BM25's constants, as tantivy (and Lucene) use them


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectorIndex:
    """Every user's item vectors in one pgvector table, searched exactly within one owner (cosine)."""


    def __init__(self, db: Database, embedder: Any) -> None:
        self.db, self.embedder = db, embedder
        self.dimension = _embed.embedder_dimension(embedder)
        db.migrate("vectors", VECTOR_STEPS)
        ident = _embed.identity(embedder)
        with db.transaction() as run:
            space = run("SELECT dimension, embedder FROM vector_space").fetchall()
            if not space:
                run("INSERT INTO vector_space (dimension, embedder) VALUES (?, ?)", (self.dimension, ident))
        if space and space[0][0] != self.dimension:
            raise DimensionMismatch(
                f"this database's vectors were embedded by {space[0][1]} with dimension {space[0][0]}, but this "
                f"store's embedder {ident} gives {self.dimension}. Embeddings of different models cannot share an "
                "index. To migrate, open the new embedder's store under another namespace "
                "(FactStore.postgres(url, namespace='v2')) and call old.copy_user(user_id, new).")
        # a database made before memkit kept the identity holds "name:model" there, which cannot be compared
        if space and space[0][1].startswith("[") and space[0][1] != ident:
            raise EmbedderMismatch(
                f"this database's vectors were embedded by {space[0][1]}, but this store's embedder is {ident} "
                "(another model, or another window: their vectors cannot be compared). Open it with the embedder "
                "it was written with; to move, copy_user(user_id, new) into a store under another namespace.")

    def put(self, owner: str, user_id: str, part: str, ids: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        with self.db.transaction() as run:
            for item_id, vector in zip(ids, vectors):
                run("INSERT INTO items (owner, part, id, vector) VALUES (?, ?, ?, ?::public.vector) "
                    "ON CONFLICT (owner, part, id) DO UPDATE SET vector = excluded.vector",
                    (owner, part, item_id, _literal(vector)))

    def remove(self, owner: str, user_id: str, part: str, ids: Sequence[str]) -> None:
        with self.db.transaction() as run:
            for item_id in ids:
                run("DELETE FROM items WHERE owner = ? AND part = ? AND id = ?", (owner, part, item_id))

    def nearest(self, owner: str, user_id: str, vector: Sequence[float], n: int) -> list[tuple[str, str, float]]:
        if n <= 0:
            return []
        rows = self.db.rows("SELECT part, id, vector OPERATOR(public.<=>) ?::public.vector AS d FROM items "
                            "WHERE owner = ? ORDER BY d, part, length(id), id LIMIT ?", (_literal(vector), owner, n))
        return [(part, item_id, 1.0 - float(d)) for part, item_id, d in rows]

    def warm(self, owner: str, user_id: str) -> None:
        self.db.rows("SELECT count(*) FROM items WHERE owner = ?", (owner,))

    def drop(self, owner: str, user_id: str) -> None:
        self.db.execute("DELETE FROM items WHERE owner = ?", (owner,))

    def close(self) -> None:
        self.db.close()


class PgTextIndex:
    """BM25 over every user's items in PostgreSQL, within one owner's part: the terms, counts and lengths of
    tantivy's ``en_stem`` (``lexicon.stems``, as the default backend indexes them), idf and the average length
    from all of the owner's items (facts and episodes, as one tantivy index counts them).

    PostgreSQL's own ranking (``ts_rank_cd``) is not BM25 and recalled less than tantivy on the dev splits
    (docs/measurements.md, "PostgreSQL backend"); this is BM25 written in SQL over a postings table."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.migrate("text", TEXT_STEPS)

    @property
    def filled(self) -> bool:
        """Whether the index was filled from the records (a new one is empty until ``FactStore`` fills it)."""
        return bool(self.db.rows("SELECT 1 FROM text_filled LIMIT 1"))

    def mark_filled(self) -> None:
        self.db.execute("INSERT INTO text_filled (filled) VALUES (1)")

    def fill(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        with self.db.transaction() as run:
            for owner, part, ref, text in rows:
                self._put(run, owner, part, ref, text)

    def change(self, owner: str, part: str, put: Sequence[tuple[str, str]], remove: Sequence[str] = ()) -> None:
        if not put and not remove:
            return
        with self.db.transaction() as run:
            for ref, text in put:
                self._put(run, owner, part, ref, text)
            for ref in remove:
                self._remove(run, owner, part, ref)

    @staticmethod
    def _remove(run: Any, owner: str, part: str, ref: str) -> None:
        run("DELETE FROM postings WHERE owner = ? AND part = ? AND id = ?", (owner, part, ref))
        run("DELETE FROM doclen WHERE owner = ? AND part = ? AND id = ?", (owner, part, ref))

    def _put(self, run: Any, owner: str, part: str, ref: str, text: str) -> None:
        terms = stems(text)
        self._remove(run, owner, part, ref)  # writing an item again (a replay) leaves one copy
        counts = Counter(terms)
        run("INSERT INTO postings (owner, part, term, id, tf) SELECT ?, ?, term, ?, tf "
            "FROM unnest(?::text[], ?::integer[]) AS t(term, tf)", (owner, part, ref, list(counts), list(counts.values())))
        run("INSERT INTO doclen (owner, part, id, len) VALUES (?, ?, ?, ?)", (owner, part, ref, max(len(terms), 1)))

    def search(self, owner: str, part: str, query: str, k: int) -> list[tuple[str, float]]:
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        # four plain reads by key, scored here: one statement joining them all was planned badly once
        # PostgreSQL switched to a generic plan (minutes for one query on the dev split)
        words = list(dict.fromkeys(stems(" ".join(terms))))
        if not words:
            return []
        # the statistics span the owner's parts, as tantivy's span its one index (docs/measurements.md, "PostgreSQL backend")
        n, avgdl = self.db.rows("SELECT count(*), avg(len) FROM doclen WHERE owner = ?", (owner,))[0]
        if not n:
            return []
        df = dict(self.db.rows("SELECT term, count(*) FROM postings WHERE owner = ? AND part = ANY(?) AND term = ANY(?) "
                               "GROUP BY term", (owner, list(PARTS), words)))
        rows = self.db.rows("SELECT p.term, p.id, p.tf, d.len FROM postings p JOIN doclen d ON d.owner = p.owner "
                            "AND d.part = p.part AND d.id = p.id WHERE p.owner = ? AND p.part = ? AND p.term = ANY(?)",
                            (owner, part, words))
        avgdl = float(avgdl)
        scores: dict[str, float] = {}
        for term, item_id, tf, length in rows:
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            norm = K1 * (1 - B + B * scored_length(length) / avgdl)  # the length as tantivy keeps it, the mean exact
            scores[item_id] = scores.get(item_id, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        # ties go to the earlier id, as in tantivy
        return sorted(scores.items(), key=lambda hit: (-hit[1], len(hit[0]), hit[0]))[:k]

    def drop(self, owner: str, parts: Sequence[str]) -> None:
        with self.db.transaction() as run:
            for part in parts:
                run("DELETE FROM postings WHERE owner = ? AND part = ?", (owner, part))
                run("DELETE FROM doclen WHERE owner = ? AND part = ?", (owner, part))

    def close(self) -> None:
        self.db.close()
