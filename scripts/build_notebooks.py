"""Write the teaching notebooks (notebooks/NN_*.ipynb) from the cell lists below, without outputs.

    python scripts/build_notebooks.py && python scripts/run_notebooks.py

The cells live here so a diff of a notebook's code is a diff of text; `run_notebooks.py` executes them in a
real kernel and stores the outputs that `pytest --nbval` then checks.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parents[1] / "notebooks"
IGNORE = "# NBVAL_IGNORE_OUTPUT\n"


def md(text: str):
    return new_markdown_cell(text.strip())


def code(text: str, *tags: str):
    cell = new_code_cell(text.strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def params(text: str):
    return code(text, "parameters")


NOTEBOOKS = {}

NOTEBOOKS["01_two_layers"] = [
    md("""
# 1. Two layers: Tuesday's preference on Friday

On Tuesday a user says *"I prefer metric units"*. On Friday, in a new session, they ask how far to run.
An agent that only has this session's turns answers in miles; an agent with two memory layers has the
preference in Friday's context.

**What you will see**: the same Friday question answered from two contexts (without and with memory), the
two layers side by side, where each fact came from, and a live *layer inspector* you can type into.
Everything runs offline: no API key, no network.
"""),
    params("""
budget = 400          # tokens for Friday's context
LLM = False           # True: extract and summarise with the endpoint in MEMKIT_LLM_* (see README)
show_widgets = True   # False in headless runs: build the widgets without drawing them
result_path = ""      # papermill sweeps: where to write this notebook's result table (CSV)
"""),
    code("""
import pandas as pd
from memkit import Memory, Settings, demo, viz
from memkit.widgets import LayerInspector

memory = Memory.from_settings(Settings.from_env()) if LLM else Memory()
print(type(memory.extractor).__name__, "|", type(memory.store.embedder).__name__, "|", memory.policy)
"""),
    md("## Tuesday\nThe user's turns on Tuesday (the assistant's replies sit in between)."),
    code("""
pd.DataFrame(demo.TUESDAY, columns=["role", "content"])
"""),
    md("`demo.play` feeds Tuesday to `memory.observe`, ends the session (its episodic layer is discarded), then opens Friday's session and builds the context for its first turn."),
    code("""
memory, friday, without = demo.play(memory, budget=budget)
"""),
    md("## Friday without memory\nAll an agent without the semantic layer has is Friday's own turn:"),
    code("""
for m in without.messages:
    print(f"[{m['role']}] {m['content']}")
"""),
    md("## Friday with two layers\nThe semantic layer contributes what it knows about the user; the episodic layer the newest turn:"),
    code("""
for m in friday.messages:
    print(f"[{m['role']}] {m['content']}")
"""),
    code("""
print("metric preference in Friday's context:", "metric" in friday.text.lower())
print("...and without memory:", "metric" in without.text.lower())
"""),
    md("## The semantic layer\nOnly durable statements became facts: the hot weather on Tuesday did not. Each fact keeps the turn it came from."),
    code("""
print(memory.profile(demo.USER))
"""),
    code("""
viz.events_table(memory.store.history(demo.USER))[["event", "key", "after", "source"]]
"""),
    md("## What went into Friday's context, and why\nThe account lists every item with its part and why it got in: recalled facts with the channels that found them and their ranks (*lexical* shared words, *dense* similarity above the floor), *profile* facts as the user's profile block (the rest of their facts, most important first, within `profile_tokens`), and *episodes*: Tuesday's turns themselves, under their session date. \"How far should my long run be\" is not similar to \"metric units\": the preference arrives through the profile."),
    code("""
viz.context_table(friday).round(2)
"""),
    code("""
pd.DataFrame(friday.account())
"""),
    code(IGNORE + """
buf = memory.session(demo.USER, "friday")
viz.layers(buf.window, buf.summary.text, memory.store.get(demo.USER))
"""),
    code(IGNORE + """
viz.budget_breakdown(friday)
"""),
    md("## Try it: the layer inspector\nType a turn as the user (try *\"Actually, switch me to miles.\"* or *\"我叫王磊\"*) and watch the window and the facts change."),
    code(IGNORE + """
inspector = LayerInspector(memory, demo.USER, "friday", display=show_widgets)
"""),
    md("The inspector is an ordinary object, so a cell can drive it too: a change of mind updates the old fact instead of adding a second one."),
    code("""
