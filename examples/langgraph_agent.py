"""A LangGraph agent with the seed's shape: LangGraph's checkpointer keeps the thread, memkit keeps what outlives
it (facts and past turns), and the graph's store is memkit's too.

    pip install 'memkit-lab[langgraph]'
    MEMKIT_LLM_BASE_URL=http://127.0.0.1:8080/v1 MEMKIT_LLM_MODEL=local python examples/langgraph_agent.py [FOLDER]

Any OpenAI-compatible endpoint answers (llama.cpp's server of the `[local-llm]` extra, Ollama, vLLM, OpenAI).
The graph is `memkit.integrations.langgraph.agent`: `recall` builds the turn's context with `Memory.context`
(the user's profile, the facts and past turns that answer the question, this session's window), `answer`
sends it to the model, `remember` observes the answer. The thread (its messages) is checkpointed in FOLDER/threads.sqlite3 by
LangGraph's SQLite saver; memkit's store is FOLDER/memory. Two threads: the second one, a new thread with an
empty checkpoint, still knows what the first one was told.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from memkit import FactStore, Memory, Settings
from memkit.integrations.langgraph import agent


def main(folder: Path) -> int:
    model = Settings.from_env().chat_model()
    if model is None:
        print("set MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (an OpenAI-compatible endpoint) to run the agent",
              file=sys.stderr)
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    with Memory(store=FactStore.persistent(str(folder / "memory"))) as memory, \
            sqlite3.connect(folder / "threads.sqlite3", check_same_thread=False) as db:
        app = agent(memory, model.complete, SqliteSaver(db))
        for thread, question in (("tue", "I prefer metric units, and I'm training for a half marathon."),
                                 ("fri", "How far should my long run be this weekend?")):
            config = {"configurable": {"thread_id": thread}}
            out = app.invoke({"user_id": "u1", "question": question}, config)
            print(f"[{thread}] user: {question}\n[{thread}] assistant: {out['messages'][-1].content}")
            kept = app.get_state(config).values["messages"]
            print(f"[{thread}] the checkpointer holds {len(kept)} messages of this thread; memkit holds, of the user, "
                  f"facts: {len(memory.store.profile('u1'))}, past turns: {len(memory.store.episodes('u1'))}\n")
            memory.end_session("u1", thread)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="memkit-agent-"))))
