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
# # 6. Isolation: two users, the same words, no leaks
#
# Every read and write of the semantic layer names one `user_id`, and `FactStore` enforces it: one Chroma
# collection per user (named by a hash of the id), no API that searches across users, and refusals for
# anything that tries.
#
# **What you will see**: two users saying the same thing and each finding only their own facts, look-alike
# ids, and what the store refuses.

# %% tags=["parameters"]
result_path = ""

# %%
import pandas as pd
from memkit import Memory, MemkitError
from memkit.types import Fact
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

memory = Memory()
for user, session, text in [("alice", "a1", "I prefer metric units. My sister Ann is a nurse."),
                            ("bob", "b1", "I prefer imperial units. My sister Ann is a pilot.")]:
    events = memory.observe(user, session, "user", text)
    print(user, [e.kind.value + " " + e.after.text for e in events])

# %%
for user in ["alice", "bob"]:
    print(user, "->", [h.fact.text for h in memory.search(user, "Which units and what does my sister do?")])

# %% [markdown]
# Each user's profile holds only what that user said:

# %%
print(memory.profile("alice"))
print(memory.profile("bob"))

# %% [markdown]
# ## Look-alike ids
# Ids that are prefixes of each other, differ by case, or carry quotes and operators are different users:

# %%
store = memory.store
lookalikes = ["alice2", "alic", "ALICE", "alice' OR '1'='1", '{"$ne": "bob"}']
pd.DataFrame([{"user_id": u, "facts": len(store.get(u)),
               "search finds": len(store.search(u, "units", min_score=-1.0))} for u in lookalikes])

# %% [markdown]
# ## The layout
# Each user's facts and past turns (episodes) live in their own collection, named by a hash of the id (Chroma names allow only `[a-zA-Z0-9._-]`), so no filter can reach across:

# %%
# the store's namespace prefix is random for in-memory stores; the hash part is the user's
pd.DataFrame([{"user_id": u, "collection": store.collection_name(u).removeprefix(store.vectors.namespace + "-")}
              for u in ["alice", "bob", "alice2"]])

# %% [markdown]
# ## What the store refuses

# %%
attempts = {
    "empty user_id": lambda: store.search("", "units"),
    "None user_id": lambda: store.get(None),
    "where naming another user": lambda: store.search("bob", "units", where={"user_id": "alice"}),
    "nested where naming a user": lambda: store.get("bob", where={"$or": [{"key": "user.units"}, {"user_id": "alice"}]}),
    "writing alice's fact as bob": lambda: store.upsert("bob", [Fact(id="x", user_id="alice", text="hi")]),
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

# %% [markdown]
# The episodic layer is isolated too: a session id is its user's own. When bob uses the id of alice's
# session ("a1"), he gets a session of his own under that id; alice's window does not change:

# %%
memory.observe("bob", "a1", "user", "Hello, this is bob's own a1.")
print("alice a1:", [t.content for t in memory.session("alice", "a1").turns])
print("bob a1:  ", [t.content for t in memory.session("bob", "a1").turns])

# %% [markdown]
# ## Deleting touches one user only

# %%
store.delete("bob", [f.id for f in store.get("alice")])   # alice's ids, in bob's scope: matches nothing
print("alice still has", len(store.get("alice")), "facts")
store.drop_user("bob")
print("bob has", len(store.get("bob")), "facts; alice has", len(store.get("alice")))

# %%
if result_path:
    refusals.to_csv(result_path, index=False)