events = inspector.send("Actually, switch me to imperial units from now on.")
print([(e.kind.value, e.after.text if e.after else "") for e in events])
print(memory.profile(demo.USER))
"""),
    code("""
table = pd.DataFrame([{"budget": budget, "metric_with_memory": "metric" in friday.text.lower(),
                       "metric_without_memory": "metric" in without.text.lower(), "friday_tokens": friday.tokens}])
if result_path:
    table.to_csv(result_path, index=False)
table
"""),
]

NOTEBOOKS["02_episodic_buffer"] = [
    md("""
# 2. The episodic buffer: a window in tokens and a running summary

The episodic layer holds this session's turns. It is read every turn, so it must stay small: a window of
the newest turns, bounded in **tokens** (counted with tiktoken), and a running summary of the turns that
fell out of it.

**What you will see**: token counts per turn, the window sliding over a long session, what a plain sliding
window loses, what the extractive summary keeps, and that the newest turn is never summarised away.
"""),
    params("""
window_tokens = 300    # the window's budget
summary_tokens = 120   # the running summary's budget
conversation = 0       # which conversation of the built-in suite to replay as one long session
turns_to_play = 40
result_path = ""
"""),
    code("""
import inspect
import pandas as pd
from memkit import EpisodicBuffer, ExtractiveSummarizer, tokens, viz
from memkit.eval import load
"""),
    md("## Tokens, not characters\nBudgets are counted with tiktoken's `cl100k_base` (and `o200k_base`), loaded from files shipped in a package, so this works offline."),
    code("""
samples = ["I prefer metric units.", "我喜欢公制单位", "🏃‍♀️🔥", "def f(x): return x ** 2"]
pd.DataFrame([{"text": s, "characters": len(s), "cl100k_base": tokens.count(s),
               "o200k_base": tokens.count(s, "o200k_base")} for s in samples])
"""),
    md("## A long session\nWe replay the first turns of a conversation from the built-in suite as one long session."),
    code("""
conv = load("../data/suite.jsonl")[conversation]
turns = [t for s in conv.sessions for t in s.turns][:turns_to_play]
print(len(turns), "turns,", sum(tokens.count(t.content) for t in turns), "tokens in all")
"""),
    code("""
buf = EpisodicBuffer("long", conv.user_id, window_tokens=window_tokens, summary_tokens=summary_tokens)
rows = []
for t in turns:
    buf.append(t.role, t.content, turn_id=t.id)
    rows.append({"turn": t.id, "role": t.role, "turn_tokens": buf.turns[-1].tokens,
                 "window_tokens": buf.window_tokens_used, "window_turns": len(buf.window),
                 "summary_tokens": buf.summary.tokens, "summarised_turns": len(buf.summary.turn_ids)})
trace = pd.DataFrame(rows)
trace.tail(8)
"""),
    code(IGNORE + """
viz.episodic_trace(trace)
"""),
    md("## What a plain sliding window loses\nEvery turn that left the window is gone for a sliding window. The user's durable statements among them:"),
    code("""
left = buf.turns[: buf.window_start]
lost_facts = [t for t in left if t.role == "user" and any(op["turn"] == t.id for op in conv.ops)]
pd.DataFrame([{"turn": t.id, "content": t.content} for t in lost_facts])
"""),
    md("## What the running summary keeps\nThe offline summarizer is extractive: it keeps the sentences that carry facts, decisions and constraints, and drops small talk, within its token budget."),
    code("""
print(buf.summary.text)
print("---")
print(buf.summary.tokens, "tokens, covering", len(buf.summary.turn_ids), "turns")
"""),
    code("""
kept = [t.id for t in lost_facts if any(s in buf.summary.text for s in t.content.split(". "))]
print(f"{len(kept)} of {len(lost_facts)} fact-bearing turns that left the window survive in the summary")
"""),
    code("""
print(inspect.getsource(ExtractiveSummarizer.fold))
"""),
    md("## The newest turn is never lost\nEven a turn larger than the whole window stays: the window keeps at least the newest turn."),
    code("""
huge = buf.append("user", "Here is my whole log file: " + "ERROR timeout " * 400)
print("window:", [t.id for t in buf.window] == [huge.id], "| newest turn tokens:", huge.tokens)
print("summarised?", huge.id in buf.summary.turn_ids)
"""),
    code("""
