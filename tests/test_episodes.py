"""Episodes and hybrid recall against real Chroma (in-process, on disk, `chroma run`) and a real tantivy index."""

from dataclasses import replace

import chromadb
import pytest

from conftest import open_store
from memkit import FactStore, Memory, ReadOptions
from memkit.models import tokens
from memkit import errors as memkit_errors
from memkit.models.embed import MiniLMEmbedder
from memkit.eval.data import DSession, DTurn, Conversation, Probe
from memkit.eval.runner import run
from memkit.read.lines import line_cost
from memkit.read.recall import RecallOptions, fuse, recall_episodes
from memkit.types import Episode, Fact, reproducible_ids


def ep(user, text, session="s1", speaker="Caroline", turn=None):
    return Episode("", user, session, turn or f"{session}:{abs(hash(text)) % 1000}", speaker, "user", text, 1.7e9)


def test_an_episode_is_searchable_at_once_both_ways_a_read_indexes_it_first(store):
    stored = store.add_episode("u1", ep("u1", "I adopted a tabby kitten from the shelter."))
    assert stored.id and stored.pos == 0
    assert store.records.count_episodes(store.owner("u1"), pending=True) == 1  # recorded, not yet embedded
    assert [i for i, _ in store.lexical("u1", "episodes", "kitten shelter?", 5)] == [stored.id]
    assert store.records.count_episodes(store.owner("u1"), pending=True) == 0  # the read embedded and indexed it
    vec = store.embed_query("new pet cat")
    assert [i for i, _ in store.dense("u1", vec, {"episodes": 5})["episodes"]] == [stored.id]
    again = store.add_episode("u1", ep("u1", "The kitten sleeps on my keyboard.", turn="s1:9"))
    assert [i for i, _ in store.dense("u1", vec, {"episodes": 5})["episodes"]][:2] in ([stored.id, again.id],
                                                                                       [again.id, stored.id])


def test_a_reader_leaves_its_own_sessions_pending_turns_and_indexes_the_others(store):
    mine = store.add_episode("u", ep("u", "My cello lesson moved to Thursday.", session="now"))
    other = store.add_episode("u", ep("u", "The cello teacher is called Ines.", session="before"))
    store.warm("u", session="now")  # what opening the session "now" starts in the background
    assert [e.id for e in store.records.episodes(store.owner("u"), "u", pending=True)] == [mine.id]  # left pending
    assert [i for i, _ in store.lexical("u", "episodes", "cello", 5, session="now")] == [other.id]
    vec = store.embed_query("cello lesson")
    assert [i for i, _ in store.dense("u", vec, {"episodes": 5}, session="now")["episodes"]] == [other.id]
    assert sorted(i for i, _ in store.lexical("u", "episodes", "cello", 5)) == sorted([mine.id, other.id])
    assert store.records.count_episodes(store.owner("u"), pending=True) == 0


def test_episodes_never_cross_users(store):
    for user in ("alice", "bob"):
        for text in ("My sister lives in Portland.", "I play the violin every night."):
            store.add_episode(user, ep(user, f"{text} ({user})"))
    vec = store.embed_query("violin Portland sister")
    for user in ("alice", "bob"):
        for r in recall_episodes(store, user, "violin Portland sister", store.dense(user, vec, {"episodes": 10})["episodes"]):
            assert r.item.user_id == user and user in r.item.content
    assert store.lexical("carol", "episodes", "violin", 5) == []
    assert store.dense("carol", vec, {"episodes": 5}) == {"episodes": []}


def test_observed_turns_survive_a_restart_before_their_embedding(tmp_path, request, embedder):
    s = open_store("persistent", tmp_path, request, embedder, namespace="restart")
    m = Memory(store=s)
    m.observe("u", "s1", "user", "My starter is named Bubbles and I feed it every morning.")
    s.close()  # no end_session: the embedding batch never ran
    s2 = open_store("persistent", tmp_path, request, embedder, namespace="restart")
    ctx = Memory(store=s2).context("u", "s2", "What is the sourdough starter called?", budget=200)
    assert "Bubbles" in ctx.text
    s2.close()


def test_a_read_in_pages_finds_what_a_read_at_once_finds(store):
    for i, text in enumerate(["I bake sourdough on Sundays.", "My sourdough starter is called Bubbles.",
                              "We hiked near the lake.", "Sourdough needs a warm kitchen.", "I sold my bike."]):
        store.add_episode("u", ep("u", text, turn=f"s1:{i}"))
    dense = store.dense("u", store.embed_query("sourdough starter"), {"episodes": 10})["episodes"]
    at_once = [(r.item.id, r.why) for r in recall_episodes(store, "u", "sourdough starter", dense)]
    for page in (1, 2, 3):
        assert [(r.item.id, r.why) for r in recall_episodes(store, "u", "sourdough starter", dense, page=page)] == at_once
    assert len(at_once) == 5


def test_tied_lexical_hits_rank_by_id_whatever_segment_holds_them(store):
    ids = []
    for i in range(6):
        ids.append(store.add_episode("u", ep("u", "We drank mint tea.", turn=f"s1:{i}")).id)
        store.embed_pending("u")  # a commit each: six segments, until tantivy merges them
    assert [i for i, _ in store.lexical("u", "episodes", "mint tea", 3)] == ids[:3]
    assert [i for i, _ in store.lexical("u", "episodes", "mint tea", 10)] == ids


def test_more_tied_hits_than_an_index_reads_past_its_cut_still_rank_by_id(store):
    # 40 turns with the same words, each committed alone (segments that tantivy merges as it likes, a graph
    # built in steps): past the first 13 an index's own order decides which tied items it returns
    ids = []
    for i in range(40):
        ids.append(store.add_episode("u", ep("u", "Tell me more!", session=f"s{i:02d}", turn=f"s{i:02d}:1")).id)
        store.embed_pending("u")
    first = sorted(ids, key=lambda i: (len(i), i))
    assert [i for i, _ in store.lexical("u", "episodes", "tell me more", 3)] == first[:3]
    vec = store.embed_query("Tell me more!")
    assert [i for i, _ in store.dense("u", vec, {"episodes": 3})["episodes"]] == first[:3]


