"""Whether a store's parts agree: checked when an on-disk store opens (``verify``), in full by ``memkit store
check PATH``, and mended where the records allow by ``memkit store repair PATH`` (docs/troubleshooting.md).

The records (episodes, the profile, the event log) are the truth; the vector index and the lexical index derive
from them. A derived part that is missing or behind is rebuilt from the records; records that are missing or
damaged while vectors remain cannot be rebuilt from vectors, and are never read as an empty store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import StoreCorrupt
from ..types import Fact, current
from .base import Capability, capabilities, dense_items, text_rows
from .lexicon import LexicalIndex
from .records import MIGRATIONS

if TYPE_CHECKING:
    from .composed import FactStore

REPAIR = "run `memkit store check {path}` to see what disagrees and `memkit store repair {path}` to rebuild what can be"


@dataclass(frozen=True)
class Finding:
    """One disagreement: the part, what is wrong, and whether ``repair`` can mend it from the records."""

    part: str
    problem: str
    repairable: bool

    def __str__(self) -> str:
        return f"{self.part}: {self.problem} ({'repairable' if self.repairable else 'cannot be rebuilt'})"


def _owners_in_records(store: "FactStore", embedded: bool = False) -> set[str]:
    """The owners the records hold anything of (with ``embedded``: only those with items that should have
    vectors, embedded episodes or current facts)."""
    sql = "SELECT DISTINCT owner FROM episodes" + (" WHERE embedded = 1" if embedded else "")
    owners = {r[0] for r in store.records.db.rows(sql)}
    owners |= {r[0] for r in store.log.db.rows("SELECT DISTINCT owner FROM profile")}
    if not embedded:
        owners |= {r[0] for r in store.log.db.rows("SELECT DISTINCT owner FROM events")}
    return owners


def _user_of(store: "FactStore", owner: str) -> str:
    """The user id the records give an owner (its episodes, else its events, else a fact of its profile)."""
    for db, sql in ((store.records.db, "SELECT user_id FROM episodes WHERE owner = ? LIMIT 1"),
                    (store.log.db, "SELECT user_id FROM events WHERE owner = ? LIMIT 1")):
        rows = db.rows(sql, (owner,))
        if rows:
            return rows[0][0]
    return json.loads(store.log.db.rows("SELECT body FROM profile WHERE owner = ? LIMIT 1", (owner,))[0][0])["user_id"]


def _vector_owners(store: "FactStore") -> dict[str, str] | None:
    """``owner -> user_id`` of the users with a collection of this namespace, or None when the vector index
    is not Chroma's (PostgreSQL keeps vectors and records in one database, written in one transaction)."""
    if Capability.COLLECTIONS not in capabilities(store.vectors):
        return None
    return store.vectors.owners()  # type: ignore[attr-defined]


def findings(store: "FactStore", full: bool = True) -> list[Finding]:
    """What disagrees between the records and the indexes. Without ``full`` (when a store opens): only what
    would make it lie, records empty while vectors remain, or vectors gone while the records say they exist."""
    found: list[Finding] = []
    vectors = _vector_owners(store)
    if vectors is None:
        return found
    have = _owners_in_records(store)
    if not have and any(store.vectors.holds(owner) for owner in vectors):  # type: ignore[attr-defined]
        return [Finding("records", f"the records file {store.records.path} holds nothing, but the vector index holds "
                        f"{len(vectors)} users' vectors: the records were deleted, emptied or replaced. Restore the "
                        "file from a backup (vectors alone cannot give back the text)", False)]
    found += _profile_findings(store, vectors, full)
    embedded = _owners_in_records(store, embedded=True)
    # the index read again, after the records: an item is marked embedded after its vector is written, so a
    # write by another process between the two reads is not taken for a lost index
    missing = embedded - set(_vector_owners(store) or {})
    if missing and (full or len(missing) == len(embedded)):
        found.append(Finding("vectors", f"{len(missing)} of {len(embedded)} users with embedded items have no "
                             "vectors (the vector index was deleted or replaced): re-embedded from the records", True))
    if full:
        behind = off_count(store, embedded & set(vectors))
        if behind:
            found.append(Finding("vectors", f"{len(behind)} users' vectors do not match their records in number (a "
                                 "crash, or a write-ahead log lost): made again from the records", True))
        orphans = set(vectors) - have
        if orphans:
            found.append(Finding("vectors", f"{len(orphans)} users' vectors have no records (a write-ahead log lost "
                                 "after a crash?): dropped", True))
        wanted = store.records.version
        if wanted != len(MIGRATIONS[store.records.db.dialect.name]):
            found.append(Finding("records", f"schema version {wanted}, expected "
                                 f"{len(MIGRATIONS[store.records.db.dialect.name])}", False))
    return found


def _profile_findings(store: "FactStore", vectors: dict[str, str], full: bool) -> list[Finding]:
    """Whether the profile (beside the event log, in the records' database) holds the facts the vector index
    has vectors of. A fact vector with no profile row means the profile lost it: given back from the log when
    the log's fold still holds it, else (its events lost too, or a fact written by ``upsert``, which logs
    nothing) it cannot be rebuilt, and a repair that re-embedded from the profile would drop its vector."""
    if not full:  # at open, only the cheap case: no fact at all in the profile while facts have vectors
        if store.log.db.rows("SELECT 1 FROM profile LIMIT 1"):
            return []
        # the first user with fact vectors is enough to refuse: an open does not read every user's index
        first = next((o for o in sorted(vectors) if store.vectors.fact_ids(o)), None)  # type: ignore[attr-defined]
        if first is None or _written_meanwhile(store, vectors[first]):
            return []
        return [Finding("log", f"the event log and profile hold no fact, but the vector index holds facts (of user "
                        f"{vectors[first]!r}, and maybe others): the log was deleted, emptied or replaced. Restore "
                        "it from a backup (the records alone cannot give back facts)", False)]
    lost, behind = _lost_facts(store, vectors)
    found = []
    if lost:
        found.append(Finding("log", f"{len(lost)} users have facts in the vector index that neither the profile "
                             "nor the event log holds (the log lost events: its file or database replaced, or its "
                             "end lost). Restore it from a backup (the records alone cannot give back facts)", False))
    if behind:
        found.append(Finding("profile", f"{len(behind)} users' profile lacks facts their event log holds: given back "
                             "from the log", True))
    return found