table = pd.DataFrame([{"window_tokens": window_tokens, "summary_tokens": summary_tokens,
                       "fact_turns_left_window": len(lost_facts), "kept_in_summary": len(kept)}])
if result_path:
    table.to_csv(result_path, index=False)
table
"""),
]

NOTEBOOKS["03_extraction"] = [
    md("""
# 3. Extraction: which turns become durable facts

The semantic layer is written rarely: only what an extractor judges durable. memkit ships an offline
rule extractor (English and Chinese) and an LLM extractor for any OpenAI-compatible endpoint.

**What you will see**: which turns yield facts and which yield none, the keys that let a later change of
mind replace a fact, the LLM extractor's prompt, and both extractors measured against the gold
operations of the built-in suite.
"""),
    params("""
LLM = False            # True: also run the LLM extractor on the endpoint in MEMKIT_LLM_*
conversations = 20     # how many suite conversations to measure on
result_path = ""
"""),
    code("""
import pandas as pd
from memkit import EXTRACTION_PROMPT, LLMExtractor, RuleExtractor, Settings
from memkit.eval import load

rules = RuleExtractor()
"""),
    code("""
turns = [
    "Hi there!", "I prefer metric units.", "It was hot yesterday.", "Call me Wang Lei.", "我叫王磊",
    "I'm a backend engineer.", "We moved from Go to Python.", "我现在改用 Python 了", "I don't use Docker.",
    "Our company can't use Docker.", "We use Kubernetes 1.28.", "Do you like Python?", "Thanks, that helps!",
    "My sister Ann is a nurse.", "I'm allergic to peanuts.", "Today I'm tired.",
]
rows = []
for t in turns:
    found = rules.extract(t)
    rows += [{"turn": t, "key": c.key, "value": c.value, "fact": c.text} for c in found] or \\
            [{"turn": t, "key": None, "value": None, "fact": "(nothing durable)"}]
pd.DataFrame(rows)
"""),
    md("Greetings, questions, thanks and statements about *today* or *yesterday* yield nothing. The `key` names the slot a fact fills (`user.units`, `user.language`, `user.uses.docker`): the `keyed` conflict policy (notebook 4) uses it to tell a change of mind from a new fact."),
    code("""
[(c.key, c.value, c.negated) for c in rules.extract("I don't want metric units anymore, give me miles.")]
"""),
    md("Several facts can come from one turn, each with the turn id as its source:"),
    code("""
[(c.key, c.value, c.source) for c in rules.extract("My name is Lena and I'm a data scientist. I live in Oslo.", ("s1:3",))]
"""),
    md("## The LLM extractor\nIts prompt is a module constant, so you can read it and change it:"),
    code("""
print(EXTRACTION_PROMPT)
"""),
    code("""
settings = Settings.from_env()
if LLM and settings.llm is not None:
    llm = LLMExtractor(settings.chat_model())
    llm_rows = [{"turn": t, "facts": [(c.key, c.value) for c in llm.extract(t)]} for t in turns]
    display(pd.DataFrame(llm_rows))
else:
    print("The LLM extractor is off. To run it, set MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (and a key if the")
    print("server needs one), e.g. Ollama: MEMKIT_LLM_BASE_URL=http://localhost:11434/v1 MEMKIT_LLM_MODEL=qwen2.5:7b,")
    print("then run this notebook with LLM = True (papermill -p LLM True). Replies are validated; a malformed one")
    print("becomes an ERROR event that says what was received.")
"""),
    md("## Measured on the built-in suite\nEvery user turn of the suite has a gold operation: fact-bearing turns are ADD/UPDATE/NOOP with a slot, small talk has none. Precision here: a turn the extractor fires on is a fact turn; recall: a fact turn yields at least one candidate."),
    code("""
convs = load("../data/suite.jsonl")[:conversations]

def score(extractor):
    tp = fp = fn = tn = 0
    for c in convs:
        gold = {op["turn"] for op in c.ops}
        for s in c.sessions:
            for t in s.turns:
                if t.role != "user":
                    continue
                fired = bool(extractor.extract(t.content))
                tp += fired and t.id in gold
                fp += fired and t.id not in gold
                fn += (not fired) and t.id in gold
                tn += (not fired) and t.id not in gold
    return {"precision": round(tp / max(tp + fp, 1), 3), "recall": round(tp / max(tp + fn, 1), 3),
            "fact_turns": tp + fn, "small_talk_turns": fp + tn}