def test_fusion_keeps_each_channels_rank_and_prefers_agreement():
    fused = fuse({"lexical": ["a", "b", "c"], "dense": ["b", "d"]}, RecallOptions(rrf_k=10))
    assert fused[0][0] == "b" and fused[0][2] == {"lexical": 2, "dense": 1}
    assert {i for i, _, _ in fused} == {"a", "b", "c", "d"}
    with pytest.raises(ValueError):
        RecallOptions(channels=("sparse",))


def test_lexical_query_with_fts_syntax_and_cjk(store):
    store.add_episode("u", ep("u", "我喜欢喝绿茶。"))
    store.add_episode("u", ep("u", 'She said "NEAR" AND * OR (stars) -- fine.'))
    assert store.lexical("u", "episodes", "绿茶", 5)
    assert store.lexical("u", "episodes", 'AND OR NOT "stars" * ( ) NEAR', 5)
    assert store.lexical("u", "episodes", "the and of", 5) == []  # only stopwords: nothing to match


def test_fact_index_query_with_query_syntax_cjk_and_odd_words(store):
    texts = {"tea": "User likes green tea (绿茶).", "stars": 'User said "NEAR" AND * OR (stars) -- fine.',
             "snake": "User names files like snake_case and e-mail."}
    store.upsert("u", [Fact(id=i, user_id="u", text=t) for i, t in texts.items()])
    assert [i for i, _ in store.lexical("u", "facts", "绿茶", 5)] == ["tea"]
    assert [i for i, _ in store.lexical("u", "facts", 'AND OR NOT "stars" * ( ) NEAR field:x [a TO b]', 5)] == ["stars"]
    assert [i for i, _ in store.lexical("u", "facts", "snake_case e-mail", 5)] == ["snake"]
    assert store.lexical("u", "facts", "x" * 60, 5) == []  # longer than any indexed word
    assert store.lexical("u", "facts", "the and of", 5) == []


def test_context_account_names_channels_and_skips_this_session(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s1", "user", "We took the kids to the science museum, they loved the dinosaurs.", speaker="Jon")
    m.observe("u", "s1", "assistant", "Dinosaurs! Did you see the planetarium?", speaker="Gina")
    m.end_session("u", "s1")
    m.observe("u", "s2", "user", "Where did Jon take the kids?", speaker="Gina")
    ctx = m.context("u", "s2", "Where did Jon take the kids?", budget=300)
    items = {i["turn_id"]: i for p in ctx.parts if p.name == "episodes" for i in p.items}
    assert len(items) == 2 and all(i["session_id"] == "s1" for i in items.values())
    assert all("lexical #" in i["why"] or "dense #" in i["why"] for i in items.values())
    assert "Jon: We took the kids to the science museum" in ctx.text
    assert "[" in ctx.parts[1].text.splitlines()[0]  # the session date heads the episodes of a session


def test_named_speakers_facts_name_their_subject_and_keep_separate_keys(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("c", "s1", "user", "I'm a nurse.", speaker="Caroline")
    m.observe("c", "s1", "assistant", "I'm a teacher.", speaker="Melanie")
    m.observe("c", "s2", "assistant", "I'm a pilot now.", speaker="Melanie")
    facts = {f.key: f.text for f in m.store.get("c")}
    assert facts["caroline.role"] == "Caroline is a nurse."
    assert facts["melanie.role"] == "Melanie is a pilot."  # Melanie's change of mind, Caroline's fact untouched
    assert not any(f.text.startswith("User") for f in m.store.get("c"))


def test_shown_fact_spares_its_source_episode(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s1", "user", "I prefer metric units.")
    m.end_session("u", "s1")
    ctx = m.context("u", "s2", "Which units do I prefer?", budget=300)
    # the fact or its turn, whichever ranks first, not both: no tokens spent twice
    assert bool(ctx.fact_ids) != bool(ctx.parts[1].items), (ctx.fact_ids, ctx.parts[1].items)
    both = Memory(store=m.store, read=ReadOptions(episodes_for_facts=True)).context("u", "s3", "Which units do I prefer?", budget=300)
    assert both.parts[1].items


def test_long_turn_is_kept_whole_and_the_account_says_its_embedding_was_truncated(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), passage_tokens=0)  # passages off: turns whole
    long = "We talked about the garden. " * 120 + "The squirrels dug up the basil."
    m.observe("u", "s1", "user", long)
    m.end_session("u", "s1")
    ctx = m.context("u", "s2", "squirrels basil", budget=2000)
    [item] = ctx.parts[1].items
    assert "truncated" in item["embedding"]
    assert "The squirrels dug up the basil." in ctx.text
    assert m.store.episodes("u")[0].content == long


ANSWER = ("Here is a plan for your trip. " + " ".join(f"On day {i} you could visit museum number {i} and eat "
          f"lunch near the river." for i in range(1, 40)) + " For the ferry, book the 7:40 departure from Pier 9."
          " Enjoy the trip!")


def test_a_long_turn_is_indexed_as_passages_and_the_read_shows_the_one_that_answers(store):
    m = Memory(store=store, passage_tokens=64)
    m.observe("u", "s1", "user", "Plan my trip to the islands, please.", turn_id="s1:1")
    m.observe("u", "s1", "assistant", ANSWER, turn_id="s1:2")
    m.end_session("u", "s1")
    ctx = m.context("u", "s2", "Which ferry departure did you tell me to book?", budget=200)
    shown = [ANSWER[slice(*i["excerpt"])] for i in ctx.parts[1].items if i["turn_id"] == "s1:2"]
    assert any("7:40 departure from Pier 9" in x for x in shown) and all(tokens.count(x) <= 64 for x in shown)
    # the excerpt is marked where the turn goes on; under the line above it (the same speaker), without the name
    assert "\n…For the ferry, book the 7:40 departure from Pier 9" in ctx.text
    assert tokens.count(ANSWER) > 200 and ctx.tokens <= 200  # the whole answer could never have entered
    assert "s1:2" in ctx.turn_ids  # a shown passage covers its turn (the metric counts it)
    assert m.store.episodes("u")[1].content == ANSWER  # the record keeps the whole turn


def test_a_long_turns_later_passages_without_vectors_are_found_by_their_words_and_the_store_reopens_whole(
        tmp_path, embedder):
    from memkit.store.base import dense_items, episode_items

    m = Memory(store=FactStore.persistent(tmp_path / "s", embedder), passage_tokens=64, dense_passages=2)
    m.observe("u", "s1", "user", "Plan my trip to the islands, please.", turn_id="s1:1")
    m.observe("u", "s1", "assistant", ANSWER, turn_id="s1:2")
    m.end_session("u", "s1")
    answer = m.store.episodes("u")[1]
    assert answer.dense_passages == 2 and len(episode_items(answer)) > 10 and len(dense_items(answer)) == 2
    # the vectors hold the user's turn and the answer's first two passages; the words hold every passage
    assert m.store.vectors.count(m.store._owner("u")) == 1 + 2
    ferry = "Which ferry departure did you tell me to book?"
    ferry_passage = {ref for ref, text in episode_items(answer) if "7:40" in text}
    assert ferry_passage and not ferry_passage & {ref for ref, _ in dense_items(answer)}
    assert ferry_passage & {ref for ref, _ in m.store.lexical("u", "episodes", "ferry departure Pier", 5)}
    assert "7:40 departure from Pier 9" in m.context("u", "s2", ferry, budget=200).text
    m.close()
    again = Memory(store=FactStore.persistent(tmp_path / "s", embedder))  # a whole store: no finding, no repair
    assert again.store.episodes("u")[1].dense_passages == 2
    assert "7:40 departure from Pier 9" in again.context("u", "s3", ferry, budget=200).text
    again.close()


def test_a_turn_shorter_than_a_passage_is_shown_whole(embedder):
    m = Memory(store=FactStore.ephemeral(embedder), passage_tokens=64)
    m.observe("u", "s1", "user", "I keep my bike in the blue shed.", turn_id="s1:1")
    m.end_session("u", "s1")
    [item] = Memory(store=m.store).context("u", "s2", "where is the bike kept?", budget=200).parts[1].items
    assert "excerpt" not in item and item["text"] == "user: I keep my bike in the blue shed."


def test_passages_cover_the_turn_in_order_within_their_size():
    from memkit.store import passages

    for size in (16, 64, 200):
        spans = passages.spans(ANSWER, size)
        assert spans[0][0] == 0 and spans[-1][1] == len(ANSWER)
        assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))  # in order, no overlap
        assert " ".join(ANSWER[a:b] for a, b in spans).split() == ANSWER.split()  # only whitespace left out
        assert all(tokens.count(ANSWER[a:b]) <= size for a, b in spans)
    assert passages.spans(ANSWER, 0) == [(0, len(ANSWER))] and passages.spans("short", 64) == [(0, 5)]


