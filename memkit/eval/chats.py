"""A realistic suite: long, casual, dated chats between two named friends (memkit JSONL), made from a seed.

Shaped like public long-conversation benchmarks, not like memkit's rules: two people talk about their
weeks over 19-30 dated sessions; facts about both are stated in passing, in casual wording the rule
extractor mostly does not know, often with words the question does not share; events happen "today" on
a session's date; the other speaker reacts with the same words (lexical distractors); small talk fills
the rest. Probes are single-hop, multi-hop (two turns, often sessions apart), temporal (the session
date is the answer) and knowledge-update (a job or city changed). Evidence turn ids are exact.

Written before memkit's recall changed, and never tuned against: the committed file is seed 0
(``data/chats.jsonl``); tune anything on other seeds (``memkit generate --suite chats --seed 1``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "John", "Maria", "Joanna", "Nate", "Audrey", "Andrew",
         "Evan", "Sam", "Deborah", "Jolene", "Calvin", "Dave", "Priya", "Omar", "Lena", "Mateo", "Hana"]
JOBS = [("nurse", "the children's hospital"), ("high school teacher", "Lincoln High"),
        ("software engineer", "a small fintech startup"), ("pastry chef", "a French bakery"),
        ("social worker", "the youth center"), ("veterinarian", "a clinic downtown"),
        ("graphic designer", "an ad agency"), ("firefighter", "Station 12"), ("librarian", "the public library"),
        ("physical therapist", "a sports clinic")]
CITIES = ["Portland", "Austin", "Denver", "Chicago", "Seattle", "Boston", "Phoenix", "Atlanta", "Minneapolis",
          "San Diego", "Nashville", "Pittsburgh"]
PETS = [("dog", ["Luna", "Max", "Biscuit", "Rocky", "Daisy"]), ("cat", ["Pepper", "Milo", "Oliver", "Cleo"]),
        ("parrot", ["Kiwi", "Mango"]), ("rabbit", ["Clover", "Hazel"])]
INSTRUMENTS = ["violin", "guitar", "piano", "cello", "ukulele", "drums", "saxophone"]
HOBBIES = ["rock climbing", "birdwatching", "salsa dancing", "kayaking", "knitting", "photography"]
BOOKS = ["Where the Crawdads Sing", "The Night Circus", "Project Hail Mary", "Educated", "Circe", "Becoming"]
SIBLINGS = [("sister", ["Maya", "Rachel", "Tessa", "Nora"]), ("brother", ["Eli", "Marcus", "Owen", "Jake"])]
BANDS = ["Coldplay", "Taylor Swift", "The Lumineers", "Imagine Dragons", "Hozier", "Billie Eilish"]
PARKS = ["Yosemite", "Zion", "the Smoky Mountains", "Lake Tahoe", "Big Sur"]

JOB_T = ["Work has been crazy, you know how it is being a {job} at {place}.",
         "Honestly being a {job} drains me some weeks, but I still love it.",
         "I've been a {job} for {n} years now and I still learn something every shift."]
JOB_Q = ["What does {P} do for a living?", "What is {P}'s profession?", "What kind of work does {P} do?"]
JOB_CHANGE_T = ["Big news: I quit {old_place}! I start as a {job} at {place} on Monday.",
                "So I finally left {old_place}. I'm a {job} at {place} now, fingers crossed."]
CITY_T = ["Still loving {city}, the food scene here is amazing.", "{city} is gorgeous this time of year, you'd love it.",
          "Living in {city} has its perks, the parks here are unreal."]
MOVE_T = ["We finally did it, we moved to {city}! Boxes everywhere.",
          "Guess who lives in {city} now? Signed the lease yesterday and the movers came today."]
CITY_Q = ["Which city does {P} live in now?", "Where is {P} living these days?"]
PET_T = ["{name} knocked my coffee off the table again this morning, that {species} has no shame.",
         "Took {name} to the vet, turns out my little {species} is just a bit chubby lol.",
         "I can't focus, {name} keeps sitting on my keyboard. Typical {species} behaviour."]
PET_Q = ["What is the name of {P}'s {species}?", "What is {P}'s {species} called?"]
INSTR_T = ["I've been practicing the {instrument} every night, my neighbours must hate me.",
           "Started {instrument} lessons again, my fingers hurt but it's so satisfying."]
INSTR_Q = ["What instrument does {P} play?", "Which instrument has {P} been learning?"]
BOOK_T = ["I finally finished {book} last night and I cried at the ending.",
          "You have to read {book}. I couldn't put it down."]
BOOK_Q = ["Which book did {P} recommend?", "What novel did {P} love recently?"]
SIB1_T = ["My {rel} {sname} is coming to stay with us next month, I'm so excited.",
          "Had a long call with my {rel} {sname} tonight, we talked for two hours."]
SIB2_T = ["{sname} sent pictures from {scity}, apparently it's already snowing there.",
          "{sname} says {scity} is way too expensive but she won't leave."]
SIB_Q = ["Where does {P}'s {rel} live?", "In which city does {P}'s {rel} live?"]
HOBBY_T = ["I've gotten really into {hobby} lately, it clears my head.",
           "Spent the whole weekend {hobby}, I'm exhausted but happy."]
SHARED_Q = ["Which hobby do {A} and {B} both enjoy?", "What activity do both {A} and {B} do?"]
EVENTS = [
    ("I ran a charity 5K for the animal shelter this morning! My legs are jelly.", "When did {P} run the charity race?",
     "A 5K? That's amazing, I could never run that far.", "It was for Riverside Animal Rescue, we raised over two thousand dollars.",
     "Which organisation did {P}'s race raise money for?", "Riverside Animal Rescue"),
    ("Went to a {band} concert tonight, best night of the year!", "When did {P} see {band} live?",
     "No way, {band}! I'm so jealous, I love their music.", "We were in the third row and I lost my voice singing.",
     "How close to the stage was {P} at the concert?", "third row"),
    ("Today was my first pottery class! My bowl looks like a potato.", "When did {P} take a first pottery class?",
     "Haha a potato bowl, I need to see it. Pottery sounds so relaxing.", "The teacher said it's normal, next week we try mugs.",
     "What will {P} make next in the pottery class?", "mugs"),
    ("We took the kids to the science museum today, they loved the dinosaurs.", "When did {P} visit the science museum?",
     "Kids and dinosaurs, the best combo. Did you see the planetarium?", "Yes! My youngest wants to be an astronaut now.",
     "What does {P}'s youngest child want to become?", "astronaut"),
    ("I got promoted today!! Team lead starting next month.", "When did {P} get promoted?",
     "Congrats on the promotion, you totally deserve it!", "Thanks! My first task is hiring two new people.",
     "What is {P}'s first task after the promotion?", "hiring two new people"),
    ("Volunteered at the food bank this morning, we packed about 200 boxes.", "When did {P} volunteer at the food bank?",
     "That's such a good thing to do. Do you volunteer a lot?", "Once a month, my mom started it years ago.",
     "Who got {P} started volunteering?", "mom"),
    ("My car broke down on the highway today, I waited two hours for a tow.", "When did {P}'s car break down?",
     "Ugh, a breakdown on the highway is the worst. Are you okay?", "I'm fine, the mechanic says it's the transmission.",
     "What was wrong with {P}'s car?", "transmission"),
    ("I baked my first sourdough loaf today and it actually rose!", "When did {P} bake a first sourdough loaf?",
     "Sourdough is so hard, nice job! Mine always comes out flat.", "My starter is named Bubbles, I feed it every morning.",
     "What is the name of {P}'s sourdough starter?", "Bubbles"),
    ("Just got back from a camping trip at {park}, we saw so many stars.", "When did {P} go camping at {park}?",
     "Camping at {park} sounds dreamy! Were there bears?", "No bears, but a raccoon stole our marshmallows.",
     "What stole {P}'s marshmallows on the camping trip?", "a raccoon"),
    ("Gave my first conference talk today, my hands were shaking the whole time.", "When did {P} give a conference talk?",
     "A conference talk, wow! What was it about?", "Burnout in our field, people came up to me after to share their stories.",
     "What was {P}'s conference talk about?", "Burnout"),
    ("Planted tomatoes and basil in the backyard this afternoon.", "When did {P} plant tomatoes?",
     "Fresh basil is the best, homemade pesto incoming!", "The squirrels already dug up half of it, I'm at war with them.",
     "What animals dug up {P}'s garden?", "squirrels"),
    ("Signed up for a salsa class today, my first lesson is Thursday.", "When did {P} sign up for a salsa class?",
     "Salsa! Haha I have two left feet.", "My partner is coming too, he's even worse than me.",
     "Who is going to the salsa class with {P}?", "partner"),
]
SMALL_TALK = [
    "Hey! How's your week been?", "Hiya, long time no talk!", "Pretty good, just busy with work stuff.",
    "Haha that's wild.", "Omg no way!", "The weather has been so weird lately, sunny one minute and pouring the next.",
    "Did you watch the game last night?", "Not really, I fell asleep on the couch lol.", "Same old, same old.",
    "I need a vacation so badly.", "Have you tried that new taco place?", "Not yet, is it good?",
    "I've been binge watching a baking show, it's so wholesome.", "Coffee is the only thing keeping me alive today.",
    "Ugh, Mondays.", "That's so sweet.", "I totally get that.", "Same here honestly.", "Anyway, enough about me!",
    "It's been a long week, I'm just happy it's Friday.", "My phone screen cracked again, classic me.",
    "I made pancakes this morning, small wins.", "Traffic was terrible today.", "You always know how to cheer me up.",
    "Haha true.", "Wow, sounds like a lot.", "I'm proud of you!", "That makes sense.", "Tell me more!",
    "I've been trying to drink more water, it's harder than it sounds.", "Lol, relatable.",
]
GREET = ["Hey! How's your week been?", "Hiya, long time no talk!", "Heyyy, what's new with you?",
         "Hi! I was just thinking about you.", "Good morning! Got a minute to chat?"]
REPLY = ["Pretty good, just busy with work stuff.", "Same old, same old.", "Honestly a bit hectic, but good!",
         "Not bad at all, how about you?", "Tired, but hanging in there."]
DECOY = ["My neighbour's {species} keeps me up at night, I'm losing my mind.", "I tried the {instrument} once as a kid, it did not go well.",
         "My cousin moved to {city} last year and won't stop posting about it.", "I keep meaning to read {book} but never find the time.",
         "My {rel} keeps asking when I'll visit.", "A friend of mine works as a {job}, the hours sound brutal.",
         "I saw a poster for a {band} concert downtown.", "Someone at work is obsessed with {hobby}.",
         "We should plan a trip together sometime.", "Do you still like your job?", "Any fun plans this weekend?"]
CLOSE = ["Gotta run, talk soon!", "Okay I have to go cook dinner, bye!", "Talk later, take care!",
         "Night! Let's catch up next week."]
ECHO = ["Oh nice, that sounds fun!", "Haha, I can totally picture that.", "Wait, really? Tell me everything.",
        "I love that for you.", "That's awesome!"]


@dataclass
class _Conv:
    rng: random.Random
    names: tuple[str, str]
    n_sessions: int
    plan: dict[int, list[tuple[int, list[str], str | None]]] = field(default_factory=dict)  # session -> topics
    probes: list[dict[str, Any]] = field(default_factory=list)

    def topic(self, session: int, speaker: int, lines: list[str], tag: str | None = None) -> None:
        """``lines`` alternate speaker, other, speaker ...; ``tag`` names the evidence of the first line."""
        self.plan.setdefault(session, []).append((speaker, lines, tag))


def _decoy(rng: random.Random) -> str:
    """Small talk that shares words with the facts (a neighbour's dog, a cousin's city): lexical distractors."""
    species = rng.choice(PETS)[0]
    return rng.choice(DECOY).format(species=species, instrument=rng.choice(INSTRUMENTS), city=rng.choice(CITIES),
                                    book=rng.choice(BOOKS), rel=rng.choice(SIBLINGS)[0], job=rng.choice(JOBS)[0],
                                    band=rng.choice(BANDS), hobby=rng.choice(HOBBIES))


def _person(conv: _Conv, who: int, other_hobby: str | None, taken: list) -> str:
    """Plan one person's facts and events over the sessions; return their hobby."""
    rng, P, n = conv.rng, conv.names[who], conv.n_sessions
    early = list(range(0, max(2, n // 2)))
    late = list(range(n // 2, n))

    def probe(question: str, answer: str, tags: list[str], qtype: str, old: str | None = None) -> None:
        conv.probes.append({"question": question, "answer": answer, "tags": tags, "type": qtype, "old_answer": old})

    (job, place), (job2, place2) = rng.sample(JOBS, 2)
    s = rng.choice(early)
    conv.topic(s, who, [rng.choice(JOB_T).format(job=job, place=place, n=rng.randint(3, 12)), rng.choice(ECHO)], f"job{who}")
    if rng.random() < 0.5:  # the job changes later: a knowledge update
        s2 = rng.choice(late)
        conv.topic(s2, who, [rng.choice(JOB_CHANGE_T).format(old_place=place, job=job2, place=place2),
                             "Whoa, that's a big change! Congrats!"], f"job2{who}")
        probe(f"What is {P}'s current job?", job2, [f"job2{who}"], "knowledge-update", job)
    else:
        probe(rng.choice(JOB_Q).format(P=P), job, [f"job{who}"], "single-hop")
    city, city2 = rng.sample(CITIES, 2)
    conv.topic(rng.choice(early), who, [rng.choice(CITY_T).format(city=city), rng.choice(SMALL_TALK)], f"city{who}")
    if rng.random() < 0.5:
        conv.topic(rng.choice(late), who, [rng.choice(MOVE_T).format(city=city2), "A new city! How are you settling in?"],
                   f"move{who}")
        probe(rng.choice(CITY_Q).format(P=P), city2, [f"move{who}"], "knowledge-update", city)
    species, pet_names = rng.choice(PETS)
    pet = rng.choice(pet_names)
    conv.topic(rng.choice(range(n)), who, [rng.choice(PET_T).format(name=pet, species=species), rng.choice(ECHO)], f"pet{who}")
    probe(rng.choice(PET_Q).format(P=P, species=species), pet, [f"pet{who}"], "single-hop")
    instrument = rng.choice(INSTRUMENTS)
    conv.topic(rng.choice(range(n)), who, [rng.choice(INSTR_T).format(instrument=instrument), rng.choice(ECHO)], f"instr{who}")
    probe(rng.choice(INSTR_Q).format(P=P), instrument, [f"instr{who}"], "single-hop")
    book = rng.choice(BOOKS)
    conv.topic(rng.choice(range(n)), who, [rng.choice(BOOK_T).format(book=book), "Adding it to my list!"], f"book{who}")
    probe(rng.choice(BOOK_Q).format(P=P), book, [f"book{who}"], "single-hop")
    rel, snames = rng.choice(SIBLINGS)
    sname, scity = rng.choice(snames), rng.choice([c for c in CITIES if c not in (city, city2)])
    s1, s2 = sorted(rng.sample(range(n), 2))
    conv.topic(s1, who, [rng.choice(SIB1_T).format(rel=rel, sname=sname), "Aww, that's lovely."], f"sib1{who}")
    conv.topic(s2, who, [rng.choice(SIB2_T).format(sname=sname, scity=scity).replace(" she ", " he " if rel == "brother" else " she "),
                         rng.choice(SMALL_TALK)], f"sib2{who}")
    probe(rng.choice(SIB_Q).format(P=P, rel=rel), scity, [f"sib1{who}", f"sib2{who}"], "multi-hop")
    hobby = other_hobby or rng.choice(HOBBIES)
    conv.topic(rng.choice(range(n)), who, [rng.choice(HOBBY_T).format(hobby=hobby), rng.choice(ECHO)], f"hobby{who}")
    events = rng.sample([e for e in EVENTS if e not in taken], rng.randint(4, 6))
    taken += events  # the two people never share an event, so every question has one evidence turn
    for k, ev in enumerate(events):
        say, q_when, react, detail, q_detail, a_detail = ev
        fill = {"band": rng.choice(BANDS), "park": rng.choice(PARKS), "P": P}
        s = rng.choice(range(n))
        conv.topic(s, who, [say.format(**fill), react.format(**fill), detail.format(**fill)], f"ev{who}.{k}")
        probe(q_when.format(**fill), f"@date:{s}", [f"ev{who}.{k}"], "temporal")
        if rng.random() < 0.6:
            probe(q_detail.format(**fill), a_detail, [f"ev{who}.{k}+2"], "single-hop")
    return hobby


def _next(turns: list[dict[str, str]], names: tuple[str, str]) -> int:
    """The speaker who did not speak last (small talk alternates)."""
    return 1 if turns and turns[-1]["speaker"] == names[0] else 0


def _conversation(i: int, rng: random.Random) -> dict[str, Any]:
    a, b = rng.sample(NAMES, 2)
    n = rng.randint(19, 30)
    conv = _Conv(rng, (a, b), n)
    taken: list = []
    hobby = _person(conv, 0, None, taken)
    _person(conv, 1, hobby, taken)  # both enjoy the same hobby, stated sessions apart
    conv.probes.append({"question": rng.choice(SHARED_Q).format(A=a, B=b), "answer": hobby,
                        "tags": ["hobby0", "hobby1"], "type": "multi-hop", "old_answer": None})
    start = datetime(2023, 1, 1) + timedelta(days=rng.randint(0, 150), hours=rng.randint(9, 20), minutes=rng.randint(0, 59))
    sessions, where, dates, t = [], {}, [], start
    for s in range(n):
        turns: list[dict[str, str]] = []
        opener = rng.randint(0, 1)

        def say(speaker: int, text: str, tag: str | None = None) -> None:
            tid = f"s{s + 1}:{len(turns) + 1}"
            turns.append({"id": tid, "role": "user" if speaker == 0 else "assistant", "speaker": conv.names[speaker],
                          "content": text})
            if tag:
                where[tag] = tid

        say(opener, rng.choice(GREET))
        say(1 - opener, rng.choice(REPLY))
        topics = conv.plan.get(s, [])
        rng.shuffle(topics)
        for speaker, lines, tag in topics:
            for j, line in enumerate(lines):
                say(speaker if j % 2 == 0 else 1 - speaker, line, f"{tag}+{j}" if tag and j else tag)
            for _ in range(rng.randint(1, 4)):  # small talk between topics, some of it on the same subjects
                say(_next(turns, conv.names), _decoy(rng) if rng.random() < 0.35 else rng.choice(SMALL_TALK))
        while len(turns) < rng.randint(14, 22):
            say(_next(turns, conv.names), _decoy(rng) if rng.random() < 0.35 else rng.choice(SMALL_TALK))
        say(opener, rng.choice(CLOSE))
        say(1 - opener, rng.choice(CLOSE[1:] + SMALL_TALK[-3:]))
        sessions.append({"id": f"s{s + 1}", "time": t.strftime("%Y-%m-%dT%H:%M:00"), "turns": turns})
        dates.append(t)
        t += timedelta(days=rng.randint(3, 21), hours=rng.randint(-3, 3))
    probes = []
    for j, p in enumerate(conv.probes):
        answer = p["answer"]
        if answer.startswith("@date:"):
            d = dates[int(answer[6:])]
            answer = f"{d.day} {d.strftime('%B %Y')}"
        probes.append({"id": f"chat{i:02d}:q{j}", "after_session": sessions[-1]["id"], "question": p["question"],
                       "answer": answer, "evidence": [where[tag] for tag in p["tags"]], "type": p["type"],
                       **({"old_answer": p["old_answer"]} if p["old_answer"] else {})})
    return {"id": f"chat{i:02d}", "user_id": f"chat{i:02d}", "speakers": [a, b], "sessions": sessions, "probes": probes}


def generate_chats(seed: int = 0, conversations: int = 10) -> list[dict[str, Any]]:
    """``conversations`` chats between two named people, deterministic for a ``seed``."""
    rng = random.Random(seed)
    return [_conversation(i, rng) for i in range(conversations)]
