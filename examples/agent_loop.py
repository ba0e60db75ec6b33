"""The agent loop with a real model: observe the user's turn, build the context, send it, observe the answer.

    MEMKIT_LLM_BASE_URL=http://localhost:11434/v1 MEMKIT_LLM_MODEL=qwen2.5:7b python examples/agent_loop.py

Any OpenAI-compatible endpoint works (Ollama, llama.cpp's server, vLLM, OpenAI, DeepSeek): memkit reads it
from the environment (docs/usage.md, "Configuration"). Memory itself stays offline (MiniLM, rules) unless
MEMKIT_EMBED_* names an embeddings endpoint; with no chat model configured the script says so and stops.
"""

from __future__ import annotations

import sys

from memkit import Memory, Settings

settings = Settings.from_env()
model = settings.chat_model()
if model is None:
    sys.exit("set MEMKIT_LLM_BASE_URL and MEMKIT_LLM_MODEL (an OpenAI-compatible endpoint) to run the loop")

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Use what you know about the user."}
conversation = [("tue", "I prefer metric units, and I'm training for a half marathon."),
                ("fri", "How far should my long run be this weekend?")]

with Memory() as memory:  # rules extract the facts; pass Memory.from_settings() to let the model do it
    for session, text in conversation:
        memory.observe("u1", session, "user", text)                             # 1. observe the user's turn
        ctx = memory.context("u1", session, text, budget=600)                   # 2. build the context
        answer = model.complete([SYSTEM, *ctx.messages])                         # 3. send it
        memory.observe("u1", session, "assistant", answer)                      # 4. observe the answer
        print(f"[{session}] user: {text}\n[{session}] assistant: {answer}\n")
        memory.end_session("u1", session)
    print("what memory held for Friday:", [row["part"] for row in ctx.account() if row["items"]])