def test_drop_user_forgets_episodes(store):
    store.add_episode("u", ep("u", "I play the cello."))
    store.drop_user("u")
    assert store.episodes("u") == [] and store.lexical("u", "episodes", "cello", 5) == []


def _conv():
    turns = (DTurn("s1:1", "user", "Guess what, I adopted a parrot named Kiwi!", "Ana"),
             DTurn("s1:2", "assistant", "A parrot! Does Kiwi talk?", "Ben"),
             DTurn("s1:3", "user", "Only swear words so far, haha.", "Ana"))
    return Conversation("c", "c", (DSession("s1", "2023-05-08T10:00:00", turns),),
                        probes=(Probe("p", "s1", "What is the name of Ana's parrot?", "Kiwi", ("s1:1",), "single-hop"),))


def test_rag_baselines_and_budgets_in_the_runner(embedder):
    results, summary, _ = run([_conv()], ["rag:bm25", "rag:dense", "rag:hybrid", "two-layer:keyed"],
                              budget=[20, 200], store=FactStore.ephemeral(embedder), per_turn_tokens=False)
    assert set(results["budget"]) == {20, 200}
    big = results[results["budget"] == 200].set_index("strategy")["evidence_recall"]
    assert (big == 1.0).all()
    assert (results["context_tokens"] <= results["budget"]).all()
    assert set(summary[summary["type"] == "all"]["strategy"]) == {"rag:bm25", "rag:dense", "rag:hybrid", "two-layer:keyed"}


def test_the_raw_hybrid_baseline_fuses_its_channels_evenly_and_two_layer_weighs_the_lexical_one_less(embedder):
    from memkit.read.recall import LEXICAL_WEIGHT
    from memkit.strategies import make

    hybrid = make("rag:hybrid", "u", 400, store=FactStore.ephemeral(embedder)).memory.read_options.recall
    two_layer = make("two-layer:keyed", "u", 400, store=FactStore.ephemeral(embedder)).memory.read_options.recall
    assert hybrid.weight("lexical") == hybrid.weight("dense") == 1.0
    assert two_layer.weight("lexical") == LEXICAL_WEIGHT < two_layer.weight("dense") == 1.0
    # "a": first lexically and 20th densely; "b": first densely only
    rankings = {"lexical": ["a"], "dense": ["b", *(f"x{i}" for i in range(18)), "a"]}
    assert fuse(rankings, hybrid)[0][0] == "a" and fuse(rankings, two_layer)[0][0] == "b"


