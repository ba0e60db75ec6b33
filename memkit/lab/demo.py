"""The seeds' story, played offline: Tuesday the user states a preference, Friday a new session must use it."""

from __future__ import annotations

from datetime import datetime

from ..memory import Memory
from ..types import Context
from ..validate import epoch

USER = "demo-user"
TUESDAY = [
    ("user", "Hi! I'm training for a half marathon this spring."),
    ("assistant", "Great goal. How can I help?"),
    ("user", "I prefer metric units, so give me distances in kilometres."),
    ("assistant", "Noted: kilometres it is."),
    ("user", "My name is Lena and I'm a backend engineer, so mornings are my only free time."),
    ("assistant", "Morning runs then. Let's build a plan."),
    ("user", "It was really hot yesterday, I barely slept."),
    ("assistant", "Rest matters too."),
]
FRIDAY_QUESTION = "How far should my long run be this Saturday?"


def _ts(day: str) -> float:
    return epoch(datetime.fromisoformat(day))


def play(memory: Memory | None = None, budget: int = 400) -> tuple[Memory, Context, Context]:
    """Play Tuesday then Friday; return the memory, Friday's two-layer context and a no-memory context."""
    memory = memory or Memory()
    t0 = _ts("2026-03-03T09:00:00")
    for i, (role, text) in enumerate(TUESDAY):
        memory.observe(USER, "tuesday", role, text, turn_id=f"tue:{i + 1}", time=t0 + 60 * i)
    memory.end_session(USER, "tuesday")  # the episodic layer of Tuesday is gone
    memory.observe(USER, "friday", "user", FRIDAY_QUESTION, turn_id="fri:1", time=_ts("2026-03-06T08:00:00"))
    friday = memory.context(USER, "friday", FRIDAY_QUESTION, budget=budget)
    without = Memory(store=None)  # a fresh memory: what an agent without the semantic layer sees
    without.observe(USER, "friday", "user", FRIDAY_QUESTION, turn_id="fri:1")
    return memory, friday, without.context(USER, "friday", FRIDAY_QUESTION, budget=budget)


def render(memory: Memory, friday: Context, without: Context) -> str:
    """A plain-text report of both layers and Friday's context."""
    out = ["== Tuesday: " + " / ".join(t for r, t in TUESDAY if r == "user"), "",
           "== Semantic layer (durable facts, Chroma)", memory.profile(USER), "",
           "== History of changes"]
    out += [f"  {e.kind.value:<10} {e.after.text if e.after else e.reason}  (from {', '.join(e.source)})"
            for e in memory.store.history(USER)]
    buf = memory.session(USER, "friday")
    out += ["", "== Episodic layer, Friday's session (window + summary)",
            *(f"  {t.id} {t.role}: {t.content} [{t.tokens} tok]" for t in buf.window),
            f"  summary: {buf.summary.text or '(empty: nothing has left the window yet)'}", "",
            f"== Context Friday's first turn receives ({friday.tokens}/{friday.budget} tokens)"]
    out += [f"  [{m['role']}] {m['content']}" for m in friday.messages]
    out += ["", "  account: " + ", ".join(f"{p['part']}={p['tokens']} tok" for p in friday.account())]
    out += [f"    fact {i['text']}  <- {i['why']}" + (f" (similarity {i['similarity']:.2f})" if i["similarity"] is not None else "")
            for p in friday.parts if p.name == "facts" for i in p.items]
    out += [f"    episode {i['turn_id']} ({i['speaker']})  <- {i['why']}"
            for p in friday.parts if p.name == "episodes" for i in p.items]
    out += ["",
            "== Without the semantic layer, Friday's context is only:"]
    out += [f"  [{m['role']}] {m['content']}" for m in without.messages]
    has = "metric" in friday.text.lower()
    out += ["", f"metric preference in Friday's context: {'YES' if has else 'NO'}"
            f" (without memory: {'YES' if 'metric' in without.text.lower() else 'NO'})"]
    return "\n".join(out)
