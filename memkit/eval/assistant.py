"""A user-assistant suite: one user asks an assistant for help over many dated sessions (memkit JSONL), from a seed.

Shaped like public user-assistant memory benchmarks, not like memkit's rules: most of each session is a task
unrelated to the user (a recipe, a script, an itinerary) and the assistant answers at length (300-800
tokens); the user states facts and preferences about themselves in passing, inside a request; some change
later (knowledge updates); some questions ask what the assistant itself said deep inside a long answer; and
temporal questions are asked at a stated question time ("two weeks ago"). Every probe carries its question
time and the exact evidence turn ids.

Written before any retrieval change for this shape, and never tuned against: the committed file is seed 0
(``data/assistant.jsonl``); choose options on other seeds (``memkit generate --suite assistant --seed 1``).
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from datetime import datetime, timedelta
from typing import Any

# ---- the tasks: a request and the sections of a long answer, with slots ---------------------------------------
DISHES = ["lentil soup", "mushroom risotto", "chickpea curry", "banana bread", "vegetable lasagna", "pad thai",
          "shakshuka", "minestrone", "falafel wraps", "spinach quiche"]
CODE = ["parse a CSV file and group rows by a column", "retry an HTTP request with exponential backoff",
        "read a large log file line by line", "deduplicate a list while keeping order",
        "schedule a job to run every night", "write unit tests for a date parser", "profile a slow function",
        "serialize dataclasses to JSON"]
TRIPS = ["Lisbon", "Kyoto", "Seville", "Edinburgh", "Vancouver", "Marrakesh", "Prague", "Oaxaca"]
GOALS = ["a first half marathon", "getting stronger at pull-ups", "a 10K under 50 minutes", "better mobility",
         "a sprint triathlon"]
TOPICS = ["how vaccines train the immune system", "why the sky is blue", "how a mortgage amortizes",
          "what inflation does to savings", "how noise-cancelling headphones work", "how compound interest works",
          "why bread dough rises", "how GPS finds your position"]
WRITING = ["a cover letter for a product manager role", "an email asking my landlord to fix the heating",
           "a toast for my friend's wedding", "a complaint to an airline about a lost bag",
           "a short bio for a conference program"]

GENERIC = [
    "A good rule of thumb is to change one thing at a time, so you can tell what actually made the difference.",
    "If something goes wrong, write down what you observed before you try to fix it; it saves time later.",
    "Most people get better results from a simple plan they follow than from a perfect plan they abandon.",
    "Keep notes as you go, because the details that seem obvious today are the first ones you forget.",
    "It also helps to set a small checkpoint halfway through, so a mistake costs an hour and not a day.",
    "Don't worry if the first attempt is rough; the second one is usually much better.",
    "When in doubt, start with the smallest version that works and improve it step by step.",
    "Budget a little more time than you think you need, since the last ten percent always takes longest.",
    "Ask for feedback early: a quick look from someone else catches what you have stopped seeing.",
    "Consistency matters more than intensity, especially in the first few weeks.",
]
SECTIONS: dict[str, list[tuple[str, list[str]]]] = {
    "recipe": [
        ("Ingredients", ["You will need {n} cups of stock, {m} cloves of garlic, an onion and a good pinch of salt.",
                         "Use {n} tablespoons of olive oil and about {m}00 grams of the main ingredient.",
                         "Fresh herbs make a big difference here; parsley or coriander both work well.",
                         "A squeeze of lemon at the end brightens everything up."]),
        ("Preparation", ["Chop the vegetables into even pieces so they cook at the same rate.",
                         "Rinse the grains until the water runs clear, then drain them well.",
                         "Toast the spices in a dry pan for a minute until they smell fragrant.",
                         "Let everything come to room temperature before you start cooking."]),
        ("Cooking", ["Simmer gently for {n}5 minutes, stirring every few minutes so nothing sticks.",
                     "Bring it to a boil, then lower the heat and cover it with a lid.",
                     "Taste as you go and adjust the salt near the end, not at the start.",
                     "If it gets too thick, add a splash of water or stock."]),
        ("Serving and storage", ["It keeps in the fridge for {n} days in a sealed container.",
                                 "Serve it with crusty bread or a simple green salad.",
                                 "It freezes well in portions, so it is worth making a double batch."]),
    ],
    "code": [
        ("The approach", ["The standard library already covers most of this, so you don't need an extra dependency.",
                          "Break the problem into a small function that does one thing and is easy to test.",
                          "Think about what should happen with empty input before you write the main loop."]),
        ("The code", ["Start with a function that takes the input as an argument instead of reading a global.",
                      "Use a context manager so the file is closed even if an exception is raised.",
                      "A dictionary keyed by the grouping column keeps the logic to a few lines.",
                      "Wrap the call in a loop with a counter and sleep for 2 ** attempt seconds between tries."]),
        ("Edge cases", ["Watch out for trailing whitespace and inconsistent line endings in the input.",
                        "Decide whether duplicates should raise an error or be skipped quietly.",
                        "Time zones are a classic source of bugs, so store everything in UTC."]),
        ("Testing", ["Write one test for the happy path and one for each edge case you listed.",
                     "pytest's tmp_path fixture gives each test its own folder for files.",
                     "Run the tests with the -x flag so you stop at the first failure."]),
    ],
    "travel": [
        ("Day 1", ["Start in the old town and walk without a plan for the first morning.",
                   "Have lunch at a market hall, where the locals eat, and try whatever is in season.",
                   "In the evening, find a viewpoint for the sunset; it is busy but worth it."]),
        ("Day 2", ["Spend the morning at the main museum and book tickets online to skip the queue.",
                   "Take a tram or bus out to a neighbourhood most tourists skip.",
                   "Keep the afternoon free for a long lunch and a rest."]),
        ("Day 3", ["Take a day trip by train to a smaller town nearby; it is about {n} hours each way.",
                   "Pack a light jacket, since evenings can be cool even in summer.",
                   "Leave time on the last day for souvenirs and a final favourite meal."]),
        ("Practical tips", ["A transit card for {n} days usually pays for itself after six rides.",
                            "Most places accept cards, but keep a little cash for small cafes.",
                            "Book the popular restaurants a few days ahead."]),
    ],
    "workout": [
        ("Weekly structure", ["Train {n} days a week and keep at least one full rest day.",
                              "Alternate hard and easy days so your body can adapt.",
                              "Every fourth week, cut the volume by a third to recover."]),
        ("Key sessions", ["One session a week should be longer and slower than feels necessary.",
                          "Add a short interval session: {n} rounds of three minutes hard, two minutes easy.",
                          "Strength work twice a week protects your joints and improves economy."]),
        ("Recovery", ["Sleep is the most underrated part of training; aim for eight hours.",
                      "Eat a proper meal with protein within a couple of hours after hard sessions.",
                      "If a pain gets worse during a session, stop and rest for a few days."]),
    ],
    "explain": [
        ("The short version", ["At its core, it comes down to a simple trade between two forces.",
                               "The everyday intuition is mostly right, with one important twist.",
                               "Scientists describe it with a model that is older than most people think."]),
        ("What actually happens", ["The process happens in stages, and each stage depends on the one before.",
                                   "Small differences at the start grow over time, which is why it surprises people.",
                                   "The key quantity is a ratio, not an absolute amount."]),
        ("A common misconception", ["Many people believe the effect is instant, but it builds up gradually.",
                                    "It is tempting to think more is always better, but there is a sweet spot.",
                                    "The popular explanation skips a step, which is where the confusion comes from."]),
    ],
    "writing": [
        ("Opening", ["Open with one sentence that says why you are writing, without apologising.",
                     "Address the reader by name if you know it; it sets a warmer tone."]),
        ("Body", ["Keep each paragraph to one point, and put the point in its first sentence.",
                  "Give one concrete example instead of three general claims.",
                  "Say what you would like to happen next and by when."]),
        ("Closing", ["Thank them for their time, and keep the sign-off simple.",
                     "Read it aloud once before sending; awkward sentences stand out immediately."]),
    ],
}
TASKS = [("recipe", "Can you give me a recipe for {x}?", DISHES), ("code", "How do I {x} in Python?", CODE),
         ("travel", "Can you plan a 3-day trip to {x} for me?", TRIPS),
         ("workout", "Can you make me a training plan for {x}?", GOALS),
         ("explain", "Can you explain {x} in simple terms?", TOPICS), ("writing", "Can you help me write {x}?", WRITING)]
FOLLOW_UPS = ["Thanks! Can you go into a bit more detail?", "That's helpful. What would you change if I'm short on time?",
              "Great, can you summarise the most important part again?", "Nice. Anything I should avoid?"]

# ---- the user's facts, said in passing inside a request -------------------------------------------------------
PETS = [("beagle", ["Pepper", "Biscuit", "Scout"]), ("tabby cat", ["Miso", "Juniper", "Olive"]),
        ("parrot", ["Kiwi", "Mango"]), ("corgi", ["Waffles", "Noodle"])]
JOBS = ["nurse", "data analyst", "high school teacher", "architect", "pharmacist", "UX designer", "electrician"]
CITIES = ["Austin", "Denver", "Portland", "Toronto", "Melbourne", "Glasgow", "Rotterdam", "Nashville"]
CARS = ["a 2015 Honda Civic", "an old Subaru Outback", "a Tesla Model 3", "a Toyota Corolla hybrid", "a Mini Cooper"]
INSTRUMENTS = ["cello", "banjo", "trumpet", "harp", "bass guitar"]
COLLEAGUES = ["Priya", "Marcus", "Ingrid", "Tomasz", "Aiko", "Rafael"]
DIETS = [("vegetarian", "I'm vegetarian, so please keep it meat-free."),
         ("gluten", "I can't eat gluten, so please skip anything with wheat."),
         ("spicy", "I love really spicy food, the hotter the better."),
         ("dairy", "I'm lactose intolerant, so no dairy please.")]
STYLES = [("bullet points", "I find bullet points much easier to read than long paragraphs."),
          ("metric", "Please use metric units, I think in kilometres and kilograms."),
          ("short", "I prefer short answers, I usually read these on my phone.")]

FACT_T = {
    "pet": ["By the way, my {species} {name} has been keeping me company while I work on this.",
            "I'm asking because my {species} {name} needs a calmer routine too."],
    "job": ["I work as a {job}, so my schedule is all over the place.",
            "Context: I'm a {job} and I only have evenings free."],
    "city": ["I live in {city}, if that changes anything.", "For context, I'm based in {city}."],
    "car": ["I drive {car}, so the trip has to be doable by car.", "My car is {car}, nothing fancy."],
    "instrument": ["I've been learning the {instrument} for a year, which eats most of my free time.",
                   "I play the {instrument} in a community orchestra on Tuesdays."],
    "colleague": ["My colleague {name} recommended I ask you about this.",
                  "{name} from my team suggested this, she swears by it."],
}
UPDATE_T = {
    "city": ["We just moved from {old} to {new}, so I'm still unpacking boxes.",
             "Quick update: I don't live in {old} anymore, I moved to {new} last month."],
    "job": ["I changed careers, I'm not a {old} anymore, I'm a {new} now.",
            "Big news: I left my job as a {old} and started as a {new}."],
    "car": ["I sold {old} and bought {new}.", "I finally replaced {old} with {new}."],
}
QUESTIONS = {
    "pet": ("What is the name of my {species}?", "{name}"),
    "job": ("What do I do for a living?", "{job}"),
    "city": ("Which city do I live in?", "{city}"),
    "car": ("What car do I drive?", "{car}"),
    "instrument": ("Which instrument am I learning?", "{instrument}"),
    "colleague": ("Which colleague recommended that I ask you for help?", "{name}"),
}
UPDATE_Q = {"city": "Which city do I live in now?", "job": "What is my job now?", "car": "What car do I drive now?"}
PREF_Q = {"vegetarian": ("Can you suggest a dinner recipe for me?", "vegetarian"),
          "gluten": ("What should I bake for a party this weekend?", "gluten"),
          "spicy": ("Any ideas for a quick lunch I'd enjoy?", "spicy"),
          "dairy": ("Can you suggest a dessert I could make?", "dairy"),
          "bullet points": ("How should you format your answers for me?", "bullet points"),
          "metric": ("Which units should you use when you give me distances?", "metric"),
          "short": ("How long should your answers to me be?", "short")}
# what the assistant says deep inside a long answer, and the question about it
SAID = {
    "recipe": ("For the {x}, my one real secret is to add {v} right at the end.",
               "What did you tell me to add at the end of the {x}?",
               ["a spoonful of miso", "a knob of brown butter", "smoked paprika", "a splash of fish sauce"]),
    "code": ("For this one I'd reach for the {v} module, it handles the tricky parts for you.",
             "Which Python module did you suggest when I asked how to {x}?",
             ["itertools", "functools", "sched", "tenacity", "csv"]),
    "travel": ("In {x}, do not miss {v}; go early in the morning before the crowds.",
               "What did you say I should not miss in {x}?",
               ["the rooftop of the cathedral", "the tile museum", "the night market by the river",
                "the hilltop fortress", "the botanical garden"]),
    "workout": ("Your longest session in the peak week should be {v}.",
                "How long did you say my longest session in the peak week should be?",
                ["18 kilometres", "two hours on the bike", "90 minutes", "five sets of eight"]),
}
RELATIVE = [(7, "a week ago"), (14, "two weeks ago"), (21, "three weeks ago"), (28, "four weeks ago")]


def _answer(rng: random.Random, kind: str, x: str, said: str | None) -> str:
    """A long assistant answer (about 300-800 tokens) to a task, with ``said`` placed somewhere inside it."""
    sections = rng.sample(SECTIONS[kind], min(len(SECTIONS[kind]), rng.randint(3, 4)))
    parts = [f"Of course! Here is how I would approach {x}."]
    for title, bank in sections:
        sentences = rng.sample(bank, min(len(bank), rng.randint(2, len(bank))))
        sentences += rng.sample(GENERIC, rng.randint(2, 5))
        rng.shuffle(sentences)
        parts.append(f"**{title}.** " + " ".join(s.format(n=rng.randint(2, 6), m=rng.randint(2, 9)) for s in sentences))
    filler = rng.sample(GENERIC, rng.randint(3, 6))
    parts.append(" ".join(filler))
    if said:
        at = rng.randint(2, len(parts))  # past the first paragraph: often beyond the embedder's window
        parts.insert(at, said)
    parts.append("I hope this helps, and let me know if you want me to adjust anything.")
    return "\n\n".join(parts)


def _conversation(i: int, rng: random.Random, sessions: int = 20) -> dict[str, Any]:
    """One user-assistant history: its plan, its sessions and its probes (every draw from ``rng`` in one fixed
    order: the seed is the suite)."""
    user = f"asst{i:02d}"
    h = _history(rng, sessions)
    out_sessions, said_facts, evidence, task_of = _assistant_sessions(rng, h, sessions)
    probes = _assistant_probes(rng, h, evidence, said_facts, task_of, sessions)
    return {"id": user, "user_id": user, "sessions": out_sessions,
            "probes": [{"id": f"{user}:q{j}", "after_session": out_sessions[-1]["id"], "time": h.question_time.isoformat(),
                        "question": q, "answer": a, "evidence": ev, "type": t, **({"old_answer": old} if old else {})}
                       for j, (t, q, a, ev, old) in enumerate(probes)]}


def _history(rng: random.Random, sessions: int) -> SimpleNamespace:
    """The user's values and changes, and which session says what: facts in the first half, updates in the
    second, two preferences, two items the assistant said; the sessions' times and the question's."""
    start = datetime(2024, 1, 8, 9, 0) + timedelta(days=rng.randint(0, 90))
    species, names = rng.choice(PETS)
    job_old, job_new = rng.sample(JOBS, 2)
    city_old, city_new = rng.sample(CITIES, 2)
    car_old, car_new = rng.sample(CARS, 2)
    values = {"species": species, "name": rng.choice(names), "job": job_old, "city": city_old, "car": car_old,
              "instrument": rng.choice(INSTRUMENTS)}
    colleague = rng.choice(COLLEAGUES)
    facts = rng.sample(list(FACT_T), 4)
    updates = [k for k in UPDATE_T if k in facts][:2]
    if not updates:  # every history changes at least one fact
        facts[0] = rng.choice(list(UPDATE_T))
        updates = [facts[0]]
    diet, style = rng.choice(DIETS), rng.choice(STYLES)
    said_kinds = rng.sample(list(SAID), 2)
    plan: dict[int, list[tuple[str, str]]] = {}
    for k in facts:
        plan.setdefault(rng.randint(0, sessions // 2), []).append(("fact", k))
    for k in updates:
        plan.setdefault(rng.randint(sessions // 2 + 1, sessions - 2), []).append(("update", k))
    plan.setdefault(rng.randint(0, sessions - 3), []).append(("pref", diet[0]))
    plan.setdefault(rng.randint(0, sessions - 3), []).append(("pref", style[0]))
    said_at = {rng.randint(0, sessions - 2): kind for kind in said_kinds}
    times = [start]
    for _ in range(sessions - 1):
        times.append(times[-1] + timedelta(days=rng.randint(3, 8), hours=rng.randint(-3, 3)))
    return SimpleNamespace(values=values, colleague=colleague, updates=updates, diet=diet, style=style, plan=plan,
                           said_at=said_at, times=times, question_time=times[-1] + timedelta(days=rng.randint(1, 4)),
                           changes={"city": (city_old, city_new), "job": (job_old, job_new), "car": (car_old, car_new)})


def _assistant_sessions(rng: random.Random, h: SimpleNamespace, sessions: int) -> tuple[list, list, dict, dict]:
    """Each session: a task, the user's asides in its request, the assistant's long answer (holding what it
    said, when it says something), sometimes a follow-up. Also what the assistant said, where each aside is, and
    each session's task."""
    values = h.values
    out_sessions, said_facts, evidence = [], [], {}
    task_of: dict[int, tuple[str, str, str]] = {}
    for si in range(sessions):
        sid = f"s{si + 1}"
        kind, request_t, pool = rng.choice(TASKS) if si not in h.said_at else next(t for t in TASKS if t[0] == h.said_at[si])
        x = rng.choice(pool)
        task_of[si] = (kind, x, request_t.format(x=x))
        asides = []
        for what, k in h.plan.get(si, []):
            if what == "fact":
                v = {**values, "name": h.colleague} if k == "colleague" else values
                asides.append((rng.choice(FACT_T[k]).format(**v), what, k))
            elif what == "update":
                old, new = h.changes[k]
                asides.append((rng.choice(UPDATE_T[k]).format(old=old, new=new), what, k))
                values[k] = new
            else:
                asides.append((h.diet[1] if k == h.diet[0] else h.style[1], what, k))
        turns: list[dict[str, str]] = []
        text = task_of[si][2]
        if asides:
            text = " ".join([text] + [a for a, _, _ in asides]) if rng.random() < 0.5 else \
                " ".join([a for a, _, _ in asides] + [text])
        turns.append({"id": f"{sid}:1", "role": "user", "content": text})
        for _, what, k in asides:
            evidence.setdefault((what, k), []).append((si, f"{sid}:1", dict(values)))
        said = None
        if si in h.said_at:
            template, question, options = SAID[h.said_at[si]]
            v = rng.choice(options)
            said = template.format(x=x, v=v)
            said_facts.append((question.format(x=x), v, f"{sid}:2"))
        turns.append({"id": f"{sid}:2", "role": "assistant", "content": _answer(rng, kind, x, said)})
        if rng.random() < 0.5:
            turns.append({"id": f"{sid}:3", "role": "user", "content": rng.choice(FOLLOW_UPS)})
            turns.append({"id": f"{sid}:4", "role": "assistant", "content": _answer(rng, kind, x, None)})
        out_sessions.append({"id": sid, "time": h.times[si].isoformat(), "turns": turns})
    return out_sessions, said_facts, evidence, task_of