def test_given_weights_replace_only_the_rankings_they_name_on_a_baseline_or_two_layer_memory(embedder):
    from memkit.read.recall import RecallOptions
    from memkit.strategies import make

    def recall_of(name: str, options: RecallOptions) -> RecallOptions:
        return make(name, "u", 400, store=FactStore.ephemeral(embedder), recall=options).memory.read_options.recall

    other_k = recall_of("rag:hybrid", RecallOptions(rrf_k=2))
    assert other_k.rrf_k == 2 and other_k.weight("lexical") == other_k.weight("dense") == 1.0
    tilted = recall_of("rag:hybrid", RecallOptions(weights=(("lexical", 0.5), ("dense", 1.0))))
    assert tilted.weight("lexical") == 0.5 and tilted.weight("dense") == 1.0
    assert recall_of("two-layer:keyed", RecallOptions(rrf_k=2)).weight("lexical") == 0.5
    # weights given for one ranking leave the others at the reader's own
    person = RecallOptions(weights=(("user", 1.0),))
    assert (person.weight("user"), person.weight("lexical"), person.weight("dense")) == (1.0, 0.5, 1.0)
    assert recall_of("rag:hybrid", person).weight("lexical") == 1.0


def test_facts_and_episodes_share_one_collection_per_user_without_clashing_ids(store):
    from memkit.types import Fact

    stored = store.add_episode("u", ep("u", "My sister plays the cello in Lisbon."))
    store.upsert("u", [Fact(id=stored.id, user_id="u", text="User's sister plays the cello.")])  # the same id
    store.embed_pending("u")
    vec = store.embed_query("sister cello")
    found = store.dense("u", vec, {"facts": 5, "episodes": 5})
    assert found["facts"][0][0] == stored.id and found["episodes"][0][0] == stored.id
    assert [f.text for f in store.get("u")] == ["User's sister plays the cello."]  # facts only
    assert [h.fact.id for h in store.search("u", "cello", min_score=-1.0)] == [stored.id]
    assert set(store.dense("u", vec, {"facts": 5})) == {"facts"}
    if store.backend != "postgres":  # Chroma: one collection for both parts
        client, ns = store.vectors.client, store.vectors.namespace
        names = [c.name for c in client.list_collections() if c.name.startswith(ns + "-")
                 and c.name.endswith(store.owner("u"))]
        assert names == [store.collection_name("u")]
    store.delete("u", [stored.id])  # the fact goes, the episode with the same id stays
    after = store.dense("u", vec, {"facts": 5, "episodes": 5})
    assert after["facts"] == [] and [i for i, _ in after["episodes"]] == [stored.id]
    with pytest.raises(ValueError, match="unknown parts"):
        store.dense("u", vec, {"history": 5})


LEGACY_HNSW = {"space": "cosine", "sync_threshold": 2, "batch_size": 2}


def legacy_fact_metadata(f):
    """A fact's metadata as memkit wrote it in a collection per part (the layout before one per user)."""
    return {"user_id": f.user_id, "kind": f.kind, "key": f.key or "", "value": f.value or "",
            "importance": float(f.importance), "source": "[]", "created_at": f.created_at,
            "valid_from": f.valid_from, "valid_to": 1e18, "superseded_by": ""}


def test_a_store_with_a_collection_per_part_moves_to_one_collection_when_it_opens(tmp_path, embedder):
    from memkit.types import Fact

    path = str(tmp_path / "old")
    store = FactStore.persistent(path, embedder, namespace="old")
    client, owner = store.vectors.client, store.owner("u")
    fact = Fact(id="tea", user_id="u", text="User drinks green tea.", key="user.drink", value="green tea",
                created_at=1.0, valid_from=1.0)
    episode = store.records.add_episode(owner, ep("u", "We hiked to the lighthouse at dawn."))
    vectors = embedder([fact.text, "Caroline: " + episode.content])
    meta = {"user_id": "u", "dimension": 384, "embedder": store.vectors.embedder_id()}
    old = {part: client.create_collection(f"old-{part}-{owner}", embedding_function=embedder,
                                          configuration={"hnsw": LEGACY_HNSW}, metadata=meta)
           for part in ("facts", "episodes")}  # as memkit wrote them before one collection per user
    old["facts"].add(ids=[fact.id], documents=[fact.text], embeddings=[vectors[0]], metadatas=[legacy_fact_metadata(fact)])
    old["episodes"].add(ids=[episode.id], documents=["Caroline: " + episode.content], embeddings=[vectors[1]],
                        metadatas=[{"user_id": "u", "session_id": "s1", "turn_id": episode.turn_id,
                                    "speaker": "Caroline", "time": episode.time}])
    store.records.mark_embedded(owner, [episode.id])
    store.lexicon.change(owner, "facts", [(fact.id, fact.text)])
    store.lexicon.change(owner, "episodes", [(episode.id, "Caroline: " + episode.content)])
    store.log.put_profile(owner, [fact])
    store.close()

    store = FactStore.persistent(path, embedder, namespace="old")  # the move happens here, not on a read
    client = store.vectors.client
    names = [c.name for c in client.list_collections() if c.name.startswith("old-") and c.name.endswith(owner)]
    assert names == [store.collection_name("u")]  # the old collections are gone
    moved = client.get_collection(store.collection_name("u")).get(include=["embeddings"])
    assert sorted(moved["ids"]) == [f"e:{episode.id}", "f:tea"]
    for cid, vector in zip(moved["ids"], moved["embeddings"]):  # moved with its vector, not embedded again
        assert list(vector) == pytest.approx(list(vectors[0 if cid == "f:tea" else 1]), abs=1e-6)
    assert store.get("u") == [fact]
    ctx = Memory(store=store).context("u", "s2", "Where did we hike at dawn?", budget=200)
    assert "lighthouse" in ctx.text and "green tea" in ctx.text
    store.close()


