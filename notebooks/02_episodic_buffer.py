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
# # 2. The episodic buffer: a window in tokens and a running summary
#
# The episodic layer holds this session's turns. It is read every turn, so it must stay small: a window of
# the newest turns, bounded in **tokens** (counted with tiktoken), and a running summary of the turns that
# fell out of it.
#
# **What you will see**: token counts per turn, the window sliding over a long session, what a plain sliding
# window loses, what the extractive summary keeps, and that the newest turn is never summarised away.

# %% tags=["parameters"]
window_tokens = 300    # the window's budget
summary_tokens = 120   # the running summary's budget
conversation = 0       # which conversation of the built-in suite to replay as one long session
turns_to_play = 40
result_path = ""

# %%
import inspect
import pandas as pd
from memkit import EpisodicBuffer, ExtractiveSummarizer
from memkit.models import tokens
from memkit.lab import viz
from memkit.eval import builtin_suite
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

# %% [markdown]
# ## Tokens, not characters
# Budgets are counted with tiktoken's `cl100k_base` (and `o200k_base`), loaded from files shipped in a package, so this works offline.

# %%
samples = ["I prefer metric units.", "我喜欢公制单位", "🏃‍♀️🔥", "def f(x): return x ** 2"]
pd.DataFrame([{"text": s, "characters": len(s), "cl100k_base": tokens.count(s),
               "o200k_base": tokens.count(s, "o200k_base")} for s in samples])

# %% [markdown]
# ## A long session
# We replay the first turns of a conversation from the built-in suite as one long session.

# %%
conv = builtin_suite("first", conversations=conversation + 1)[conversation]
turns = [t for s in conv.sessions for t in s.turns][:turns_to_play]
print(len(turns), "turns,", sum(tokens.count(t.content) for t in turns), "tokens in all")

# %%
buf = EpisodicBuffer("long", conv.user_id, window_tokens=window_tokens, summary_tokens=summary_tokens)
rows = []
for t in turns:
    buf.append(t.role, t.content, turn_id=t.id)
    rows.append({"turn": t.id, "role": t.role, "turn_tokens": buf.turns[-1].tokens,
                 "window_tokens": buf.window_tokens_used, "window_turns": len(buf.window),
                 "summary_tokens": buf.summary.tokens, "summarised_turns": len(buf.summary.turn_ids)})
trace = pd.DataFrame(rows)
trace.tail(8)

# %%
# NBVAL_IGNORE_OUTPUT

viz.episodic_trace(trace)

# %% [markdown]
# ## What a plain sliding window loses
# Every turn that left the window is gone for a sliding window. The user's durable statements among them:

# %%
left = buf.turns[: buf.window_start]
lost_facts = [t for t in left if t.role == "user" and any(op["turn"] == t.id for op in conv.ops)]
pd.DataFrame([{"turn": t.id, "content": t.content} for t in lost_facts])

# %% [markdown]
# ## What the running summary keeps
# The offline summarizer is extractive: it keeps the sentences that carry facts, decisions and constraints, and drops small talk, within its token budget.

# %%
print(buf.summary.text)
print("---")
print(buf.summary.tokens, "tokens, covering", len(buf.summary.turn_ids), "turns")

# %%
kept = [t.id for t in lost_facts if any(s in buf.summary.text for s in t.content.split(". "))]
print(f"{len(kept)} of {len(lost_facts)} fact-bearing turns that left the window survive in the summary")

# %%
print(inspect.getsource(ExtractiveSummarizer.fold))

# %% [markdown]
# ## The newest turn is never lost
# Even a turn larger than the whole window stays: the window keeps at least the newest turn.

# %%
huge = buf.append("user", "Here is my whole log file: " + "ERROR timeout " * 400)
print("window:", [t.id for t in buf.window] == [huge.id], "| newest turn tokens:", huge.tokens)
print("summarised?", huge.id in buf.summary.turn_ids)

# %%
table = pd.DataFrame([{"window_tokens": window_tokens, "summary_tokens": summary_tokens,
                       "fact_turns_left_window": len(lost_facts), "kept_in_summary": len(kept)}])
if result_path:
    table.to_csv(result_path, index=False)
table
