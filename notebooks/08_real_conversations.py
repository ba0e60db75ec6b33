# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 8. Real conversations: what facts miss, and what episodes and the lexical channel recover
#
# The built-in suite of notebooks 2–7 was written with the rule extractor in mind. Real conversations are
# not: two friends talk about their weekend, a race, a new job, and the detail a later question needs is
# said in passing, by either of them, in words no rule was written for. Give this notebook a real data set
# you downloaded (`data`: a REALTALK folder or chat, a BEAM folder; `memkit data list` says where to get
# them) and it runs on that conversation; without one it runs on the realistic generated suite (`memkit
# generate --suite chats`): long chats between two named people, many dated sessions, and questions whose
# evidence is the turn where something was said. Its first line says which it ran on.
#
# **What you will see**: how little of that evidence the rule extractor turns into facts; how much the
# episodes (every past turn kept) and the lexical channel bring back; recall against the token budget for
# `window`, `summary`, `two-layer` and raw-turn retrieval (`rag:*`); what each layer adds (facts, profile,
# episodes, each switched off in turn); and a widget to pick a question and see which channel brought each
# line of the context in, its evidence marked.

# %% tags=["parameters"]
data = ""                 # a downloaded data set (REALTALK, BEAM, ...: memkit data list); "" for the generated suite
data_format = ""          # its format ("" guesses it from the path)
conversation = 0          # which conversation of it (the suite has 10)
budget = 400              # tokens for the comparisons below
budgets = [100, 200, 400, 800, 1200]
layer_budgets = [200, 400]  # budgets of the "what each layer adds" table
strategies = ["window", "summary", "two-layer:keyed", "rag:bm25", "rag:dense", "rag:hybrid"]
show_widgets = True
result_path = ""

# %%
import pandas as pd
from memkit import FactStore, Memory, ReadOptions
from memkit.lab import viz
from memkit.eval import run
from memkit.eval.data import feed
from memkit.eval.datasets import chosen
from memkit.eval.metrics import evidence_recall
from memkit.read.recall import RecallOptions
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

convs, said = chosen(data, data_format, "chats", None if data else conversation + 1)
conv = convs[conversation]
print(f"{said}: conversation {conversation} ({conv.id})")
speakers = sorted({t.speaker or t.role for s in conv.sessions for t in s.turns})
print(f"{' and '.join(speakers)}: {len(conv.sessions)} sessions, "
      f"{sum(len(s.turns) for s in conv.sessions)} turns, {len(conv.probes)} questions")

# %% [markdown]
# A few turns, as they were said:

# %%
pd.DataFrame([{"session": s.id, "time": s.time, "speaker": t.speaker or t.role, "turn": t.content[:90]}
              for s in conv.sessions[:2] for t in s.turns[:4]])

# %% [markdown]
# ## Living through the conversation
# Every turn is observed with its speaker. Each one becomes an **episode** (kept, lexically indexed,
# embedded in batches); the rule extractor reads each named speaker's turns for durable facts.

# %%
store = FactStore.ephemeral()
memory = Memory(store=store)
turns = feed(memory, conv)
facts = store.get(conv.user_id)
print(turns, "turns observed;", len(facts), "facts extracted;", len(store.episodes(conv.user_id)), "episodes kept")

# %% [markdown]
# ## What the rule extractor misses
# For each question, its evidence turns, and whether any fact was extracted from them:

# %%
from_facts = {s for f in facts for s in f.source}
rows = [{"type": p.type, "question": p.question, "evidence": conv.turn(e).content[:70], "became a fact": e in from_facts}
        for p in conv.probes for e in p.evidence]
evidence = pd.DataFrame(rows)
print(f"{evidence['became a fact'].mean():.0%} of the evidence turns became a fact")
evidence.head(8)

# %% [markdown]
# ## What episodes and the lexical channel recover
# The same memory, read four ways at the same budget (each a `Memory` over the same store, so nothing is
# written twice): facts only; facts and episodes by meaning only (dense); by shared words only (lexical:
# BM25, tantivy, over facts and turns); and both channels fused by reciprocal rank (the default).

# %%
readers = {
    "facts only": Memory(store=store, read=ReadOptions(episodes=False)),
    "+ episodes, dense": Memory(store=store, read=ReadOptions(recall=RecallOptions(channels=("dense",)))),
    "+ episodes, lexical": Memory(store=store, read=ReadOptions(recall=RecallOptions(channels=("lexical",)))),
    "+ episodes, hybrid": memory,
}
recall = pd.DataFrame([{"reader": name, "type": p.type, "question": p.question,
                        "evidence_recall": evidence_recall(m.context(conv.user_id, f"ask-{p.id}", p.question, budget, now=p.time),
                                                           conv, p.evidence)}
                       for name, m in readers.items() for p in conv.probes if p.evidence])