table = pd.DataFrame([{"extractor": "rules", **score(rules)}])
if LLM and settings.llm is not None:
    table = pd.concat([table, pd.DataFrame([{"extractor": "llm", **score(llm)}])])
table
"""),
    md("The rules and the suite were written by the same team, so read these numbers as a regression check; the honest external check is `memkit bench` on LoCoMo or LongMemEval files you download (notebook 7)."),
    code("""
missed = [(c.id, t.content) for c in convs for s in c.sessions for t in s.turns
          if t.role == "user" and t.id in {op["turn"] for op in c.ops} and not rules.extract(t.content)]
pd.DataFrame(missed[:10], columns=["conversation", "turn the rules missed"])
"""),
    md("Where the rules fire wrongly on small talk (false positives):"),
    code("""
noise = [(c.id, t.content) for c in convs for s in c.sessions for t in s.turns
         if t.role == "user" and t.id not in {op["turn"] for op in c.ops} and rules.extract(t.content)]
pd.DataFrame(noise[:10], columns=["conversation", "small talk the rules took for a fact"])
"""),
    code("""
if result_path:
    table.to_csv(result_path, index=False)
"""),
]

NOTEBOOKS["04_conflicts"] = [
    md("""
# 4. Conflicts and upserts: when the user changes their mind

A fact store that only adds piles up contradictions ("metric" and "miles" both current). memkit plans
every write as explicit events (ADD / UPDATE / DELETE / NOOP / INVALIDATE) under a **conflict policy**,
then applies them, keeping a history.

**What you will see**: one conversation replayed under each policy, the two known failures of a pure
similarity threshold, versions that stay queryable *as of* a time, and a conflict timeline you can scrub.
"""),
    params("""
policy = "temporal"     # the policy shown in detail below
threshold = 0.85        # the similarity policy's overwrite threshold (the seeds' value)
LLM = False             # True: add the llm policy, decided by the endpoint in MEMKIT_LLM_*
show_widgets = True
result_path = ""
"""),
    code("""
import pandas as pd
from memkit import FactStore, RuleExtractor, Settings, reconcile, viz
from memkit.widgets import ConflictTimeline

turns = [
    "I prefer metric units.",
    "I like hiking in the Alps.",
    "My work laptop is a MacBook.",
    "I don't want metric units anymore, give me miles.",   # a change of mind, reworded
    "I like skiing in the Alps.",                          # a different fact that reads alike
    "My home laptop is a MacBook.",                        # another one
    "Like I said, I prefer imperial units.",               # a repeat
]
policies = ["similarity", "keyed", "append", "temporal"] + (["llm"] if LLM else [])
"""),
    md("## Plan first, apply second\n`reconcile.plan` returns the events a policy would apply, and writes nothing:"),
    code("""
store = FactStore.ephemeral()
rules = RuleExtractor()
reconcile.apply(store, "u", reconcile.plan("keyed", store, "u", rules.extract(turns[0], ("t1",)), t=1000.0))
plan = reconcile.plan("keyed", store, "u", rules.extract(turns[3], ("t4",)), t=1003.0)
viz.events_table(plan)[["event", "key", "before", "after", "reason"]]
"""),
    code("""
print("still stored:", [f.text for f in store.get("u")])
"""),
    md("## The same conversation under every policy"),
    code("""
model = Settings.from_env().chat_model() if LLM else None
options = {"similarity": {"threshold": threshold}, "llm": {"model": model}}  # typed: a misspelt option fails
stores, events = {}, {}
for p in policies:
    planner = reconcile.as_policy(p, **options.get(p, {}))
    s = FactStore.ephemeral()
    events[p] = []
    for i, text in enumerate(turns):
        planned = planner.plan(s, "u", rules.extract(text, (f"t{i + 1}",)), 1000.0 + i)
        reconcile.apply(s, "u", planned)
        events[p] += planned
    stores[p] = s

summary = pd.DataFrame([{"policy": p, "current facts": len(stores[p].get("u")),
                         "unit facts": sum(f.key == "user.units" for f in stores[p].get("u")),
                         **{k: sum(e.kind.value == k for e in events[p]) for k in ["ADD", "UPDATE", "INVALIDATE", "NOOP"]}}
                        for p in policies])
summary
"""),
    md("## Failure 1 of the similarity threshold: a reworded contradiction stays\n*\"I don't want metric units anymore, give me miles\"* is not similar enough to *\"I prefer metric units\"* to cross the threshold, so both stay current:"),
    code("""
