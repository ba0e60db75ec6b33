"""The first built-in suite: one user per conversation, a persona of durable facts stated, changed and
repeated among small talk (memkit JSONL, docs/architecture.md §5). Deterministic for a seed.

    memkit generate --suite first --seed 7 --conversations 60 --out data/suite.jsonl

data/README.md says what each probe type tests.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from datetime import datetime, timedelta

NAMES = ["Lena", "Omar", "Priya", "Mateo", "Yuki", "Sven", "Amara", "Tomas", "Ines", "Kofi", "Hana", "Leo"]
ZH_NAMES = ["王磊", "李娜", "张伟", "陈静", "刘洋", "赵敏"]
CITIES = ["Berlin", "Lisbon", "Toronto", "Osaka", "Nairobi", "Denver", "Oslo", "Madrid", "Seoul", "Dublin"]
LANGS = ["Go", "Python", "Rust", "Java", "TypeScript", "Kotlin"]
PETS = [("dog", ["Rex", "Bruno", "Luna", "Max"]), ("cat", ["Tom", "Mochi", "Nala", "Felix"])]
SIBLINGS = ["Ann", "Bob", "Clara", "Dev", "Ella", "Finn", "Greta", "Hugo"]
JOBS = ["nurse", "pilot", "teacher", "chef"]
ALLERGIES = ["peanuts", "shellfish", "penicillin", "pollen"]
HOBBIES = ["hiking", "climbing", "chess", "gardening", "cycling", "painting"]
COLOURS = ["blue", "green", "orange", "purple"]
SMALL_TALK = [
    "Hi again!", "Thanks, that's helpful!", "It was hot yesterday.", "lol my coffee machine broke this morning",
    "Can you explain how recursion works?", "What's a good name for a variable holding a count?",
    "Today I'm working from a café.", "Ugh, Mondays.", "Good morning!", "Could you reformat this list for me?",
    "The train was late again today.", "Haha, nice one.", "好的，谢谢！", "Sounds good to me.",
    "Can you summarise the difference between a process and a thread in two sentences?",
    "What are some good practices for writing commit messages?",
    "My colleague said it might rain this weekend.", "How do I reverse a list in place?",
]
NAME_T = ["Call me {v}.", "My name is {v}.", "Hi, I'm {v}, nice to meet you.", "You can call me {v}."]
UNITS_T = ["I prefer {v} units.", "Please always use {v} units when you give me numbers.",
           "Give me distances in {w}, I think in {v}.", "For measurements I'd rather stick to {v}."]
LANG_T = ["Our backend is written in {v}.", "We write all our services in {v}.", "My team codes in {v}.",
          "Most of my work is {v} these days."]
CITY_T = ["I live in {v}.", "I'm based in {v}.", "Home is {v} for me.", "I live in {v} with my family."]
CITY_CHANGE_T = ["I moved to {v} last month.", "We relocated to {v} in the spring.", "I live in {v} now."]
PET_T = ["I have a {a} named {v}.", "My {a} is called {v}.", "My {a}'s name is {v}."]
SIB_T = ["My {r} {v} is a {j}.", "My {r}'s name is {v}, {p} works as a {j}.", "{v}, my {r}, is a {j}."]
DOCKER_T = ["We use Docker for all deployments.", "Everything we ship runs in Docker containers."]
DOCKER_OFF_T = ["We don't use Docker anymore.", "We stopped using Docker last quarter.",
                "Docker is gone from our stack now."]
ALLERGY_T = ["I'm allergic to {v}.", "Keep in mind that I can't have {v}, I'm allergic.", "I have a {v} allergy."]
HOBBY_T = ["I like {v}.", "I really enjoy {v} on weekends.", "{V} is my favourite way to relax."]
COLOUR_T = ["My favorite color is {v}.", "I love the color {v}.", "{V} is my favourite colour."]
REPLIES = [
    "Noted. I'll keep that in mind for the rest of our work together, and if anything changes just tell me "
    "and I will adjust the plan, the examples and the numbers I give you accordingly.",
    "Sure, happy to help. Recursion is when a function calls itself on a smaller piece of the problem until it "
    "reaches a base case that it can answer directly; each call waits for the one below it, and the answers are "
    "combined on the way back up. A classic example is computing a factorial or walking a tree of folders.",
    "Got it. Here is a cleaned-up version of the list, sorted alphabetically, with duplicates removed and each "
    "item on its own line so it is easier to scan. Let me know if you want it grouped by category instead.",
    "Good question. For a variable that holds a count, names like `count`, `n_items` or `total_users` read well: "
    "they say what is counted. Avoid single letters outside of very short loops, and keep the unit in the name "
    "when there is one, like `timeout_seconds`.",
    "Glad that helped! If you want, we can go one step further next time and look at how the same idea applies "
    "to your own code base, with a small example that you can run and change.",
    "Of course. A good way to approach this is to split the task into three steps: first write down what the "
    "result should look like, then build the smallest version that works, and only then make it fast or pretty.",
    "Thanks for telling me. That kind of detail helps me give answers that fit your situation instead of generic "
    "advice, so feel free to share more context whenever it is relevant.",
    "Let's do that. I'll draft a first version now; read it through, mark anything that feels off, and we will "
    "iterate on it together until it is right.",
    "That sounds frustrating. Small things like that can throw off a whole morning; maybe take a short break, "
    "and when you are back we can pick up exactly where we left off.",
]
ABSENT = [("What is my favorite food?", "food"), ("What car do I drive?", "car"),
          ("What is my phone number?", "phone"), ("Which gym do I go to?", "gym")]


def conversation(rng: random.Random, n: int, sessions: int = 12) -> dict:
    """One conversation of the first suite: a persona, the sessions that state and change its facts among small
    talk, and the probes that ask for them (every draw from ``rng`` in one fixed order: the seed is the suite)."""
    user = f"user{n:03d}"
    p = _persona(rng)
    plan, change, s_units = _plan(rng, p)
    out_sessions, ops, where = _sessions(rng, plan, sessions)
    probes = _probes(rng, user, p, where, change, s_units, f"s{sessions}", sessions)
    return {"id": f"c{n:03d}", "user_id": user, "sessions": out_sessions, "ops": ops, "probes": probes}


def _persona(rng: random.Random) -> SimpleNamespace:
    zh = rng.random() < 0.25
    name = rng.choice(ZH_NAMES) if zh else rng.choice(NAMES)
    units = rng.choice(["metric", "imperial"])
    lang_old, lang_new = rng.sample(LANGS, 2)
    city_old, city_new = rng.sample(CITIES, 2)
    animal, pet_names = rng.choice(PETS)
    pet = rng.choice(pet_names)
    sister, brother = rng.sample(SIBLINGS, 2)
    job = rng.choice(JOBS)
    allergy, hobby, colour = rng.choice(ALLERGIES), rng.choice(HOBBIES), rng.choice(COLOURS)
    return SimpleNamespace(zh=zh, name=name, units=units, lang_old=lang_old, lang_new=lang_new, city_old=city_old,
                           city_new=city_new, animal=animal, pet=pet, sister=sister, brother=brother, job=job,
                           allergy=allergy, hobby=hobby, colour=colour,
                           other_units="imperial" if units == "metric" else "metric")


UNIT_WORD = {"metric": "kilometres", "imperial": "miles"}
ZH_UNITS = {"metric": "公制", "imperial": "英制"}


def _plan(rng: random.Random, p: SimpleNamespace) -> tuple[list[tuple[int, str, str, str]], str, int]:
    """(session index, text, op, slot) of every statement of a durable fact, the way units change, and the
    session they change in."""
    pick = rng.choice
    plan: list[tuple[int, str, str, str]] = [
        (0, f"我叫{p.name}" if p.zh else pick(NAME_T).format(v=p.name), "ADD", "name"),
        (0, f"我喜欢{ZH_UNITS[p.units]}单位" if p.zh else pick(UNITS_T).format(v=p.units, w=UNIT_WORD[p.units]), "ADD",
         "units"),
        (rng.randint(0, 2), pick(LANG_T).format(v=p.lang_old), "ADD", "language"),
        (rng.randint(0, 2), pick(CITY_T).format(v=p.city_old), "ADD", "city"),
        (rng.randint(1, 3), pick(PET_T).format(a=p.animal, v=p.pet), "ADD", "pet"),
        (rng.randint(1, 3), pick(SIB_T).format(r="sister", v=p.sister, j=p.job, p="she"), "ADD", "sister"),
        (rng.randint(1, 3), pick(SIB_T).format(r="brother", v=p.brother, j=p.job, p="he"), "ADD", "brother"),
        (rng.randint(0, 3), pick(DOCKER_T), "ADD", "docker"),
        (rng.randint(2, 4), pick(ALLERGY_T).format(v=p.allergy), "ADD", "allergy"),
        (rng.randint(2, 5), pick(HOBBY_T).format(v=p.hobby, V=p.hobby.capitalize()), "ADD", "hobby"),
        (rng.randint(2, 5), pick(COLOUR_T).format(v=p.colour, V=p.colour.capitalize()), "ADD", "colour"),
    ]
    change = rng.choice(["direct", "reworded", "zh"])
    unit_change = {
        "direct": f"Actually, switch me to {p.other_units} units from now on.",
        "reworded": f"I don't want {p.units} units anymore, give me {UNIT_WORD[p.other_units]}.",
        "zh": f"我现在改用{ZH_UNITS[p.other_units]}单位了",
    }[change]
    s_units, s_lang, s_city, s_docker = rng.randint(6, 9), rng.randint(5, 9), rng.randint(5, 9), rng.randint(5, 9)
    plan += [(s_units, unit_change, "UPDATE", "units"),
             (s_lang, f"We moved from {p.lang_old} to {p.lang_new}." if rng.random() < 0.7
              else f"我们现在改用 {p.lang_new} 了", "UPDATE", "language"),
             (s_city, pick(CITY_CHANGE_T).format(v=p.city_new), "UPDATE", "city"),
             (s_docker, pick(DOCKER_OFF_T), "UPDATE", "docker"),
             (rng.randint(4, 10), f"Like I said, I prefer {p.other_units if s_units < 10 else p.units} units.", "NOOP",
              "units-repeat")]
    return [x for x in plan if not (x[3] == "units-repeat" and x[0] <= s_units)], change, s_units


def _sessions(rng: random.Random, plan: list[tuple[int, str, str, str]], sessions: int
              ) -> tuple[list[dict], list[dict], dict[str, list[tuple[int, str]]]]:
    """The sessions (each planned statement among small talk, each user turn answered), the gold operations and
    where each slot was stated."""
    start = datetime(2026, 1, 5, 9, 0) + timedelta(days=rng.randint(0, 60))
    out_sessions, ops, where = [], [], {}
    for si in range(sessions):
        sid = f"s{si + 1}"
        turns = []
        items = [x for x in plan if x[0] == si]
        items += [(si, rng.choice(SMALL_TALK), "NOOP", "noise") for _ in range(rng.randint(2, 5))]
        rng.shuffle(items)
        for _, text, op, slot in items:
            tid = f"{sid}:{len(turns) + 1}"
            turns.append({"id": tid, "role": "user", "content": text})
            if slot != "noise":
                ops.append({"turn": tid, "op": op, "key": slot})
                where.setdefault(slot, []).append((si, tid))
            turns.append({"id": f"{sid}:{len(turns) + 1}", "role": "assistant", "content": rng.choice(REPLIES)})
        out_sessions.append({"id": sid, "time": (start + timedelta(days=3 * si)).isoformat(), "turns": turns})
    return out_sessions, ops, where


def _probes(rng: random.Random, user: str, p: SimpleNamespace, where: dict[str, list[tuple[int, str]]],
            change: str, s_units: int, last: str, sessions: int) -> list[dict]:
    probes: list[dict] = []

    def probe(question: str, answer: str, slot: str, ptype: str, after: str = last, old: str | None = None) -> None:
        evidence = [where[slot][-1][1]] if slot in where else []
        probes.append({"id": f"{user}:p{len(probes) + 1}", "after_session": after, "question": question,
                       "answer": answer, "evidence": evidence, "type": ptype, **({"old_answer": old} if old else {})})

    gap = sessions - 1 - where["name"][0][0]
    probe("What is my name?", p.name, "name", "long-range" if gap >= 10 else "single-fact")
    probe("Which units should you use for me?", p.other_units,
          "units", {"direct": "knowledge-update", "reworded": "update-reworded", "zh": "update-zh"}[change], old=p.units)
    probe("Which programming language does my team use?", p.lang_new, "language", "knowledge-update", old=p.lang_old)
    probe("Which city do I live in?", p.city_new, "city", "knowledge-update", old=p.city_old)
    probe(f"What is my {p.animal}'s name?", p.pet, "pet", "single-fact")
    probe("What is my sister's name?", p.sister, "sister", "alike")
    probe("What is my brother's name?", p.brother, "brother", "alike")
    probe("Do we still deploy with Docker?", "Docker", "docker", "negation")
    probe("Is there any food I must avoid?", p.allergy, "allergy", "single-fact")
    probe("What hobby do I enjoy?", p.hobby, "hobby", "single-fact")
    probe("What is my favorite color?", p.colour, "colour", "single-fact")
    q, _ = rng.choice(ABSENT)
    probes.append({"id": f"{user}:p{len(probes) + 1}", "after_session": last, "question": q, "answer": "",
                   "evidence": [], "type": "abstention"})
    # an early probe, asked mid-conversation before any change: the original units
    probe_mid = where["units"][0]
    if probe_mid[0] + 1 < s_units:
        probes.append({"id": f"{user}:p{len(probes) + 1}", "after_session": f"s{s_units}",
                       "question": "Remind me, which units do I use?", "answer": p.units,
                       "evidence": [probe_mid[1]], "type": "single-fact"})
    return probes


def generate_first(seed: int = 7, conversations: int = 60) -> list[dict]:
    """``conversations`` persona conversations, deterministic for a ``seed`` (7 is data/suite.jsonl)."""
    rng = random.Random(seed)
    return [conversation(rng, n) for n in range(conversations)]