table = recall.pivot_table(index="reader", columns="type", values="evidence_recall", sort=False)
table["all"] = recall.groupby("reader", sort=False)["evidence_recall"].mean()
table.round(2)

# %% [markdown]
# ## Recall against the budget
# The strategies of notebook 7 on this chat, plus retrieval over the raw turns at equal tokens (`rag:bm25`,
# `rag:dense`, `rag:hybrid`), asked every question at each budget. A context that carries less evidence
# than plain BM25 over the raw turns at the same budget is a regression, whatever else it does.

# %%
results, summary, _ = run([conv], strategies, budget=budgets, per_turn_tokens=False)
curve = summary[summary["type"] == "all"].pivot_table(index="strategy", columns="budget",
                                                      values="evidence_recall", sort=False)
curve.round(2)

# %%
# NBVAL_IGNORE_OUTPUT

viz.recall_vs_budget(summary)

# %% [markdown]
# ## What each layer adds
# Two-layer memory on the same questions with one layer switched off at a time: *without facts* (no
# recalled facts, no profile block), *without the profile* (no profile block), *without episodes* (no past
# turns: the facts, the profile and this session only), beside raw retrieval. The first row is two-layer
# memory's own evidence recall; every other row is the variant minus it, with a 95% interval (here over the
# questions of one conversation; docs/benchmarks.md has the table over whole real data sets, where the
# interval is over conversations). A layer earns its tokens where switching it off lowers the numbers.

# %%
from memkit.eval import layers

layer_table = layers.table(layers.measure([conv], budgets=layer_budgets))
layers.frame(layer_table, "evidence_recall", digits=2)

# %% [markdown]
# The same for answer-in-context (the gold answer's words are in the context):

# %%
layers.frame(layer_table, "answer_in_context", digits=2)

# %% [markdown]
# ## Which channel brought each line in
# Pick a question: every line of the context, the part it belongs to (facts, episodes, summary, turns),
# the session it was said in and its date, why it is there (`dense #2 + lexical #1`: its rank in each
# channel; `subject`: the person the question names; `profile`: the user's most important facts), its
# `rank` on the read's one list of facts and episodes, and whether it is one of the question's evidence
# turns (marked ✔ and shaded). "lines in" switches between the context's order (facts, then episodes by
# session and date) and the read's rank order. The explorer opens on the first question whose evidence the
# fused read carries at this budget and that no fact answers (an episode does: what this notebook is
# about); the dropdown holds the others, misses included.
#
# The widget below is stored with the notebook: it shows on open, and comes alive (answers the dropdown
# and the slider) once its cell runs in a live kernel.

# %%
hybrid = recall[recall["reader"] == "+ episodes, hybrid"]
answered = hybrid[hybrid["evidence_recall"] == 1]
print(f"{len(answered)} of {len(hybrid)} questions have all their evidence in the {budget}-token context; "
      f"{(hybrid['evidence_recall'] == 0).sum()} have none of it")
by_episode = [p.question for p in conv.probes
              if p.question in set(answered["question"]) and not set(p.evidence) & from_facts]
start = (by_episode or list(answered["question"]) or list(hybrid["question"]))[0]
print("the explorer opens on:", start)

# %%
# NBVAL_IGNORE_OUTPUT

from memkit.lab.widgets import ContextExplorer

questions = [(p.question, p.evidence) for p in conv.probes if p.evidence]
explorer = ContextExplorer(memory, conv.user_id, questions, budget=budget, display=show_widgets, start=start)

# %% [markdown]
# The same account for that question, as a table (what the widget shows).
#
# **Why a speaker's name pulls short lines up.** Every episode is indexed as `Speaker: words`, so a
# question that names a person ("What instrument does Sam play?") shares the name with every line that
# person said, and BM25 favours the shortest of them ("Sam: Ugh, Mondays."). The read now knows who the
# question is about: when it names exactly one of the people whose turns it found (or a name they gave
# themselves, "I'm Kate"), their turns get a ranking of their own in the fusion (`subject #n` in `why`,
# and a line in the notes), which puts their lines with the question's other words above their small talk;
# in real two-person chats nearly every evidence turn of such a question is the named person's own
# (`docs/decisions.md`). And both channels search the question without the names it gives (one person or
# several): the ranking carries them. `RecallOptions(subject_words=True)` keeps the names in both queries,
# `RecallOptions(dense_names=True)` in the dense one.

# %%
first = next(p for p in conv.probes if p.question == start)
viz.context_table(memory.context(conv.user_id, "table", first.question, budget, now=first.time),
                  evidence=first.evidence)[ContextExplorer.COLUMNS].head(12)

# %%
if result_path:
    curve.reset_index().to_csv(result_path, index=False)