viz.facts_table(stores["similarity"].get("u"))[["key", "text"]]
"""),
    md("## Failure 2: different facts that read alike overwrite each other\nHiking and skiing, the work and the home laptop: above the threshold, the newer fact overwrote the older."),
    code("""
overwrites = [e for e in events["similarity"] if e.kind.value == "UPDATE"]
pd.DataFrame([{"before": e.before.text, "after": e.after.text, "reason": e.reason} for e in overwrites])
"""),
    md("The `keyed` policy reads the slot instead: same key, same slot. It keeps all four hobbies and laptops and leaves one units fact:"),
    code("""
viz.facts_table(stores["keyed"].get("u"))[["key", "text"]]
"""),
    md(f"## Versions and history\nUnder `temporal`, a superseded fact gets `valid_to` and stays queryable *as of* a time; nothing is deleted."),
    code("""
s = stores[policy]
print("now:    ", sorted(f.text for f in s.get("u") if f.key == "user.units"))
print("as of t3:", sorted(f.text for f in s.as_of("u", 1002.5) if f.key == "user.units"))
"""),
    code("""
viz.events_table(s.history("u"))[["event", "key", "before", "after", "source"]]
"""),
    code(IGNORE + """
viz.fact_timeline(s.get("u", include_superseded=True), until=1000.0 + len(turns))
"""),
    md("## Try it: the conflict timeline\nPick a policy and scrub through the conversation."),
    code(IGNORE + """
timeline = ConflictTimeline(turns, policies=[p for p in policies if p != "llm"], display=show_widgets)
"""),
    code("""
table = summary
if result_path:
    table.to_csv(result_path, index=False)
"""),
]

NOTEBOOKS["05_recall"] = [
    md("""
# 5. Recall: what enters the context and what stays out

Each turn, the semantic layer is searched within the user for the facts relevant to the query:
similarity (1 − cosine distance, higher is closer) must clear a floor, and what clears it is ranked by
0.7·similarity + 0.3·importance. The rest of the user's facts can still enter as a small profile block.

**What you will see**: scores against the floor for a useful query and for noise, how the floor and `k`
change what gets in, importance weighting, the profile block, the context account with tokens per part, and a
recall explorer with sliders.
"""),
    params("""
k = 5
floor = 0.3           # similarity floor: offline MiniLM default; the seeds' 0.6 was set for large API embedders
budget = 600
conversation = 3      # which suite conversation fills the memory
show_widgets = True
result_path = ""
"""),
    code("""
import pandas as pd
from memkit import Memory, viz
from memkit.eval import load
from memkit.widgets import RecallExplorer

conv = load("../data/suite.jsonl")[conversation]
memory = Memory(k=k, min_score=floor)   # profile_tokens=150 by default
for s in conv.sessions:
    for t in s.turns:
        memory.observe("u", s.id, t.role, t.content, turn_id=t.id)
    memory.end_session("u", s.id)
print(len(memory.store.get("u")), "current facts")
"""),
    code("""
print(memory.profile("u"))
"""),
    md("## Similarity against the floor\nThe floor comes from a measurement on the built-in suite: a question and the fact that answers it have a median cosine of 0.46 with MiniLM, while small talk reaches 0.28 at its 90th percentile."),
    code("""
queries = ["Which units should you use for me?", "Which city do I live in?", "It was hot yesterday.",
           "What is my sister's name?", "the user said it was hot yesterday"]
rows = []
for q in queries:
    for h in memory.store.search("u", q, k=3, min_score=-1.0):
        rows.append({"query": q, "fact": h.fact.text, "similarity": round(h.similarity, 2),
                     "importance": h.fact.importance, "score": round(h.score, 2), "above floor": h.similarity >= floor})
pd.DataFrame(rows)
"""),
    md("Small talk never became a fact, so a noisy turn like *\"It was hot yesterday.\"* finds only weak matches, and they stay below the floor. The last query shows a trap: facts are written in the third person (*\"User is …\"*), so a query that says *\"the user\"* is pulled towards every fact; two of them clear the floor (and would enter through the dense channel)."),
    code(IGNORE + """
viz.recall_scores(memory.store.search("u", queries[0], k=8, min_score=-1.0), floor)
"""),
    md("## The floor and k"),
    code("""