def test_a_move_cut_short_is_finished_on_the_next_open_and_a_refused_one_changes_nothing(tmp_path, embedder):
    from memkit.errors import DimensionMismatch
    from memkit.types import Event, EventKind, Fact

    path = str(tmp_path / "s")
    store = FactStore.persistent(path, embedder)
    client, owner = store.vectors.client, store.owner("u")
    facts = [Fact(id=f"f{i}", user_id="u", text=f"User owns {i} bikes.", created_at=1.0, valid_from=1.0)
             for i in range(3)]
    meta = {"user_id": "u", "dimension": 384, "embedder": store.vectors.embedder_id()}
    old = client.create_collection(f"memkit-facts-{owner}", embedding_function=embedder,
                                   configuration={"hnsw": LEGACY_HNSW}, metadata=meta)
    old.add(ids=[f.id for f in facts], documents=[f.text for f in facts],
            metadatas=[legacy_fact_metadata(f) for f in facts])
    # a process that died after copying one fact: the new collection exists, still marked as moving
    new = client.create_collection(store.collection_name("u"), embedding_function=embedder,
                                   configuration={"hnsw": LEGACY_HNSW}, metadata={**meta, "moving": True})
    new.add(ids=["f:f0"], documents=[facts[0].text], metadatas=[legacy_fact_metadata(facts[0])])
    # the records such a store holds beside its vectors (an open checks that they agree: memkit/store/health.py)
    store.record("u", [Event(EventKind.ADD, "u", f.id, None, f, "legacy", (), 1.0) for f in facts])
    store.close()
    store = FactStore.persistent(path, embedder)
    col = store.vectors.client.get_collection(store.collection_name("u"))
    assert "moving" not in col.metadata and sorted(col.get()["ids"]) == ["f:f0", "f:f1", "f:f2"]
    assert store.vectors.migrate() == 0  # nothing left to move
    # an old collection of another dimension is refused before anything is made, and stays as it was
    other_owner = store.owner("v")
    other = store.vectors.client.create_collection(f"memkit-facts-{other_owner}", embedding_function=None,
                                                   metadata={**meta, "user_id": "v", "dimension": 8})
    other.add(ids=["x"], documents=["User likes tea."], embeddings=[[0.1] * 8], metadatas=[{"user_id": "v"}])
    store.close()
    with pytest.raises(DimensionMismatch, match="'v'"):
        FactStore.persistent(path, embedder)
    client = chromadb.PersistentClient(path=path)
    assert client.get_collection(f"memkit-facts-{other_owner}").count() == 1
    assert f"memkit-user-{other_owner}" not in [c.name for c in client.list_collections()]


def test_a_fact_search_finds_facts_behind_many_nearer_episodes(store):
    from memkit.types import Fact

    for i in range(60):
        store.add_episode("u", ep("u", f"I drank green tea again, cup number {i}.", turn=f"s1:{i}"))
    store.embed_pending("u")
    store.upsert("u", [Fact(id="bike", user_id="u", text="User owns a red bicycle.")])
    hits = store.search("u", "green tea cup", k=2, min_score=-1.0)
    assert [h.fact.id for h in hits] == ["bike"]  # the only fact, behind 60 nearer episodes


def test_sessions_of_one_day_get_their_id_in_the_header_and_the_account_says_each_lines_session(embedder):
    from datetime import datetime

    from memkit.lab import viz

    m = Memory(store=FactStore.ephemeral(embedder))
    morning, evening = datetime(2026, 3, 3, 9).timestamp(), datetime(2026, 3, 3, 20).timestamp()
    m.observe("u", "run-am", "user", "The trail run along the river took an hour.", time=morning)
    m.observe("u", "run-pm", "user", "The evening run along the river was faster.", time=evening)
    m.observe("u", "later", "user", "The river run in April was the longest.", time=datetime(2026, 4, 9).timestamp())
    ctx = m.context("u", "now", "Which run along the river?", budget=400)
    headers = [line for line in ctx.parts[1].text.splitlines() if line.startswith("[")]
    assert headers == ["[3 March 2026, session run-am]", "[3 March 2026, session run-pm]", "[9 April 2026]"]
    assert ctx.parts[1].tokens <= 400 - ctx.parts[0].tokens
    table = viz.context_table(ctx)
    episodes = table[table["part"] == "episodes"]
    assert list(episodes["session"]) == ["run-am", "run-pm", "later"]
    assert list(episodes["date"]) == ["3 March 2026", "3 March 2026", "9 April 2026"]


def test_the_account_says_why_per_item_and_the_messages_say_when_the_question_was_not_observed(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "tue", "user", "I prefer metric units.")
    m.observe("u", "tue", "user", "We hiked up the Brocken in fog.")
    ctx = m.context("u", "fri", "Where did we hike?", budget=400)
    rows = {r["part"]: r for r in ctx.account()}
    assert rows["episodes"]["items"] == len(rows["episodes"]["why"]) == 1
    assert "lexical #1" in rows["episodes"]["why"][0] and rows["facts"]["why"] == ["profile"]
    assert any("observe it first" in n for n in ctx.notes)
    m.observe("u", "fri", "user", "Where did we hike?")
    ctx = m.context("u", "fri", "Where did we hike?", budget=400)
    assert ctx.messages[-1] == {"role": "user", "content": "Where did we hike?"}
    assert not any("observe it first" in n for n in ctx.notes)
    assert {r["part"]: r["why"] for r in ctx.account()}["turns"] == ["window"]


