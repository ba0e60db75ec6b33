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
# # 4. Conflicts and upserts: when the user changes their mind
#
# A fact store that only adds piles up contradictions ("metric" and "miles" both current). memkit plans
# every write as explicit events (ADD / UPDATE / DELETE / NOOP / INVALIDATE) under a **conflict policy**,
# then applies them, keeping a history.
#
# **What you will see**: one conversation replayed under each policy, the two known failures of a pure
# similarity threshold, versions that stay queryable *as of* a time, and a conflict timeline you can scrub.

# %% tags=["parameters"]
policy = "temporal"     # the policy shown in detail below
threshold = 0.85        # the similarity policy's overwrite threshold (the seeds' value)
LLM = False             # True: add the llm policy, decided by the endpoint in MEMKIT_LLM_*
show_widgets = True
result_path = ""

# %%
import pandas as pd
from memkit import FactStore, RuleExtractor, Settings
from memkit.write import reconcile
from memkit.lab import viz
from memkit.lab.widgets import ConflictTimeline
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

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

# %% [markdown]
# ## Plan first, apply second
# `reconcile.plan` returns the events a policy would apply, and writes nothing:

# %%
store = FactStore.ephemeral()
rules = RuleExtractor()
reconcile.apply(store, "u", reconcile.plan("keyed", store, "u", rules.extract(turns[0], ("t1",)), t=1000.0))
plan = reconcile.plan("keyed", store, "u", rules.extract(turns[3], ("t4",)), t=1003.0)
viz.events_table(plan)[["event", "key", "before", "after", "reason"]]

# %%
print("still stored:", [f.text for f in store.get("u")])

# %% [markdown]
# ## The same conversation under every policy

# %%
model = Settings.from_env().chat_model() if LLM else None
options = {"similarity": {"threshold": threshold}, "llm": {"model": model}}  # typed: a misspelt option fails
stores, events = {}, {}
for p in policies:
    s = FactStore.ephemeral()
    events[p] = []
    for i, text in enumerate(turns):
        planned = reconcile.plan(p, s, "u", rules.extract(text, (f"t{i + 1}",)), 1000.0 + i, **options.get(p, {}))
        reconcile.apply(s, "u", planned)
        events[p] += planned
    stores[p] = s

summary = pd.DataFrame([{"policy": p, "current facts": len(stores[p].get("u")),
                         "unit facts": sum(f.key == "user.units" for f in stores[p].get("u")),
                         **{k: sum(e.kind.value == k for e in events[p]) for k in ["ADD", "UPDATE", "INVALIDATE", "NOOP"]}}
                        for p in policies])
summary

# %% [markdown]
# ## Failure 1 of the similarity threshold: a reworded contradiction stays
# *"I don't want metric units anymore, give me miles"* is not similar enough to *"I prefer metric units"* to cross the threshold, so both stay current:

# %%
viz.facts_table(stores["similarity"].get("u"))[["key", "text"]]

# %% [markdown]
# ## Failure 2: different facts that read alike overwrite each other
# Hiking and skiing, the work and the home laptop: above the threshold, the newer fact overwrote the older.

# %%
overwrites = [e for e in events["similarity"] if e.kind.value == "UPDATE"]
pd.DataFrame([{"before": e.before.text, "after": e.after.text, "reason": e.reason} for e in overwrites])

# %% [markdown]
# The `keyed` policy reads the slot instead: same key, same slot. It keeps all four hobbies and laptops and leaves one units fact:

# %%
viz.facts_table(stores["keyed"].get("u"))[["key", "text"]]

# %% [markdown]
# ## Versions and history
# Under `temporal`, a superseded fact gets `valid_to` and stays queryable *as of* a time; nothing is deleted.

# %%
s = stores[policy]
print("now:    ", sorted(f.text for f in s.get("u") if f.key == "user.units"))
print("as of t3:", sorted(f.text for f in s.as_of("u", 1002.5) if f.key == "user.units"))

# %%
viz.events_table(s.history("u"))[["event", "key", "before", "after", "source"]]

# %%
# NBVAL_IGNORE_OUTPUT

viz.fact_timeline(s.get("u", include_superseded=True), until=1000.0 + len(turns))

# %% [markdown]
# ## Try it: the conflict timeline
# Pick a policy and scrub through the conversation.
#
# (The widget is stored with the notebook: it shows on open, and comes alive once this cell runs in a live kernel.)

# %%
# NBVAL_IGNORE_OUTPUT

timeline = ConflictTimeline(turns, policies=[p for p in policies if p != "llm"], display=show_widgets)

# %%
table = summary
if result_path:
    table.to_csv(result_path, index=False)