grid = []
for f in [0.2, 0.3, 0.4, 0.5]:
    for q in queries:
        grid.append({"floor": f, "query": q[:30], "hits": len(memory.store.search("u", q, k=k, min_score=f))})
pd.DataFrame(grid).pivot(index="query", columns="floor", values="hits")
"""),
    md("## Importance weighting\nAbove the floor, hits are ranked by 0.7·similarity + 0.3·importance; with similarity alone the order can change:"),
    code("""
q = "What should I keep in mind about food?"
both = [(h.fact.text, round(h.score, 2)) for h in memory.store.search("u", q, k=3, min_score=-1.0)]
sim_only = [(h.fact.text, round(h.score, 2)) for h in memory.store.search("u", q, k=3, min_score=-1.0, weights=(1.0, 0.0))]
pd.DataFrame({"0.7 sim + 0.3 importance": both, "similarity only": sim_only})
"""),
    md("## The profile block and the context account\nA question with no similar fact: with the profile block (default, `profile_tokens=150`) the user's facts still arrive, most important first; with `profile_tokens=0` only recall decides, and no fact gets in (the turns that said it can still arrive as episodes). The account says which item got in and why, with tokens per part."),
    code("""
ctx = memory.context("u", "new-session", "How far should my long run be?", budget=budget)
viz.context_table(ctx).round(2)
"""),
    code("""
search_only = Memory(store=memory.store, k=k, min_score=floor, profile_tokens=0)
print([i["text"] for p in search_only.context("u", "s2", "How far should my long run be?", budget).parts
       if p.name == "facts" for i in p.items] or "no fact clears the floor")
"""),
    code("""
pd.DataFrame(ctx.account())
"""),
    code(IGNORE + """
viz.budget_breakdown(ctx)
"""),
    md("## Try it: the recall explorer"),
    code(IGNORE + """
explorer = RecallExplorer(memory, "u", "explore", query="Which units should you use for me?", budget=budget,
                          display=show_widgets)
"""),
    code("""
table = pd.DataFrame(rows)
if result_path:
    table.to_csv(result_path, index=False)
"""),
]

NOTEBOOKS["06_isolation"] = [
    md("""
# 6. Isolation: two users, the same words, no leaks

Every read and write of the semantic layer names one `user_id`, and `FactStore` enforces it: one Chroma
collection per user (named by a hash of the id), no API that searches across users, and refusals for
anything that tries.

**What you will see**: two users saying the same thing and each finding only their own facts, look-alike
ids, and what the store refuses.
"""),
    params("""
result_path = ""
"""),
    code("""
import pandas as pd
from memkit import FactStore, IsolationError, Memory, MemkitError, MissingUserId
from memkit.types import Fact

memory = Memory()
for user, session, text in [("alice", "a1", "I prefer metric units. My sister Ann is a nurse."),
                            ("bob", "b1", "I prefer imperial units. My sister Ann is a pilot.")]:
    events = memory.observe(user, session, "user", text)
    print(user, [e.kind.value + " " + e.after.text for e in events])
"""),
    code("""
for user in ["alice", "bob"]:
    print(user, "->", [h.fact.text for h in memory.search(user, "Which units and what does my sister do?")])
"""),
    md("Each user's profile holds only what that user said:"),
    code("""
print(memory.profile("alice"))
print(memory.profile("bob"))
"""),
    md("## Look-alike ids\nIds that are prefixes of each other, differ by case, or carry quotes and operators are different users:"),
    code("""
store = memory.store
lookalikes = ["alice2", "alic", "ALICE", "alice' OR '1'='1", '{"$ne": "bob"}']
pd.DataFrame([{"user_id": u, "facts": len(store.get(u)),
               "search finds": len(store.search(u, "units", min_score=-1.0))} for u in lookalikes])
"""),
    md("## The layout\nEach user's facts live in their own collection, named by a hash of the id (Chroma names allow only `[a-zA-Z0-9._-]`), so no filter can reach across:"),
    code("""
# the store's namespace prefix is random for in-memory stores; the hash part is the user's
pd.DataFrame([{"user_id": u, "collection": store.collection_name(u).removeprefix(store.namespace + "-")}
              for u in ["alice", "bob", "alice2"]])
"""),
    md("## What the store refuses"),
    code("""