def test_profile_block_lists_the_most_important_first(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    m.observe("u", "s", "user", "I like hiking.")              # importance 0.6
    m.observe("u", "s", "user", "I'm allergic to peanuts.")    # 0.85
    m.observe("u", "s", "user", "My name is Lena.")            # 0.9
    assert m.profile("u").splitlines()[1:] == ["- User's name is Lena.", "- User is allergic to peanuts.",
                                               "- User likes hiking."]


def test_a_line_said_in_several_sessions_is_shown_once_with_its_sessions(embedder):
    from memkit.eval.metrics import repeated_lines

    m = Memory(store=FactStore.ephemeral(embedder))
    for i in range(4):
        m.observe("u", f"s{i}", "user", "Do you still like your job?", turn_id=f"s{i}:1", time=1e9 + i * 86400)
    m.observe("u", "s9", "user", "I quit my job at the bakery and started at the library.", turn_id="s9:1",
              time=1e9 + 9 * 86400)
    ctx = m.context("u", "now", "Do you still like your job?", budget=300)
    lines = ctx.parts[1].text.splitlines()
    assert lines.count("user: Do you still like your job?") == 1 and repeated_lines(ctx) == 0
    [item] = [i for i in ctx.parts[1].items if i["text"] == "user: Do you still like your job?"]
    assert item["sessions"] == ["s0", "s1", "s2", "s3"] and len(item["repeats"]) == 3
    assert any("bakery" in line for line in lines)  # the budget the repeats would have taken
    plain = Memory(store=m.store, read=ReadOptions(fold_repeats=False)).context("u", "now2", "Do you still like your job?", budget=300)
    assert plain.parts[1].text.count("Do you still like your job?") == 4 and repeated_lines(plain) == 3


def test_a_near_identical_line_is_folded_into_the_one_shown_and_a_different_one_is_not(embedder):
    m = Memory(store=FactStore.ephemeral(embedder))
    said = ["Pretty good, just busy with work stuff.", "Pretty good, just busy with work stuff lately.",
            "Pretty good, I adopted a puppy called Miso."]
    for i, text in enumerate(said):
        m.observe("u", f"s{i}", "user", text, turn_id=f"s{i}:1", time=1e9 + i * 86400)
    ctx = m.context("u", "now", "How have you been, busy with work?", budget=300)
    shown = [i["turn_id"] for i in ctx.parts[1].items]
    assert sorted(shown) == ["s0:1", "s2:1"] or sorted(shown) == ["s1:1", "s2:1"]  # one of the two alike lines
    [folded] = [i for i in ctx.parts[1].items if i["turn_id"] != "s2:1"]
    assert len(folded["repeats"]) == 1 and len(folded["sessions"]) == 2
    exact = Memory(store=m.store, read=ReadOptions(near_repeats=1.0)).context("u", "now2", "How have you been, busy with work?",
                                                            budget=300)
    assert len(exact.parts[1].items) == 3  # identical lines only: the two alike ones both shown


def test_an_excerpt_leaves_out_a_line_the_context_already_shows():
    from memkit.read.assemble import PackOptions, pack_episodes
    from memkit.types import Recalled

    sign_off = "I hope this helps, and let me know if you want me to adjust anything."
    answers = [f"Intro {i}.\nThe ferry to Pier {i} leaves at 7:4{i}.\n{sign_off}\nMore {i}." for i in (4, 9)]
    recalled = [Recalled(Episode(str(n), "u", f"s{n}", f"s{n}:2", "assistant", "assistant", a, 1e9 + n).excerpt(
        (a.index("The ferry"), a.index("\nMore"))), 1.0 / n, {"dense": n}) for n, a in enumerate(answers, 1)]
    part = pack_episodes(recalled, 400, lambda e: False, PackOptions(dates=False))
    assert part.text.count(sign_off) == 1 and [i["turn_id"] for i in part.items] == ["s1:2", "s2:2"]
    assert "Pier 9 leaves at 7:49" in part.text  # the rest of the second excerpt is shown
    both = pack_episodes(recalled, 400, lambda e: False, PackOptions(dates=False, fold_repeats=False))
    assert both.text.count(sign_off) == 2


def test_on_one_list_a_fact_that_only_names_the_subject_does_not_outrank_the_turn_that_answers(embedder):
    store = FactStore.ephemeral(embedder)
    store.upsert("u", [Fact(id=f"f{i}", user_id="u", text=t) for i, t in enumerate(
        ["Sam's little dog is a bit chubby.", "Sam's legs were jelly after the hike.", "Sam took Luna to the vet."])])
    store.add_episode("u", ep("u", "Sam here: I started a new job as a nurse at the children's hospital.",
                              speaker="Sam", turn="s1:1"))
    for i in range(2, 9):
        store.add_episode("u", ep("u", f"The weather on day {i} was grey and the ferry ran late.", turn=f"s1:{i}"))
    ask = "What is Sam's job now?"
    one = Memory(store=store, read=ReadOptions(profile_tokens=0)).context("u", "q1", ask, budget=40)
    [answer] = [i for i in one.parts[1].items if "nurse" in i["text"]]  # the answer got in first
    assert all(f["score"] < answer["score"] for f in one.parts[0].items)  # facts only with what it left


def test_one_list_takes_facts_and_episodes_in_the_order_of_their_scores_from_one_budget():
    from memkit.read.assemble import PackOptions, pack_memory
    from memkit.types import Hit, Recalled

    def said(n, text):
        return Recalled(Episode(str(n), "u", "s1", f"s1:{n}", "Ana", "user", text, 1e9 + n), 1.0 / n, {"dense": n})

    hits = [Hit(Fact(id="f1", user_id="u", text="User plays the cello.", source=("s1:9",)), 0.9, 0.6, "lexical #1"),
            Hit(Fact(id="f2", user_id="u", text="User likes tea.", source=("s1:8",)), 0.5, 0.2, "dense #5"),
            Hit(Fact(id="p1", user_id="u", text="User's name is Ana."), float("nan"), float("nan"), "profile")]
    recalled = [said(1, "I play the cello on Tuesdays."), said(2, "The orchestra meets downtown."),
                said(9, "Cello again.")]
    first = PackOptions(dates=False, profile_after=0)  # the profile block before the list
    facts, eps = pack_memory(hits, recalled, 400, 50, lambda e: False, first)
    assert [i["id"] for i in facts.items] == ["p1", "f1", "f2"] and "s1:9" not in [i["turn_id"] for i in eps.items]
    assert [i["rank"] for i in eps.items] == [1, 3]  # a place on the one list: the fact f1 ranks second
    tight = sum(line_cost(f"- {h.fact.text}") for h in hits[2:]) + line_cost("Ana: I play the cello on Tuesdays.")
    facts, eps = pack_memory(hits, recalled, tight, 50, lambda e: False, first)
    assert [i["id"] for i in facts.items] == ["p1"] and [i["turn_id"] for i in eps.items] == ["s1:1"]
    facts, eps = pack_memory(hits, recalled, tight, 50, lambda e: False, PackOptions(dates=False))  # after 8 items
    assert [i["id"] for i in facts.items] == ["f1"] and [i["turn_id"] for i in eps.items] == ["s1:1"]
    cello = replace(hits[2], fact=replace(hits[2].fact, source=("s1:2",)))  # a profile fact of the second turn
    facts, eps = pack_memory([*hits[:2], cello], recalled, 400, 50, lambda e: False, PackOptions(dates=False))
    assert [i["id"] for i in facts.items] == ["f1", "p1", "f2"]  # in its turn's place, which it spares
    assert [i["turn_id"] for i in eps.items] == ["s1:1"]


def test_diversity_lets_a_different_line_past_near_duplicates_and_zero_keeps_the_order():
    from memkit.read.assemble import diversified
    from memkit.types import Recalled

    lines = ["Pretty good, just busy with work stuff.", "Pretty good, just busy with work stuff lately.",
             "Pretty good, just busy with the work stuff.", "I became a nurse at the clinic last spring."]
    stream = [Recalled(Episode(str(n), "u", f"s{n}", f"s{n}:1", "Sam", "user", t, 1e9 + n), 1.0 - n / 20, {"dense": n})
              for n, t in enumerate(lines, 1)]
    assert [r.item.turn_id for r in diversified(stream, 0.0)] == ["s1:1", "s2:1", "s3:1", "s4:1"]
    assert [r.item.turn_id for r in diversified(stream, 0.4)] == ["s1:1", "s4:1", "s2:1", "s3:1"]
    assert [r.item.turn_id for r in diversified(stream, 0.4, window=2)][:2] == ["s1:1", "s2:1"]  # s4 not yet seen


@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.8, 1.0])
def test_a_near_repeat_is_the_first_shown_line_at_least_that_alike(threshold):
    # the packer's inlined check (with its length bound) against ``near`` itself, on lines of 0 to 6 words
    import random

    from memkit.read.assemble import EpisodePacker, PackOptions, near

    rng = random.Random(7)
    vocab = "a b c d e f g".split()
    for _ in range(300):
        packer = EpisodePacker(1000, lambda e: False, PackOptions(near_repeats=threshold))
        packer.words_of = {str(i): set(rng.sample(vocab, rng.randint(0, 6))) for i in range(6)}
        words = set(rng.sample(vocab, rng.randint(0, 6)))
        expected = next((r for r, w in packer.words_of.items() if near(words, w) >= threshold), None)
        assert packer._repeat_of("no such key", words) == expected


