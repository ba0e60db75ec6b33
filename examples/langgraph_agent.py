"""A LangGraph agent with the seed's shape: LangGraph's checkpointer keeps the thread, memkit keeps what outlives
it (facts and past turns), and the graph's store is memkit's too.

    pip install 'memkit-lab[langgraph]'
    MEMKIT_LLM_BASE_URL=http://127.0.0.1:8080/v1 MEMKIT_LLM_MODEL=local python examples/langgraph_agent.py [FOLDER]

Any OpenAI-compatible endpoint answers (llama.cpp's server of the `[local-llm]` extra, Ollama, vLLM, OpenAI).
Three nodes: `recall` builds the turn's context with `Memory.context` (the user's profile, the facts and past
turns that answer the question, this session's window), `answer` sends it to the model, `remember` observes
the question and the answer. The thread (its messages) is checkpointed in FOLDER/threads.sqlite3 by
LangGraph's SQLite saver; memkit's store is FOLDER/memory. Two threads: the second one, a new thread with an
empty checkpoint, still knows what the first one was told.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from memkit import FactStore, Memory, Settings
from memkit.integrations.langgraph import MemkitStore

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Use what you know about the user."}


class State(TypedDict):
    user_id: str
    question: str
    messages: Annotated[list[Any], add_messages]  # the thread, as the checkpointer keeps it
    context: list[dict[str, str]]  # what memkit gave this turn


def build(memory: Memory, model: Any, checkpointer: Any) -> Any:
    """The graph: recall -> answer -> remember, with memkit's store as the graph's long-term store."""

    def recall(state: State, config: RunnableConfig) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        memory.observe(state["user_id"], thread, "user", state["question"])
        ctx = memory.context(state["user_id"], thread, state["question"], budget=600)
        return {"context": list(ctx.messages), "messages": [{"role": "user", "content": state["question"]}]}

    def answer(state: State) -> dict[str, Any]:
        reply = model.complete([SYSTEM, *state["context"]])
        return {"messages": [{"role": "assistant", "content": reply}]}

    def remember(state: State, config: RunnableConfig) -> dict[str, Any]:
        memory.observe(state["user_id"], config["configurable"]["thread_id"], "assistant",
                       state["messages"][-1].content)
        return {}

    graph = StateGraph(State)
    for name, node in (("recall", recall), ("answer", answer), ("remember", remember)):
        graph.add_node(name, node)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "remember")
    graph.add_edge("remember", END)
    return graph.compile(checkpointer=checkpointer, store=MemkitStore(memory.store))


def main(folder: Path) -> int:
    model = Settings.from_env().chat_model()
    if model is None:
        print("set MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (an OpenAI-compatible endpoint) to run the agent",
              file=sys.stderr)
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    with Memory(store=FactStore.persistent(str(folder / "memory"))) as memory, \
            sqlite3.connect(folder / "threads.sqlite3", check_same_thread=False) as db:
        app = build(memory, model, SqliteSaver(db))
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
