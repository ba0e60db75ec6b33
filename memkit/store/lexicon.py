"""The lexical index over facts and episodes: tantivy (BM25 with block-max WAND), beside the SQLite records.

See docs/architecture.md §2 and §6. SQLite FTS5 scores every row that shares a word with the question, so
for a user with thousands of items the lexical query cost as much as the dense one; tantivy stops scoring
what cannot reach the top k. A commit costs milliseconds, so facts are indexed when they change (rarely) and
episodes with their embedding batch (``FactStore.embed_pending``), never one commit per turn.

The index is derived: the profile (the fold of the applied events) and the episode records are the truth,
and ``FactStore`` fills a new or missing index from them. Every write deletes an item's earlier document by
its key before adding it, so writing the same item twice (a replay, two processes indexing the same
batch) leaves one document.
"""

from __future__ import annotations

import itertools
import re
import shutil
import threading
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import tantivy

from ..errors import IsolationError, StoreClosed
from .base import past_ties

# Query words that match nearly every turn and carry no topic; dropped from queries only. "user" is indexed
# with every user turn (its speaker) and starts every fact ("User prefers ..."), so it is in half the rows or
# more: BM25 gives it next to no weight, yet matching it made SQLite FTS5, the index before this one, score all
# of those rows (4 ms at p95 for one user with 5,000 facts). ("s", what "Ana's" leaves, is no such word:
# it selects possessives, a minority of rows, and carries weight.)
STOPWORDS = frozenset("""user users a about after again all am an and any are as at be been before being both but by can could did
do does doing during each few for from had has have having he her here hers herself him himself his how i if in into is
it its itself just me more most my myself no nor not now of off on once only or other our ours out over own same she
should so some such than that the their theirs them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours yourself""".split())
WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af])")


def lexical_text(text: str) -> str:
    """Text as the lexical index sees it: CJK characters become separate tokens (the tokenizer keeps runs whole)."""
    return _CJK.sub(r" \1 ", text)


# tantivy's ``en_stem`` tokenizer, built the same way: words of letters and digits, at most 40 characters,
# lowercased, Snowball English stems. A backend that scores in its own tables (PostgreSQL) indexes these
# terms, so both lexical indexes see the same words.
ANALYZER = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.stemmer("english")).build())


def stems(text: str) -> list[str]:
    """The terms ``en_stem`` indexes for ``text``, in order, repeats kept (CJK per character)."""
    return ANALYZER.analyze(lexical_text(text))


def scored_length(n: int) -> int:
    """The length BM25 scores a document of ``n`` terms with in tantivy: one byte per document, on Lucene's
    log scale (``SmallFloat.intToByte4``: exact below 24, then 4 significant bits, rounded down)."""
    if n < 24:
        return n
    m = n - 24
    shift = max(m.bit_length() - 4, 0)
    return 24 + ((m >> shift) << shift)


def query_terms(query: str) -> list[str]:
    """The words of ``query`` worth matching: lowercased, CJK per character, stopwords out, each once."""
    words = [w.lower() for w in WORD.findall(lexical_text(query))]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


PARSED = 1024  # questions whose parsed words an index keeps (all of them dropped when full)
WRITER_HEAP = 15_000_000  # bytes: tantivy's minimum per indexing thread
FILLED = "filled"  # a marker file: the index holds every item of the records it was filled from


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("owner", stored=False, tokenizer_name="raw")  # "<part>/<user's hash>": the filter
    builder.add_text_field("key", stored=True, tokenizer_name="raw")  # "<part>/<hash>/<id>": one document per item
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    return builder.build()


def _owner(part: str, owner: str) -> str:
    return f"{part}/{owner}"


