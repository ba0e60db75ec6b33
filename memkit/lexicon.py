"""The lexical index over facts: tantivy (BM25 with block-max WAND), beside the SQLite records.

See docs/architecture.md §2 and §6. FTS5 scores every fact that shares a word with the question, so for a
user with thousands of facts the lexical query cost more than the dense one; tantivy stops scoring what
cannot reach the top k. Facts are written rarely and read on every turn, so a commit per write is affordable
here; episodes, written every turn in the same transaction as their record, stay in FTS5.

The index is derived: the profile (the fold of the applied events) is the truth, and ``FactStore`` fills a
new or missing index from it. Every write deletes a fact's earlier document by its key before adding it,
so writing the same fact twice (a replay, two processes filling at once) leaves one document.
"""

from __future__ import annotations

import itertools
import shutil
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import tantivy

from .errors import IsolationError, StoreClosed
from .records import lexical_text, query_terms

WRITER_HEAP = 15_000_000  # bytes: tantivy's minimum per indexing thread
FILLED = "filled"  # a marker file: the index holds every fact of the profile it was filled from


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("owner", stored=False, tokenizer_name="raw")  # the user's hash: the filter
    builder.add_text_field("key", stored=True, tokenizer_name="raw")  # "<owner>/<fact id>": one document per fact
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    return builder.build()


class FactIndex:
    """BM25 over every user's current facts, one document per fact, searched within one owner only.

    ``path`` None keeps it in memory (an ephemeral store); otherwise a folder, shared by the processes that
    share the records file: ``lock`` excludes their writers from each other (tantivy allows one at a time).
    """

    def __init__(self, path: str | Path | None = None,
                 lock: Callable[[], AbstractContextManager[None]] = nullcontext) -> None:
        self._schema = _schema()
        self._lock = lock
        self._guard = threading.Lock()
        self._folder = None if path is None else Path(path)
        if self._folder is None:
            self._index: tantivy.Index | None = tantivy.Index(self._schema)
        else:
            self._folder.mkdir(parents=True, exist_ok=True)
            with self._guard, self._lock():
                try:
                    self._index = tantivy.Index(self._schema, path=str(self._folder), reuse=True)
                except ValueError:  # written by another tantivy or schema, or damaged: derived, so made again
                    shutil.rmtree(self._folder)
                    self._folder.mkdir(parents=True)
                    self._index = tantivy.Index(self._schema, path=str(self._folder), reuse=True)
        self._filled = self._folder is not None and (self._folder / FILLED).exists()

    @property
    def filled(self) -> bool:
        """Whether the index was filled from the profile (a new one is empty until ``FactStore`` fills it)."""
        return self._filled

    def mark_filled(self) -> None:
        self._filled = True
        if self._folder is not None:
            (self._folder / FILLED).touch()

    def change(self, owner: str, put: Sequence[tuple[str, str]], remove: Sequence[str] = ()) -> None:
        """Index ``put`` (fact id, text) pairs of one owner, replacing earlier text of the same ids, then remove
        the ``remove`` ids: one commit."""
        if not put and not remove:
            return
        with self._writer() as writer:
            for ref, text in put:
                self._add(writer, owner, ref, text)
            for ref in remove:
                writer.delete_documents_by_term("key", f"{owner}/{ref}")

    def fill(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Index ``(owner, fact id, text)`` rows of any owners in one commit (a new index, from the profile);
        no rows, no commit."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        with self._writer() as writer:
            for owner, ref, text in itertools.chain([first], rows):
                self._add(writer, owner, ref, text)

    @staticmethod
    def _add(writer: tantivy.IndexWriter, owner: str, ref: str, text: str) -> None:
        key = f"{owner}/{ref}"
        writer.delete_documents_by_term("key", key)
        writer.add_document(tantivy.Document(owner=owner, key=key, body=lexical_text(text)))

    def drop(self, owner: str) -> None:
        """Forget every fact of one owner."""
        with self._writer() as writer:
            writer.delete_documents_by_term("owner", owner)

    def search(self, owner: str, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 over one owner's facts: ``(fact id, score)``, best first."""
        index = self._open()
        terms = query_terms(query)
        if not terms or k <= 0:
            return []
        words = index.parse_query(" ".join(terms), ["body"])  # the field's tokenizer stems them as it did the facts
        only = tantivy.Query.term_query(self._schema, "owner", owner)
        searcher = index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, only), (tantivy.Occur.Must, words)]), k).hits
        found = []
        for score, address in hits:
            row_owner, _, ref = searcher.doc(address)["key"][0].partition("/")
            if row_owner != owner:
                raise IsolationError("the fact index returned another user's fact")
            found.append((ref, float(score)))
        return found

    def _open(self) -> tantivy.Index:
        if self._index is None:
            raise StoreClosed("this fact index was closed; open a new store")
        return self._index

    @contextmanager
    def _writer(self) -> Iterator[tantivy.IndexWriter]:
        """One writer for one change, committed and released before the lock is: a writer holds tantivy's
        lock on the folder, which a writer of another process sharing it must be able to take next."""
        with self._guard, self._lock():
            index = self._open()
            writer = index.writer(WRITER_HEAP, 1)
            try:
                yield writer
                writer.commit()
            except BaseException:
                writer.rollback()
                raise
            finally:
                writer.wait_merging_threads()
            index.reload()

    def close(self) -> None:
        with self._guard:
            self._index = None