def _written_meanwhile(store: "FactStore", user_id: str) -> bool:
    """Whether the profile holds a fact once ``user_id``'s writers are done. A store in another process sharing
    the vector index and the log writes a fact's vector before its profile row, under the user's write lock: an
    open that looked between the two is asked again under that lock, when the write is complete."""
    with store.user_lock(user_id):
        return bool(store.log.db.rows("SELECT 1 FROM profile LIMIT 1"))


def _lost_facts(store: "FactStore", vectors: dict[str, str]) -> tuple[list[str], dict[str, list[Fact]]]:
    """The owners with fact vectors that no record holds, and per owner the current facts of its log's fold
    that its profile lacks though the vector index has them."""
    lost, behind = [], {}
    for owner in sorted(vectors):
        held = {r[0] for r in store.log.db.rows("SELECT fact_id FROM profile WHERE owner = ?", (owner,))}
        missing = store.vectors.fact_ids(owner) - held  # type: ignore[attr-defined]
        if not missing:
            continue
        folded = {f.id: f for f in current(store.log.folded(owner))}
        if missing - set(folded):
            lost.append(owner)
        else:
            behind[owner] = [folded[i] for i in sorted(missing)]
    return lost, behind


def off_count(store: "FactStore", owners: set[str]) -> set[str]:
    """The owners whose vector count differs from what their records give: current facts plus the passages of
    every embedded episode that have a vector."""
    off = set()
    for owner in sorted(owners):
        facts = store.log.db.rows("SELECT COUNT(*) FROM profile WHERE owner = ?", (owner,))[0][0]
        user_id = _user_of(store, owner)
        pending = {e.id for e in store.records.episodes(owner, user_id, pending=True)}
        episodes = store.records.episodes(owner, user_id)
        wanted = facts + sum(len(dense_items(e)) for e in episodes if e.id not in pending)
        if store.vectors.count(owner) != wanted:  # type: ignore[attr-defined]
            off.add(owner)
    return off


def verify(store: "FactStore") -> None:
    """``StoreCorrupt`` when an opening store's parts disagree in a way that would make it lie."""
    if store.records.path == ":memory:":
        return
    found = findings(store, full=False)
    if found:
        raise StoreCorrupt(f"the store at {store.records.path} is damaged: {'; '.join(map(str, found))}. "
                           + REPAIR.format(path=_folder(store)), part=found[0].part)


def repair(store: "FactStore") -> list[str]:
    """Mend what the records allow: vectors re-embedded for users who have none, vectors without records dropped,
    the lexical index written anew from the records. Returns what was done; ``StoreCorrupt`` for what cannot be."""
    done = []
    unrepairable = [f for f in findings(store) if not f.repairable]
    if unrepairable:
        raise StoreCorrupt("cannot repair: " + "; ".join(map(str, unrepairable)))
    vectors = _vector_owners(store) or {}
    for owner, facts in _lost_facts(store, vectors)[1].items():  # first: the vectors of facts come from the profile
        store.log.put_profile(owner, facts)
        done.append(f"gave back {len(facts)} facts of user {owner[:12]} to the profile from the event log")
    have = _owners_in_records(store)
    embedded = _owners_in_records(store, embedded=True)
    for owner in sorted((embedded - set(vectors)) | off_count(store, embedded & set(vectors))):
        user_id = _user_of(store, owner)
        store.vectors.drop(owner, user_id)
        _reembed(store, owner, user_id)
        done.append(f"re-embedded the items of user {owner[:12]}")
    for owner, user_id in sorted(vectors.items()):
        if owner not in have:
            store.vectors.drop(owner, user_id)
            done.append(f"dropped the vectors of {owner[:12]}, which had no records")
    if isinstance(store.lexicon, LexicalIndex):
        store.lexicon.rebuild(text_rows(store.records, store.log))
        done.append("wrote the lexical index anew from the records")
    return done


def _reembed(store: "FactStore", owner: str, user_id: str) -> None:
    """A user's vectors made again from the records: the current facts, then every episode."""
    store.records.db.execute("UPDATE episodes SET embedded = 0 WHERE owner = ?", (owner,))
    facts = store.log.profile(owner, user_id)
    if facts:
        store.vectors.put(owner, user_id, "facts", [f.id for f in facts], store.embedder([f.text for f in facts]))
    store.archive.embed_pending(owner, user_id, None)


def _folder(store: "FactStore") -> Any:
    from pathlib import Path

    return Path(store.records.path).parent


def set_aside(folder: Any) -> Any:
    """Move a persistent store's damaged vector index (``chroma.sqlite3`` and its index folders) into a folder of
    its own beside it, kept for inspection, so a new one can be written from the records; returns that folder."""
    import shutil
    import time
    from pathlib import Path

    folder = Path(folder)
    aside = folder / f"damaged-vectors-{time.strftime('%Y%m%d-%H%M%S')}"
    aside.mkdir()
    for p in folder.iterdir():
        if p.name.startswith("chroma.sqlite3") or (p.is_dir() and len(p.name) == 36 and p.name.count("-") == 4):
            shutil.move(str(p), aside / p.name)
    return aside