class LexicalIndex:
    """BM25 over every user's current facts and episodes, one document per item, searched within one owner's
    part (``"facts"`` or ``"episodes"``) only.

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
        self._meta = None if self._folder is None else str(self._folder / "meta.json")  # changed by every commit
        self._loaded: bytes | None = None  # the commit the searcher shows (``_commit``)
        self._stale = True  # this process committed since the searcher was loaded
        # a question's words parsed (None: none worth matching): a read searches the episodes and the facts for
        # the same words, and reads repeat questions
        self._parsed: dict[str, tantivy.Query | None] = {}

    @property
    def filled(self) -> bool:
        """Whether the index was filled from the records (a new one is empty until ``FactStore`` fills it)."""
        return self._filled

    def mark_filled(self) -> None:
        self._filled = True
        if self._folder is not None:
            (self._folder / FILLED).touch()

    def change(self, owner: str, part: str, put: Sequence[tuple[str, str]], remove: Sequence[str] = ()) -> None:
        """Index ``put`` (id, text) pairs of one owner's part, replacing earlier text of the same ids, then
        remove the ``remove`` ids: one commit."""
        if not put and not remove:
            return
        with self._writer() as writer:
            for ref, text in put:
                self._add(writer, owner, part, ref, text)
            for ref in remove:
                writer.delete_documents_by_term("key", f"{_owner(part, owner)}/{ref}")

    def fill(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """Index ``(owner, part, id, text)`` rows of any owners in one commit (a new index, from the records);
        no rows, no commit."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        with self._writer() as writer:
            for owner, part, ref, text in itertools.chain([first], rows):
                self._add(writer, owner, part, ref, text)

    def rebuild(self, rows: Iterable[tuple[str, str, str, str]]) -> None:
        """Index exactly ``(owner, part, id, text)`` rows: every other document goes, and with it every file of
        the folder that held one (a forgotten user's words stay in no segment: deleting a document only marks
        it until segments merge)."""
        with self._writer() as writer:
            writer.delete_all_documents()
            for owner, part, ref, text in rows:
                self._add(writer, owner, part, ref, text)
        with self._guard, self._lock():
            index = self._open()
            index.reload()  # the searcher lets go of the old segments, or their files would be kept for it
            self._loaded = self._commit()
            writer = index.writer(WRITER_HEAP, 1)
            writer.garbage_collect_files()
            writer.wait_merging_threads()

    @staticmethod
    def _add(writer: tantivy.IndexWriter, owner: str, part: str, ref: str, text: str) -> None:
        key = f"{_owner(part, owner)}/{ref}"
        writer.delete_documents_by_term("key", key)
        writer.add_document(tantivy.Document(owner=_owner(part, owner), key=key, body=lexical_text(text)))

    def drop(self, owner: str, parts: Sequence[str]) -> None:
        """Forget every item of one owner's ``parts``."""
        with self._writer() as writer:
            for part in parts:
                writer.delete_documents_by_term("owner", _owner(part, owner))

    def search(self, owner: str, part: str, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 over one owner's part: ``(id, score)``, best first."""
        index = self._open()
        words = self._words(index, query)
        if words is None or k <= 0:
            return []
        scope = _owner(part, owner)
        self._reload(index)
        # the owner is a filter, not a match: scored, it would add its own idf, which depends on how many items
        # of the index are this owner's, to every hit
        only = tantivy.Query.const_score_query(tantivy.Query.term_query(self._schema, "owner", scope), 0.0)
        searcher = index.searcher()
        question = tantivy.Query.boolean_query([(tantivy.Occur.Must, only), (tantivy.Occur.Must, words)])
        hits = past_ties(lambda m: searcher.search(question, m).hits, k, lambda hit: hit[0])
        found = []
        for score, address in hits:
            key = searcher.doc(address)["key"][0]
            if not key.startswith(scope + "/"):  # an id may hold "/": the scope is the prefix
                raise IsolationError("the lexical index returned another user's item")
            found.append((key[len(scope) + 1:], float(score)))
        # equal scores (the same words) come back in segment order, which is not the order of writing and
        # changes with tantivy's background merges: ties go to the earlier id (episodes: the earlier turn),
        # among all of them (past_ties), so a read ranks the same every time
        found.sort(key=lambda hit: (-hit[1], len(hit[0]), hit[0]))
        return found[:k]

    def _words(self, index: tantivy.Index, query: str) -> tantivy.Query | None:
        """``query``'s words worth matching (``query_terms``) as a query of the body, or None if it has none."""
        words = self._parsed.get(query, False)
        if words is False:
            terms = query_terms(query)
            # the field's tokenizer stems them as it did the items
            words = index.parse_query(" ".join(terms), ["body"]) if terms else None
            if len(self._parsed) >= PARSED:
                self._parsed.clear()
            self._parsed[query] = words
        return words

    def _reload(self, index: tantivy.Index) -> None:
        """Load the last commit into the searcher, when there is one it does not show yet: this process's, or
        another's that shares the folder (its ``meta.json`` changed), not only after tantivy's own delay. A
        reload with nothing new still costs about 0.15 ms, twice a read; reading ``meta.json``, microseconds."""
        commit = self._commit()
        if self._stale or commit != self._loaded:
            self._stale = False
            index.reload()
            self._loaded = commit

    def _commit(self) -> bytes | None:
        """What tells the folder's last commit apart: ``meta.json`` itself, which tantivy rewrites at every commit
        with a greater ``opstamp`` (its inode and time can repeat within a clock tick); None in memory."""
        if self._meta is None:
            return None
        try:
            with open(self._meta, "rb", buffering=0) as f:  # unbuffered: one read of a small file
                return f.read()
        except FileNotFoundError:
            return None

    def _open(self) -> tantivy.Index:
        if self._index is None:
            raise StoreClosed("this lexical index was closed; open a new store")
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
            # no reload here: the next search reloads (``_reload``), so one here would only cost each write
            # ~20 ms that the next search would not have paid
            self._stale = True

    def close(self) -> None:
        with self._guard:
            self._index = None