def _assistant_probes(rng: random.Random, h: SimpleNamespace, evidence: dict, said_facts: list, task_of: dict,
                      sessions: int) -> list[tuple[str, str, str, list[str], str | None]]:
    """(type, question, answer, evidence, old answer) of each probe: facts, updates, preferences, what the
    assistant said, and two time questions (what the user asked about N weeks before the question time)."""
    probes = []
    for (what, k), where in evidence.items():
        si, tid, v = where[0]
        if what == "fact":
            q, a = QUESTIONS[k]
            vals = {**v, "name": h.colleague} if k == "colleague" else v
            if k in h.updates:  # asked about after the update below
                continue
            probes.append(("single-session-user", q.format(**vals), a.format(**vals), [tid], None))
        elif what == "update":
            probes.append(("knowledge-update", UPDATE_Q[k], where[-1][2][k], [where[-1][1]], h.changes[k][0]))
        else:
            q, a = PREF_Q[k]
            probes.append(("single-session-preference", q, a, [tid], None))
    for question, v, tid in said_facts:
        probes.append(("single-session-assistant", question, v, [tid], None))
    for days, phrase in rng.sample(RELATIVE, 2):  # the session nearest that date
        target = h.question_time - timedelta(days=days)
        si = min(range(sessions), key=lambda j: abs((h.times[j] - target).total_seconds()))
        if abs((h.times[si] - target).days) > 2:
            continue
        kind, x, _ = task_of[si]
        probes.append(("temporal-reasoning", f"What did I ask you to help me with {phrase}?", x, [f"s{si + 1}:1"], None))
    return probes


def generate_assistant(seed: int = 0, conversations: int = 10, sessions: int = 20) -> list[dict[str, Any]]:
    """``conversations`` user-assistant histories of ``sessions`` sessions each, deterministic for a ``seed``."""
    rng = random.Random(seed)
    return [_conversation(i, rng, sessions) for i in range(conversations)]