def test_diversity_lets_a_different_line_past_near_duplicates_but_not_in_a_raw_turn_baseline(embedder):
    from memkit.strategies import make

    store = FactStore.ephemeral(embedder)
    said = ["Pretty good, just busy with work stuff.", "Pretty good, just busy with work stuff lately.",
            "Pretty good, just busy with the work stuff.", "Work means nights at the clinic for me."]
    rag = make("rag:bm25", "u", 60, store=store)
    two = make("two-layer:keyed", "w", 60, store=store, near_repeats=1.0, diversity=0.6)  # near lines not folded
    plain = make("two-layer:keyed", "x", 60, store=store, near_repeats=1.0)  # the default: no diversity
    for s in (rag, two, plain):
        for i, text in enumerate(said):
            s.observe(f"s{i}", f"s{i}:1", "user", text, 1e9 + i * 86400)
            s.end_session(f"s{i}")
    ask = "Pretty good, busy with work stuff at the clinic?"
    assert rag.memory.read_options.diversity == 0.0  # plain retrieval: in the channel's order (diversity changes it, below)
    assert "s3:1" in [i["turn_id"] for i in two.context("q", ask, 60).parts[1].items]  # past the near-duplicates
    assert "s3:1" not in [i["turn_id"] for i in plain.context("q", ask, 60).parts[1].items]


