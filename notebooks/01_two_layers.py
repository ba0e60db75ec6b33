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
# # 1. Two layers: Tuesday's preference on Friday
#
# On Tuesday a user says *"I prefer metric units"*. On Friday, in a new session, they ask how far to run.
# An agent that only has this session's turns answers in miles; an agent with two memory layers has the
# preference in Friday's context.
#
# **What you will see**: the same Friday question answered from two contexts (without and with memory), the
# two layers side by side, where each fact came from, and a live *layer inspector* you can type into.
# Everything runs offline: no API key, no network.

# %% tags=["parameters"]
budget = 400          # tokens for Friday's context
LLM = False           # True: extract and summarise with the endpoint in MEMKIT_LLM_* (see docs/usage.md, "Configuration")
show_widgets = True   # False in headless runs: build the widgets without drawing them
result_path = ""      # papermill sweeps: where to write this notebook's result table (CSV)

# %%
import pandas as pd
from memkit import Memory, Settings
from memkit.lab import demo, viz
from memkit.lab.widgets import LayerInspector
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

memory = Memory.from_settings(Settings.from_env()) if LLM else Memory()
print(type(memory.extractor).__name__, "|", type(memory.store.embedder).__name__, "|", memory.policy)

# %% [markdown]
# ## Tuesday
# The user's turns on Tuesday (the assistant's replies sit in between).

# %%
pd.DataFrame(demo.TUESDAY, columns=["role", "content"])

# %% [markdown]
# `demo.play` feeds Tuesday to `memory.observe`, ends the session (its episodic layer is discarded), then opens Friday's session and builds the context for its first turn.

# %%
memory, friday, without = demo.play(memory, budget=budget)

# %% [markdown]
# ## Friday without memory
# All an agent without the semantic layer has is Friday's own turn:

# %%
for m in without.messages:
    print(f"[{m['role']}] {m['content']}")

# %% [markdown]
# ## Friday with two layers
# The semantic layer contributes what it knows about the user; the episodic layer the newest turn:

# %%
for m in friday.messages:
    print(f"[{m['role']}] {m['content']}")

# %%
print("metric preference in Friday's context:", "metric" in friday.text.lower())
print("...and without memory:", "metric" in without.text.lower())

# %% [markdown]
# ## Sending it to a model
# The agent loop is four calls: observe the user's turn, build the context, send `context.messages` to any
# chat model, observe its answer (`examples/agent_loop.py` runs the loop end to end). With `LLM = True` and
# `MEMKIT_LLM_*` set, this cell asks your endpoint for Friday's answer; offline it says what it would send.

# %%
model = Settings.from_env().chat_model() if LLM else None
messages = [{"role": "system", "content": "You are a running coach. Use what you know about the user."},
            *friday.messages]
if model is None:
    print(f"offline: {len(messages)} messages ({friday.tokens} tokens of memory) would go to the model")
else:
    answer = model.complete(messages)
    memory.observe(demo.USER, "friday", "assistant", answer)
    print(answer)

# %% [markdown]
# ## The semantic layer
# Only durable statements became facts: the hot weather on Tuesday did not. Each fact keeps the turn it came from.

# %%
print(memory.profile(demo.USER))

# %%
viz.events_table(memory.store.history(demo.USER))[["event", "key", "after", "source"]]

# %% [markdown]
# ## What went into Friday's context, and why
# The account lists every item with its part and why it got in: recalled facts with the channels that found them and their ranks (*lexical* shared words, *dense* similarity above the floor), *profile* facts as the user's profile block (the rest of their facts, most important first, within `profile_tokens`), and *episodes*: Tuesday's turns themselves, under their session date. "How far should my long run be" is not similar to "metric units": the preference arrives through the profile.

# %%
viz.context_table(friday).round(2)

# %%
pd.DataFrame(friday.account())

# %%
# NBVAL_IGNORE_OUTPUT

buf = memory.session(demo.USER, "friday")
viz.layers(buf.window, buf.summary.text, memory.store.get(demo.USER))

# %%
# NBVAL_IGNORE_OUTPUT

viz.budget_breakdown(friday)

# %% [markdown]
# ## Try it: the layer inspector
# Type a turn as the user (try *"Actually, switch me to miles."* or *"我叫王磊"*) and watch the window and the facts change.
#
# (The widget is stored with the notebook: it shows on open, and comes alive once this cell runs in a live kernel.)

# %%
# NBVAL_IGNORE_OUTPUT

inspector = LayerInspector(memory, demo.USER, "friday", display=show_widgets)

# %% [markdown]
# The inspector is an ordinary object, so a cell can drive it too: a change of mind updates the old fact instead of adding a second one.

# %%
events = inspector.send("Actually, switch me to imperial units from now on.")
print([(e.kind.value, e.after.text if e.after else "") for e in events])
print(memory.profile(demo.USER))

# %%
table = pd.DataFrame([{"budget": budget, "metric_with_memory": "metric" in friday.text.lower(),
                       "metric_without_memory": "metric" in without.text.lower(), "friday_tokens": friday.tokens}])
if result_path:
    table.to_csv(result_path, index=False)
table
