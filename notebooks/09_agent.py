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
# # 9. memkit in an agent: the thread in LangGraph's checkpointer, the user in memkit
#
# Agent frameworks keep a conversation's **thread** in a checkpointer: LangGraph saves the graph's state
# (its messages) per `thread_id`, so a thread can stop and resume. A new thread starts empty. What a user
# said in another thread (Tuesday's "metric", Friday's question) is not the checkpointer's to keep: that is
# memory's job. This notebook builds the seeds' agent (`memkit.integrations.langgraph.agent`): a node that
# builds the turn's context with `Memory.context`, one that answers, one that observes the answer; a SQLite
# checkpointer for the threads, memkit for the user.
#
# **What you will see**: two threads; after them, what the checkpointer holds (each thread's messages) beside
# what memkit holds (the user's facts and every past turn), and Friday's answer using Tuesday's preference.
#
# Offline by default: the answering node is `quoting`, a stand-in that answers with the context's line that
# shares most words with the question (it is not a model). `LLM = True` sends the context to the model
# `MEMKIT_LLM_*` configures instead.

# %% tags=["parameters"]
LLM = False
budget = 600
show_widgets = True
result_path = ""

# %%
import sqlite3
import tempfile
from pathlib import Path

import pandas as pd
from langgraph.checkpoint.sqlite import SqliteSaver

from memkit import FactStore, Memory, Settings
from memkit.integrations.langgraph import agent, quoting
from memkit.lab.widgets import ThreadsAndMemory

pd.set_option("display.max_colwidth", 110)
folder = Path(tempfile.mkdtemp(prefix="memkit-agent-"))
model = Settings.from_env().chat_model() if LLM else None
memory = Memory(store=FactStore.persistent(str(folder / "memory")))
threads_db = sqlite3.connect(folder / "threads.sqlite3", check_same_thread=False)
app = agent(memory, model.complete if model else quoting, SqliteSaver(threads_db), budget=budget)

# %% [markdown]
# ## Two threads
# Tuesday's thread states a preference; Friday's is a new thread, whose checkpoint starts empty.

# %%
conversation = [("tue", "I prefer metric units, and I'm training for a half marathon."),
                ("tue", "My long runs are on Sunday mornings."),
                ("fri", "Which units do I prefer for distances?")]
answers = []
for thread, question in conversation:
    out = app.invoke({"user_id": "u1", "question": question}, {"configurable": {"thread_id": thread}})
    answers.append({"thread": thread, "user": question, "assistant": out["messages"][-1].content})
memory.end_session("u1", "tue")
pd.DataFrame(answers)

# %% [markdown]
# ## What each side holds
# The checkpointer holds each thread's messages, and nothing of the other thread; memkit holds the user:
# the facts it extracted, and every past turn of every thread as an episode.

# %%
def thread_messages(thread):
    state = app.get_state({"configurable": {"thread_id": thread}}).values
    return pd.DataFrame([{"role": m.type, "content": m.content} for m in state.get("messages", [])])


checkpointer = {t: thread_messages(t) for t in ("tue", "fri")}
facts = pd.DataFrame([{"fact": f.text, "key": f.key} for f in memory.store.profile("u1")])
episodes = pd.DataFrame([{"session": e.session_id, "speaker": e.speaker, "content": e.content}
                         for e in memory.store.episodes("u1")])
held = pd.DataFrame([{"where": "checkpointer", "what": f"thread {t}: messages", "count": len(m)}
                     for t, m in checkpointer.items()] +
                    [{"where": "memkit", "what": "facts of the user", "count": len(facts)},
                     {"where": "memkit", "what": "past turns of the user (episodes)", "count": len(episodes)}])
held

# %%
facts

# %% [markdown]
# Friday's thread alone, as the checkpointer has it, holds no preference; Friday's context came from memkit:

# %%
checkpointer["fri"]

# %%
ctx = memory.context("u1", "fri", "Which units do I prefer for distances?", budget=budget)
pd.DataFrame(ctx.account())

# %% [markdown]
# ## Side by side
# Pick a thread: the checkpointer's messages on the left, memkit's facts and episodes on the right.

# %%
if show_widgets:
    ThreadsAndMemory(checkpointer, {"facts": facts, "past turns (episodes)": episodes})

# %%
if result_path:
    held.to_csv(result_path, index=False)
memory.close()
threads_db.close()
