"""The offline rule extractor: durable first-person facts in English and Chinese, with keys where one can be told.

Honest heuristics, measured on the benchmark like any other backend. Each rule reads one sentence and
yields ``Candidate``s with a ``key`` (``user.units``, ``user.language``, ``user.uses.docker`` ...) so the
``keyed`` policy can tell a change of mind from a new fact. Questions, greetings and statements about
today/yesterday yield nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterator

from .. import registry
from . import updates
from .instructions import STANDING, instruction
from .statements import statement_of
from ..types import Candidate

LANGUAGES = {"python": "Python", "go": "Go", "golang": "Go", "rust": "Rust", "java": "Java",
             "javascript": "JavaScript", "typescript": "TypeScript", "c++": "C++", "c#": "C#",
             "ruby": "Ruby", "kotlin": "Kotlin", "swift": "Swift", "scala": "Scala", "php": "PHP",
             "elixir": "Elixir", "haskell": "Haskell", "julia": "Julia"}
METRIC = ("metric", "kilomet", "kilogram", "celsius", " km", "公制", "公里", "摄氏")
IMPERIAL = ("imperial", "mile", "pound", "fahrenheit", "feet", "英制", "英里", "华氏")
ROLES = ("engineer", "developer", "scientist", "designer", "manager", "teacher", "student", "researcher",
         "doctor", "nurse", "analyst", "architect", "writer", "lawyer", "consultant", "founder", "intern",
         "programmer", "professor", "accountant", "chef", "photographer", "artist", "musician", "pilot")
RELATIVES = ("sister", "brother", "mother", "father", "mom", "dad", "wife", "husband", "son", "daughter",
             "partner", "friend", "boss", "manager", "cat", "dog", "grandmother", "grandfather", "cousin")
EPHEMERAL = re.compile(r"\b(today|yesterday|tonight|this (morning|afternoon|evening)|right now|just now)\b|今天|昨天|刚才")
EPHEMERAL_NOUNS = {"day", "morning", "evening", "week", "weekend", "head", "question", "point", "bad", "turn",
                   # a body part's state passes ("my legs are jelly", "my back is killing me")
                   "legs", "leg", "feet", "foot", "back", "arms", "arm", "hands", "hand", "eyes", "knees", "knee",
                   "stomach", "throat", "shoulders", "neck"}
# a value said with a hedge or a laugh is a passing state or a joke, not a durable fact ("just a bit chubby lol")
HEDGED = re.compile(r"^(?:just|a bit|a little|kinda|kind of|sort of|so|super|totally|pretty|really)\b|\b(?:lol|haha+|lmao|omg)\b")
# the object of a liking that points back at something said before ("I love their music") names nothing
DEICTIC = {"it", "that", "this", "to", "you", "your", "their", "them", "his", "her", "its", "those", "these", "our"}
SENT_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
ROLE_ZH = ("工程师", "开发者", "程序员", "设计师", "经理", "老师", "学生", "研究员", "医生", "产品经理")
NAME = r"([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})"
# a compound sentence splits before each first-person clause: "I'm vegetarian and I live in Berlin."
# (after a bare comma only before "I" or "we": "Ella, my brother, is a pilot." is one clause)
CLAUSE_SPLIT = re.compile(r"(?:,\s*(?:and|but|so)|(?<!\s)\s+(?:and|but|so))\s+(?=(?:I|I'm|I've|I'd|my|My|we|We|our|Our)\b)"
                          r"|,\s+(?=(?:I|I'm|I've|I'd|we|We)\b)")
# "I'm <Name>" alone names the speaker, unless the capitalised word is one of these
NOT_NAMES = {"sorry", "fine", "good", "okay", "ok", "here", "back", "done", "ready", "sure", "glad", "happy", "in",
             "on", "at", "so", "just", "not", "the", "a", "an", "still", "also", "really", "very", "always", "never",
             "going", "home", "new", "free", "busy", "tired", "english", "american", "british", "canadian", "chinese",
             "german", "french", "dutch", "spanish", "italian", "japanese", "korean", "indian", "irish", "scottish",
             "australian", "mexican", "brazilian", "portuguese", "polish", "swedish", "russian", "vegan", "vegetarian"}
# a change of mind said as a negation: the affirmative clause it takes back, and the words that mark it
CHANGES = [(re.compile(r"\b(I|we)(?:'m| am| are| 're)? not (.+?)\s*\bany ?more\b", re.I), r"\1 am \2"),
           (re.compile(r"\b(I|we) (?:don't|do not) (.+?)\s*\bany ?more\b", re.I), r"\1 \2"),
           (re.compile(r"\b(I|we)(?:'m| am| are| 're) no longer\b", re.I), r"\1 am"),
           (re.compile(r"\b(I|we) no longer\b", re.I), r"\1"),
           (re.compile(r"\b(I|we) used to be\b", re.I), r"\1 am"),
           (re.compile(r"\b(I|we) used to\b", re.I), r"\1")]

Rule = Callable[[str, str], Iterator[Candidate]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def slug(text: str) -> str:
    text = re.sub(r"favourite", "favorite", text.lower())
    text = re.sub(r"colour", "color", text)
    words = re.findall(r"[\w+#]+", text)
    stop = {"a", "an", "the", "to", "of", "my", "our", "for", "and", "with", "in", "on", "at", "some", "more",
            "anymore", "now", "too", "also", "really", "much", "so", "any", "very", "lot", "lots", "still"}
    return "_".join(w for w in words if w not in stop)[:40] or "x"


def third_person(sentence: str) -> str:
    """'I prefer metric units.' -> 'User prefers metric units.' (a light rewrite, not a parser)."""
    s = sentence.strip().rstrip(".!。！")
    subs = [(r"\bI am\b|\bI'm\b", "User is"), (r"\bI've\b", "User has"), (r"\bI'd\b", "User would"),
            (r"\bI don't\b|\bI do not\b", "User does not"), (r"\bI can't\b|\bI cannot\b", "User cannot"),
            (r"\bI\b", "User"), (r"\bmy\b|\bMy\b", "User's"), (r"\bme\b", "the user"),
            (r"\bwe\b|\bWe\b", "User's team"), (r"\bour\b|\bOur\b", "User's team's")]
    for pat, rep in subs:
        s = re.sub(pat, rep, s)
    s = re.sub(r"\b(User's team|User) ((?:really |also |just |mostly |now |still |only |no longer )?)(prefer|like|love|hate|use|work|"
               r"live|want|need|have|enjoy|speak|drive|own|code|write|run|ship|deploy|dislike|don't|do|are|stopped)\b",
               lambda m: f"{m.group(1)} {m.group(2)}" + _third(m.group(3)), s)
    return s + "."


def attribute(cands: "list[Candidate]", speaker: str) -> "list[Candidate]":
    """Facts about a named person: "User" becomes the name and ``user.*`` keys become ``<name>.*``, so one
    person's change of mind never overwrites another person's fact (works for any extractor's output). A
    standing instruction (``procedural``) is left out: it is the user's to the assistant."""
    name = " ".join(speaker.split())
    ns = slug(name)
    out = []
    for c in cands:
        if c.kind == "procedural":  # an instruction is the user's to the assistant: between people, it is advice
            continue
        text = re.sub(r"\bthe user\b", name, c.text)
        text = re.sub(r"\bUser(?=\b)", name, text)
        key = c.key
        if key:
            key = f"{ns}.{key.split('.', 1)[1]}" if key.startswith("user.") else f"{ns}.{key}"
        out.append(replace(c, text=text, key=key))
    return out


def _third(verb: str) -> str:
    return {"have": "has", "don't": "doesn't", "do": "does", "are": "is", "stopped": "stopped"}.get(
        verb, verb if verb.endswith("s") else verb + "s")


def _negated(s: str) -> bool:
    return bool(re.search(r"\b(don't|do not|never|no longer|can't|cannot|not allowed|stopped|avoid|hate|dislike)\b"
                          r"|不用|不喜欢|不能|不再|讨厌", s, re.I))


@rule
def name(s: str, low: str) -> Iterator[Candidate]:
    m = re.search(r"\b(?i:call me|my name is|my name's|i'm called|i am called|you can call me)\s+" + NAME, s)
    if m:
        n = m.group(1).strip()
        yield Candidate(f"User's name is {n}.", key="user.name", value=n, importance=0.9)
    m = re.search(r"^(?i:hi|hello|hey)[,!]?\s+(?i:i'm|i am)\s+" + NAME + r"\b(?!\s+\w)", s.strip()) or \
        re.search(r"^(?i:i'm|i am)\s+" + NAME + r",\s+(?i:nice|pleased|glad) to meet you", s.strip())
    if m:
        n = m.group(1).strip()
        yield Candidate(f"User's name is {n}.", key="user.name", value=n, importance=0.9)
    m = re.fullmatch(r"(?i:i'm|i am)\s+" + NAME, s.strip().rstrip(".!"))  # a clause that is only "I'm Bob"
    if m and m.group(1).split()[0].lower() not in NOT_NAMES and m.group(1).split()[0].lower() not in ROLES:
        n = m.group(1).strip()
        yield Candidate(f"User's name is {n}.", key="user.name", value=n, importance=0.9)
    m = re.search(r"(?:我叫|我的名字是|叫我)\s*([\u4e00-\u9fff]{2,4}|[A-Za-z][\w ]{1,30})", s)
    if m:
        n = re.sub(r"(吧|就行|就好|了)$", "", m.group(1).strip())
        yield Candidate(f"User's name is {n}.", key="user.name", value=n, importance=0.9)


@rule
def role(s: str, low: str) -> Iterator[Candidate]:
    m = re.search(r"\bi(?:'m| am| work as) (?:a|an) ((?:[\w-]+ ){0,3}(?:" + "|".join(ROLES) + r"))\b", low)
    if m:
        yield Candidate(f"User is a {m.group(1)}.", key="user.role", value=m.group(1), importance=0.8)
    m = re.search(r"我是(?:一名|一个|个)?([\u4e00-\u9fffA-Za-z]{0,6}(?:" + "|".join(ROLE_ZH) + "))", s)
    if m:
        yield Candidate(f"User is a {m.group(1)} (我是{m.group(1)}).", key="user.role", value=m.group(1), importance=0.8)


@rule
def units(s: str, low: str) -> Iterator[Candidate]:
    if not re.search(r"prefer|use|like|want|switch|always|please|rather|stick|give me|show me|喜欢|用|偏好|改", low):
        return
    metric, imperial = any(w in low for w in METRIC), any(w in low for w in IMPERIAL)
    if metric == imperial:
        if not metric:
            return
        m = re.search(r"(?:from|instead of)\s+(\w+)\s+to\s+(\w+)", low)  # "switch from miles to km"
        negated = [c for c in re.split(r",|;|\bbut\b|，", low) if _negated(c)]
        if m:
            value = "metric" if any(w in " " + m.group(2) for w in METRIC) else "imperial"
        elif negated:  # "I don't want metric anymore, give me miles": the negated one is the old value
            value = "imperial" if any(w in negated[0] for w in METRIC) else "metric"
        else:
            return
    else:
        value = "metric" if metric else "imperial"
        if _negated(low) and not re.search(r"\bnot\b.*\b(?:but|rather)\b", low):
            value = "imperial" if value == "metric" else "metric"
    yield Candidate(f"User prefers {value} units.", key="user.units", value=value, importance=0.8)


@rule
def language(s: str, low: str) -> Iterator[Candidate]:
    names = "|".join(re.escape(k) for k in sorted(LANGUAGES, key=len, reverse=True))
    m = re.search(rf"\b(?:moved|switched|migrated|migrating|moving|switching|went)\s+(?:\w+\s+){{0,3}}from\s+({names})\s+to\s+({names})\b", low) \
        or re.search(rf"(?:从)\s*({names})\s*(?:改|换|迁移|转)到?\s*({names})", low)
    if m:
        new = LANGUAGES[m.group(2)]
        yield Candidate(f"User now uses {new} (moved from {LANGUAGES[m.group(1)]}).", key="user.language",
                        value=new, importance=0.8)
        return
    m = re.search(rf"(?:\b(?:i|we|my team|our team)\s+(?:now\s+)?(?:code|program|write|work|develop|build)s?\s+(?:\w+\s+){{0,3}}in|"
                  rf"\b(?:i|we)\s+(?:now\s+)?(?:mostly\s+)?(?:use|prefer|switched to|moved to)|written in|(?:most|all) of (?:my|our) (?:work|code) is|"
                  rf"改用|现在用|主要用|用)\s*({names})\b", low)
    if m and not _negated(low):
        lang = LANGUAGES[m.group(1)]
        yield Candidate(third_person(s) if s.isascii() else f"User now uses {lang}.",
                        key="user.language", value=lang, importance=0.7)


@rule
def uses(s: str, low: str) -> Iterator[Candidate]:
    m = re.search(r"\b(?:i|we|our (?:company|team))\s+(?:now\s+|also\s+|mostly\s+|only\s+)?(don't|do not|can't|cannot|no longer|never|aren't allowed to|"
                  r"are not allowed to|stopped)?\s*(?:use|using|run|deploy (?:on|with)|rely on)\s+([\w.+#-]+(?:\s+[\d.]+)?)", low)
    if m:
        thing = m.group(2)
        word = thing.split()[0]
        if word in LANGUAGES or word in {"it", "that", "this", "them", "a", "the", "to", "some", "metric", "imperial"}:
            return
        neg = bool(m.group(1))
        constraint = bool(re.search(r"can't|cannot|not allowed|must|have to|policy", low))
        yield Candidate(third_person(s), kind="semantic", key=f"user.uses.{slug(word)}",
                        value="no" if neg else thing.rstrip("."), importance=0.75 if constraint else 0.6, negated=neg)
    m = re.search(r"\b(?:everything|all(?: of it)?) (?:we|i) (?:ship|run|deploy|build)s? (?:runs? |is deployed )?(?:in|on|with) ([\w.+#-]+)", low)
    if m and m.group(1) not in LANGUAGES:
        yield Candidate(third_person(s), key=f"user.uses.{slug(m.group(1))}", value=m.group(1), importance=0.6)
    m = re.search(r"^([\w.+#-]+) is (?:gone|no longer used|out) (?:from|of) (?:our|my) (?:stack|setup|infrastructure)|"
                  r"\b(?:we|i) (?:dropped|got rid of|removed|replaced) ([\w.+#-]+)", low.strip())
    if m:
        thing = m.group(1) or m.group(2)
        yield Candidate(third_person(s), key=f"user.uses.{slug(thing)}", value="no", importance=0.6, negated=True)
    m = re.search(r"(?:我|我们)(?:现在)?(不用|不能用|不再用|使用|用|改用)\s*([A-Za-z][\w.+#-]*)", s)
    if m and m.group(2).lower() not in LANGUAGES:
        neg = m.group(1).startswith("不")
        yield Candidate(f"User {'does not use' if neg else 'uses'} {m.group(2)} ({s.strip()}).",
                        key=f"user.uses.{slug(m.group(2))}", value="no" if neg else m.group(2), importance=0.6, negated=neg)


@rule
def likes(s: str, low: str) -> Iterator[Candidate]:
    if re.search(r"\b(units?|metric|imperial)\b", low) or any(k in low.split() for k in LANGUAGES):
        return
    m = re.search(r"\bi\s+(?:really\s+|also\s+|just\s+)?(don't like|do not like|dislike|hate|no longer like|like|love|enjoy|prefer)\s+([^,.;!]+)", low)
    if m:
        obj = re.split(r"\b(?:because|since|but|when|so)\b", m.group(2))[0].strip()
        head = re.split(r"\b(?:on|in|at|during|with|every|anymore|these days)\b", obj)[0].strip() or obj
        if obj and obj.split()[0] not in DEICTIC:
            neg = m.group(1) in {"don't like", "do not like", "dislike", "hate", "no longer like"}
            yield Candidate(third_person(s), key=f"user.likes.{slug(head)}", value="dislikes" if neg else "likes",
                            importance=0.6, negated=neg)
    m = re.search(r"^([\w-]+(?: [\w-]+)?) is my (?:favou?rite|preferred) (?:way|thing|hobby|pastime)", low.strip())
    if m:
        yield Candidate(third_person(s), key=f"user.likes.{slug(m.group(1))}", value="likes", importance=0.6)
    m = re.search(r"我(?:很|也|特别)?(不喜欢|讨厌|喜欢|偏好|爱)([\u4e00-\u9fffA-Za-z]{1,12})", s)
    if m and not any(w in m.group(2) for w in ("公制", "英制")):
        neg = m.group(1) in {"不喜欢", "讨厌"}
        yield Candidate(f"User {'dislikes' if neg else 'likes'} {m.group(2)} ({s.strip()}).",
                        key=f"user.likes.{m.group(2)}", value="dislikes" if neg else "likes", importance=0.6, negated=neg)


@rule
def possession(s: str, low: str) -> Iterator[Candidate]:
    rel = "|".join(RELATIVES)
    m = re.search(rf"\b(?i:my\s+(?:(?:older|younger|little|big)\s+)?({rel})(?:'s name is|\s+is (?:named|called)|,?\s+))\s*{NAME}", s)
    if m:
        who, n = m.group(1).lower(), m.group(2).split()[0]
        yield Candidate(f"User's {who} is {n}.", key=f"user.{'pet' if who in ('cat', 'dog') else 'family'}.{who}",
                        value=n, importance=0.7)
        return
    m = re.search(rf"^{NAME}, (?i:my ({rel})),", s.strip())
    if m:
        who = m.group(2).lower()
        yield Candidate(third_person(s), key=f"user.{'pet' if who in ('cat', 'dog') else 'family'}.{who}",
                        value=m.group(1), importance=0.7)
        return
    m = re.search(r"^([\w-]+(?: [\w-]+)?) (?:is|are) my (favou?rite [\w ]+)", low.strip())
    if m:
        yield Candidate(third_person(s), key=f"user.{slug(m.group(2))}", value=m.group(1), importance=0.6)
        return
    m = re.search(r"\b(?i:i have an? (cat|dog|\w+) (?:named|called)) " + NAME, s)
    if m:
        yield Candidate(f"User has a {m.group(1).lower()} named {m.group(2)}.", key=f"user.pet.{m.group(1).lower()}",
                        value=m.group(2), importance=0.7)
        return
    m = re.search(r"\bmy (favou?rite [\w ]+?|[\w]+(?: [\w]+)?) (?:is|are) ([^,;]+)", low)
    if m and m.group(1).split()[-1] not in EPHEMERAL_NOUNS and m.group(1).split()[0] not in RELATIVES \
            and not HEDGED.search(m.group(2).strip()):
        yield Candidate(third_person(s), key=f"user.{slug(m.group(1))}", value=m.group(2).strip().rstrip("."),
                        importance=0.6)


@rule
def place_and_work(s: str, low: str) -> Iterator[Candidate]:
    m = re.search(r"\b(?i:(?:i|we)(?: live|'m based| am based| are based| moved| relocated| have moved| have relocated) (?:in|to)|"
                  r"i'm living in|home is) " + NAME, s) or \
        re.search(r"我(?:住在|搬到了?|在)([\u4e00-\u9fff]{2,6})(?:住|工作|生活)?", s)
    if m:
        yield Candidate(f"User lives in {m.group(1)}.", key="user.location", value=m.group(1), importance=0.7)
    m = re.search(r"\b(?i:i (?:work|am working) (?:at|for)) " + NAME, s)
    if m:
        yield Candidate(f"User works at {m.group(1)}.", key="user.employer", value=m.group(1), importance=0.7)
    m = re.search(r"\bi have an? ([\w-]+) allergy\b", low) or \
        re.search(r"\bi can(?:'t|not) (?:have|eat|take) ([\w-]+)[^.]*\ballergic\b", low)
    if m:
        yield Candidate(f"User is allergic to {m.group(1)}.", key=f"user.allergy.{slug(m.group(1))}",
                        value=f"allergic to {m.group(1)}", importance=0.85)
        return
    m = re.search(r"\bi(?:'m| am) (vegetarian|vegan|allergic to [\w ]+|lactose intolerant|left-handed)", low)
    if m:
        key = "user.allergy." + slug(m.group(1)[11:]) if m.group(1).startswith("allergic") else "user.diet"
        yield Candidate(third_person(s), key=key, value=m.group(1), importance=0.85)


@rule
def style(s: str, low: str) -> Iterator[Candidate]:
    m = instruction(low)
    if m:
        yield Candidate("User asks: " + s.strip().rstrip(".!") + ".", kind="procedural", key=f"{STANDING}{slug(m.group(2) + m.group(3))[:30]}",
                        value=m.group(1), importance=0.7, negated=m.group(1) == "never")


@rule
def plans(s: str, low: str) -> Iterator[Candidate]:
    m = re.search(r"\bi(?:'m| am) (?:planning|going|about) to ([^,.;]+)|\bi plan to ([^,.;]+)", low)
    if m:
        yield Candidate(third_person(s), kind="episodic", key=None, importance=0.4)


@rule
def changed_value(s: str, low: str) -> Iterator[Candidate]:
    yield from updates.changed_value(s, third_person, slug)  # "my budget was increased to $550"


def clauses(sentence: str) -> list[str]:
    """A sentence split before each first-person clause; a clause of one word is kept with the one before."""
    parts = [p.strip() for p in CLAUSE_SPLIT.split(sentence) if p and p.strip()]
    return parts or [sentence]


def taken_back(clause: str) -> str | None:
    """The affirmative statement a negated change takes back ("I'm not vegetarian anymore" -> "I am
    vegetarian"; "I no longer live in Berlin" -> "I live in Berlin"; "I used to be ..."), or None."""
    for pat, rep in CHANGES:
        if pat.search(clause):
            return re.sub(r"\s+(now|these days)\b", "", pat.sub(rep, clause, count=1)).strip()
    return None


def no_longer(text: str) -> str:
    """'User is vegetarian.' -> 'User is no longer vegetarian.'; 'User lives in Berlin.' -> 'User no longer
    lives in Berlin.'"""
    m = re.match(r"^(.+?)\b(is|are|has)\b (.*)$", text)
    if m and m.group(2) in ("is", "are"):
        return f"{m.group(1)}{m.group(2)} no longer {m.group(3)}"
    m = re.match(r"^(User(?:'s team)?|[A-Z][\w'-]*) (.*)$", text)
    return f"{m.group(1)} no longer {m.group(2)}" if m else f"No longer: {text}"


class RuleExtractor:
    """Deterministic offline extractor; ``extract`` returns candidates for every durable statement in a turn.

    A compound sentence is read clause by clause ("I'm vegetarian and I live in Berlin." gives a diet fact and a
    location fact), and a negated change ("I'm not vegetarian anymore", "I no longer live in Berlin", "I used to
    ...") yields the same key with the old value taken back, so the policy supersedes it."""

    def extract(self, text: str, source: tuple[str, ...] = ()) -> list[Candidate]:
        found: dict[str | None, Candidate] = {}
        loose: list[Candidate] = []
        for sentence in dict.fromkeys(x.strip() for x in SENT_SPLIT.split(text or "")):  # each distinct sentence once
            sentence = statement_of(sentence)  # the words before it asks (a question that states nothing: "")
            low = sentence.lower()
            if len(sentence) < 4 or re.match(r"^(if|when|what if|maybe|如果)\b", low):
                continue
            texts: set[str] = set()
            parts = clauses(sentence)
            from_clauses = [c for s in parts for c in self._clause(s)] if len(parts) > 1 else []
            claimed = {c.key for c in from_clauses}
            # a statement that needs the whole sentence ("I can't have penicillin, I'm allergic") is read from it
            whole = [c for c in self._clause(sentence) if c.key is not None and c.key not in claimed] \
                if len(parts) > 1 else self._clause(sentence)
            for c in from_clauses + whole:
                if c.text in texts:  # two rules read the same statement: keep the first
                    continue
                texts.add(c.text)
                c = replace(c, source=tuple(source))
                if c.key is None:
                    loose.append(c)
                elif c.key not in found or (found[c.key].negated and not c.negated):
                    # the first rule to claim a key wins within a turn, except that a new value said beside the
                    # one taken back ("I'm not a nurse anymore, I'm a teacher now") wins over the taking back
                    found[c.key] = c
        return list(found.values()) + loose

    def _clause(self, s: str) -> list[Candidate]:
        low = s.lower()
        if len(s) < 4 or EPHEMERAL.search(low) and not re.search(r"\b(from now on|always|anymore|no longer)\b|以后|现在", low):
            return []
        found = [c for fn in RULES for c in fn(s, low)]
        back = taken_back(s) if not found else None
        if back is None:
            return found
        # the rules read the statement taken back; its key now holds "no longer <value>"
        out = []
        for c in (c for fn in RULES for c in fn(back, back.lower())):
            if c.key is None:
                continue
            out.append(Candidate(no_longer(c.text), c.kind, c.key, f"no longer {c.value or c.text}", c.importance,
                                 True, c.source))
        return out


registry.register("extractor", "rules", RuleExtractor)