attempts = {
    "empty user_id": lambda: store.search("", "units"),
    "None user_id": lambda: store.get(None),
    "where naming another user": lambda: store.search("bob", "units", where={"user_id": "alice"}),
    "nested where naming a user": lambda: store.get("bob", where={"$or": [{"key": "user.units"}, {"user_id": "alice"}]}),
    "writing alice's fact as bob": lambda: store.upsert("bob", [Fact(id="x", user_id="alice", text="hi")]),
    "bob joining alice's session": lambda: memory.observe("bob", "a1", "user", "hello"),
}
rows = []
for what, call in attempts.items():
    try:
        call()
        rows.append({"attempt": what, "result": "allowed"})
    except MemkitError as e:
        rows.append({"attempt": what, "result": type(e).__name__})
refusals = pd.DataFrame(rows)
refusals
"""),
    md("The episodic layer is isolated too: a session belongs to the user who opened it."),
    code("""
print([t.content for t in memory.session("alice", "a1").turns])
"""),
    md("## Deleting touches one user only"),
    code("""
store.delete("bob", [f.id for f in store.get("alice")])   # alice's ids, in bob's scope: matches nothing
print("alice still has", len(store.get("alice")), "facts")
store.drop_user("bob")
print("bob has", len(store.get("bob")), "facts; alice has", len(store.get("alice")))
"""),
    code("""
if result_path:
    refusals.to_csv(result_path, index=False)
"""),
]

NOTEBOOKS["07_strategies"] = [
    md("""
# 7. Strategies compared: recall and tokens

Four ways to give an agent memory, on the same multi-session conversations and the same token budget:
**full history** (everything, whatever the budget), **sliding window** (the newest turns that fit),
**summary compression** (newest turns + a running summary), and **two-layer memory** under a conflict
policy. Measured with `memkit.eval` on the built-in suite (`data/suite.jsonl`, see `data/README.md`).

**What you will see**: evidence recall, answer-in-context and tokens per strategy, recall per probe type,
the write path's operation accuracy, and one plot. `memkit bench` runs the same thing from the shell.
"""),
    params("""
size = 8                 # conversations of the suite (60 in all); the default keeps this notebook fast
budget = 1200            # context tokens per probe
k = 5
strategies = ["full", "window", "summary", "two-layer:keyed", "two-layer:similarity"]
result_path = ""
"""),
    code("""
import pandas as pd
from memkit import viz
from memkit.eval import load, run

convs = load("../data/suite.jsonl")[:size]
print(len(convs), "conversations,", sum(len(c.probes) for c in convs), "probes,",
      sum(len(s.turns) for c in convs for s in c.sessions), "turns")
"""),
    code("""
results, summary, confusion = run(convs, strategies, budget=budget, k=k)
"""),
    md("## The table\nOne row per strategy. `context_tokens`: tokens of the context built for a probe; `tokens_per_turn`: the context each strategy would send at every user turn; `stale`: the old value of a changed fact is in the context and the new one is not."),
    code("""
cols = ["strategy", "evidence_recall", "answer_in_context", "context_tokens", "tokens_per_turn", "stale",
        "op_accuracy", "duplicate_rate"]
summary[summary["type"] == "all"][cols].round(2).reset_index(drop=True)
"""),
    md("Latency (median and p95, milliseconds) varies by machine, so its output is not checked:"),
    code(IGNORE + """
summary[summary["type"] == "all"][["strategy", "read_p50_ms", "read_p95_ms", "write_p50_ms", "write_p95_ms"]].round(2)
"""),
    md("## Recall per probe type"),
    code("""
viz.recall_by_type(summary).round(2)
"""),
    code(IGNORE + """
viz.strategy_comparison(summary)
"""),
    md("## The write path: gold operations vs what the policy did"),
    code("""
confusion.pivot_table(index=["strategy", "gold"], columns="predicted", values="turns", fill_value=0)
"""),
    md("## Where two-layer memory misses\nThe probes whose evidence the keyed two-layer context did not cover:"),
    code("""
miss = results[(results["strategy"] == "two-layer:keyed") & (results["evidence_recall"] < 1)]
miss[["probe", "type", "evidence_recall", "context_tokens"]].round(2)
"""),
    code("""
table = summary[summary["type"] == "all"][cols].round(4)
if result_path:
    table.to_csv(result_path, index=False)
"""),
]


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(cells=cells, metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}})
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print("wrote", HERE / f"{name}.ipynb", sum(c.cell_type == "code" for c in cells), "code cells")


if __name__ == "__main__":
    main()