class RecordingMiniLM(MiniLMEmbedder):
    """The real offline embedder, keeping the batches it was given (what the write path batched)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def __call__(self, input):
        self.batches.append(list(input))
        return super().__call__(input)


def test_each_ended_session_is_embedded_in_one_batch_whatever_the_background_load_is_doing():
    # a session's opening loads the user's indexes in a background thread; that load used to embed whatever
    # other sessions had pending when it ran, so a late one took part of the next session's turns, and the
    # batches (and with them the index's segments) changed from run to run
    sessions = [[f"In session {s} I wrote note {t} about the {w} garden: the {w} beds need water, compost and a "
                 f"new fence before the {w} frost arrives, and the shed roof leaks again." for t in range(8)]
                for s, w in enumerate(["north", "south", "east", "west", "upper", "lower"] * 3)]
    for run in range(2):
        embedder = RecordingMiniLM()
        memory = Memory(store=FactStore.ephemeral(embedder), passage_tokens=0)
        for s, turns in enumerate(sessions):
            for text in turns:
                memory.observe("u", f"s{s}", "user", text)
            memory.end_session("u", f"s{s}")
        memory.close()
        episodes = [b for b in embedder.batches if b and b[0].startswith("user: In session")]
        assert episodes == [[f"user: {t}" for t in turns] for turns in sessions], f"run {run}: batches of {[len(b) for b in episodes]} turns"


def _history():
    """Three sessions of two users: long assistant answers (indexed as passages) and user turns with facts."""
    answer = ("For the {w} garden, water the beds early in the morning. Mulch keeps the soil moist for days, and "
              "compost in spring feeds the roots. A fence of chestnut paling keeps rabbits out of the {w} beds. ") * 4
    return {user: [[("user", f"I prefer metric units and my {w} garden is {n} square metres."),
                    ("assistant", answer.format(w=w)), ("user", f"My {w} shed roof leaks again."),
                    ("assistant", answer.format(w=w + " lower"))] for n, w in enumerate(words)]
            for user, words in {"ana": ["north", "south", "east"], "ben": ["west", "upper", "lower"]}.items()}


def _observe(memory: Memory, history) -> None:
    with reproducible_ids("history"):  # the same ids in both memories: ties between equal scores go by id
        _observe_all(memory, history)


def _observe_all(memory: Memory, history) -> None:
    for user, sessions in history.items():
        for s, turns in enumerate(sessions):
            for role, text in turns:
                memory.observe(user, f"s{s}", role, text, time=1.7e9 + s * 86400)
            memory.end_session(user, f"s{s}")


def test_bulk_embeds_every_users_turns_in_one_call_and_leaves_the_same_memory():
    history = _history()
    embedder = RecordingMiniLM()
    bulk = Memory(store=FactStore.ephemeral(embedder))
    with bulk.bulk() as memory:
        assert memory is bulk
        _observe(bulk, history)
        waiting = {u: len(bulk.store.pending_episodes(u)) for u in history}
        assert waiting == {"ana": 12, "ben": 12}  # ended sessions and opened ones embedded nothing
        assert not [b for b in embedder.batches if any(t.startswith("user: ") for t in b)]  # facts only
    assert {u: bulk.store.pending_episodes(u) for u in history} == {"ana": [], "ben": []}
    turns = [b for b in embedder.batches if any(t.startswith("user: ") for t in b)]
    assert len(turns) == 1  # both users' turns in one call, their long answers as passages (more texts than turns)
    assert {"user: My north shed roof leaks again.", "user: My west shed roof leaks again."} <= set(turns[0])
    assert len(turns[0]) > 24

    plain = Memory(store=FactStore.ephemeral(MiniLMEmbedder()))
    _observe(plain, history)
    for user in history:
        assert sorted(f.text for f in bulk.store.get(user)) == sorted(f.text for f in plain.store.get(user))
        for question in ("How big is the north garden?", "What keeps rabbits out?", "Which units do I use?"):
            a, b = bulk.context(user, "q", question, 300), plain.context(user, "q", question, 300)
            assert a.messages == b.messages
    bulk.close()
    plain.close()


def test_in_bulk_a_batch_is_bounded_and_a_read_sees_every_turn(store):
    memory = Memory(store=store, passage_tokens=0)
    with memory.bulk(size=3):
        memory.observe("u", "s1", "user", "My cello lesson moved to Thursday.")
        memory.observe("u", "s1", "user", "The cello teacher is called Ines.")
        assert len(store.pending_episodes("u")) == 2
        memory.observe("v", "s1", "user", "I keep bees on the roof.")  # the third turn waiting, of any user
        assert store.pending_episodes("u") == [] and store.pending_episodes("v") == []
        memory.end_session("u", "s1")
        memory.observe("u", "s2", "user", "Ines plays the viola da gamba too.")
        assert len(store.pending_episodes("u")) == 1
        ctx = memory.context("v", "t", "Who teaches the cello?", 200)
        assert "cello" not in " ".join(m["content"] for m in ctx.messages)  # never another user's turns
        found = [i for i, _ in store.lexical("u", "episodes", "viola", 5, session="s3")]
        assert len(found) == 1 and store.pending_episodes("u") == []  # the read embedded it first
    with pytest.raises(memkit_errors.InvalidArgument):
        with memory.bulk(size=0):
            pass


def test_a_bulk_left_by_an_exception_keeps_its_turns_and_bulk_does_not_nest(embedder):
    memory = Memory(store=FactStore.ephemeral(embedder))
    with pytest.raises(RuntimeError, match="agent crashed"):
        with memory.bulk():
            memory.observe("u", "s1", "user", "We planted the tulips by the old well.")
            raise RuntimeError("agent crashed")
    assert len(memory.store.pending_episodes("u")) == 1  # recorded, still pending: nothing lost
    ctx = memory.context("u", "s2", "Where did we plant the tulips?", 200)
    assert "old well" in " ".join(m["content"] for m in ctx.messages)
    assert memory.store.pending_episodes("u") == []
    with memory.bulk():
        with pytest.raises(memkit_errors.ConfigError, match="does not nest"):
            with memory.bulk():
                pass
        memory.observe("u", "s3", "user", "Lea moved to Lisbon.")
    assert memory.store.pending_episodes("u") == []
    memory.close()
    with pytest.raises(memkit_errors.StoreClosed):
        with memory.bulk():
            pass


@pytest.mark.parametrize("runs", [True, False])
def test_a_speakers_run_of_lines_shows_the_name_once_and_each_line_is_charged_what_it_costs_where_it_lands(runs):
    # episodes taken in a random order (as ranks come) and shown in the order they were said: the packer's
    # running account (the name's cost changes for the line below a new one) matches the text it renders
    import random

    from memkit.read.assemble import EpisodePacker, PackOptions

    rng = random.Random(11)
    for _ in range(60):
        said = [Episode(str(i), "u", f"s{i // 5}", f"t{i}", rng.choice(["Ana", "Ben"]), "user",
                        rng.choice(["I went hiking.", "Nice!", "The ferry leaves at 7:40 from Pier 9.",
                                    "Note: the ferry leaves at 7:40."]),
                        1.7e9 + (i // 5) * 86400 + i) for i in range(15)]
        packer = EpisodePacker(10_000, lambda e: False, PackOptions(fold_repeats=False, speaker_runs=runs))
        for rank, e in enumerate(rng.sample(said, rng.randint(1, 15)), 1):
            assert packer.take(e, rank, "lexical", 1.0, None)
        part = packer.part()
        assert sum(item["tokens"] for item in part.items) == packer.used >= part.tokens
        assert packer.used == sum(line_cost(line) for line in part.text.splitlines())  # each line as rendered
        lines, above = iter(part.text.splitlines()), None
        for item in part.items:  # one line each, in the order said; a session's date line resets the run
            line = next(lines)
            if line.startswith("["):
                line, above = next(lines), None
            named = line.startswith(f"{item['speaker']}: ")
            # a line that starts like a name of its own ("Note: ...") keeps its speaker's, or it reads as said by "Note"
            name_like = item["text"].startswith(f"{item['speaker']}: Note:")
            assert named == (not runs or above != item["speaker"] or name_like)
            above = item["speaker"]
