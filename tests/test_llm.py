"""The LLM path end to end: the real `openai` client against a fake OpenAI-compatible server on loopback."""

import json

import pytest

from fake_openai import FakeOpenAI
from memkit import (ConfigError, DimensionMismatch, EventKind, ExtractionError, FactStore, LLMExtractor, Memory,
                    ModelUnavailable, OpenAIChat, Settings, as_policy, parse_json)
from memkit.models.embed import OpenAIEmbedder
from memkit.write.extract import FACTS_SCHEMA
from memkit.models.llm import DEFAULT_MAX_TOKENS

GOOD = {"facts": [{"text": "User prefers metric units.", "kind": "semantic", "key": "user.units",
                   "value": "metric", "importance": 0.8}]}


def test_settings_offline_by_default():
    s = Settings.from_env({})
    assert s.offline and s.chat_model() is None
    assert type(s.embedder()).__name__ == "MiniLMEmbedder"


def test_settings_read_memkit_vars_with_openai_fallback():
    s = Settings.from_env({"MEMKIT_LLM_MODEL": "qwen2.5", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                           "OPENAI_API_KEY": "sk-x"})
    assert s.llm.model == "qwen2.5" and s.llm.base_url == "http://127.0.0.1:9/v1" and s.llm.api_key == "sk-x"
    s = Settings.from_env({"MEMKIT_LLM_MODEL": "m", "MEMKIT_LLM_BASE_URL": "http://a/v1", "MEMKIT_LLM_API_KEY": "k1",
                           "OPENAI_API_KEY": "k2", "MEMKIT_EMBED_MODEL": "e", "MEMKIT_EMBED_BASE_URL": "http://b/v1"})
    assert s.llm.api_key == "k1" and s.embed.base_url == "http://b/v1" and s.embed.api_key == "k2"
    with pytest.raises(ConfigError, match="MEMKIT_LLM_MODEL"):
        Settings.from_env({"MEMKIT_LLM_BASE_URL": "http://a/v1"})
    with pytest.raises(ConfigError, match="MEMKIT_LLM_BASE_URL"):
        Settings.from_env({"MEMKIT_LLM_MODEL": "m"})


@pytest.mark.parametrize("reply", [
    json.dumps(GOOD),
    "```json\n" + json.dumps(GOOD, indent=2) + "\n```",
    "Sure! Here are the facts I found:\n" + json.dumps(GOOD) + "\nLet me know if you need more.",
])
def test_llm_extractor_reads_real_world_replies(fake_llm, reply):
    fake_llm.enqueue(reply)
    x = LLMExtractor(OpenAIChat("test-model", base_url=fake_llm.base_url, api_key="sk-test"))
    (c,) = x.extract("I prefer metric units.", ("t1",))
    assert (c.key, c.value, c.source) == ("user.units", "metric", ("t1",))
    req = fake_llm.requests[-1]
    assert req["body"]["response_format"]["type"] == "json_schema"  # structured output: the reply's schema
    assert req["body"]["response_format"]["json_schema"]["schema"] == FACTS_SCHEMA
    assert req["body"]["max_tokens"] == DEFAULT_MAX_TOKENS  # every request bounds its reply
    assert req["auth"] == "Bearer sk-test"
    assert req["body"]["messages"][1]["content"] == "I prefer metric units."


@pytest.mark.parametrize("reply,match", [
    ('{"facts": [{"text": "User prefers met', "no valid JSON"),
    ("I could not find any facts, sorry.", "no valid JSON"),
    ('{"memories": ["User prefers metric"]}', "expected"),
    ('{"facts": [{"kind": "semantic"}]}', "no text"),
    ('{"facts": [{"text": "x", "kind": "belief"}]}', "unknown kind"),
    ("", "empty reply"),
])
def test_malformed_replies_raise_with_what_was_received(fake_llm, reply, match):
    fake_llm.enqueue(reply, reply)  # asked again once, the same answer
    x = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url))
    with pytest.raises(ExtractionError, match=match) as err:
        x.extract("I prefer metric units.")
    assert err.value.received == reply and len(fake_llm.requests) == 2


def test_a_malformed_reply_is_asked_for_again_with_what_was_wrong(fake_llm):
    fake_llm.enqueue('{"memories": ["User prefers metric"]}', json.dumps(GOOD))
    (c,) = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)).extract("I prefer metric units.")
    assert c.key == "user.units"
    again = fake_llm.requests[-1]["body"]["messages"]
    assert again[2] == {"role": "assistant", "content": '{"memories": ["User prefers metric"]}'}
    assert again[3]["role"] == "user" and 'expected {"facts": [...]}' in again[3]["content"]
    fake_llm.enqueue("no json")
    with pytest.raises(ExtractionError):  # retries=0: the first bad reply is final
        LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url), retries=0).extract("I prefer metric units.")


def test_malformed_reply_becomes_an_error_event_and_loses_nothing(fake_llm, embedder):
    fake_llm.enqueue('{"facts": [{"text": "User prefers met')
    fake_llm.enqueue('{"facts": [{"text": "User prefers met')  # asked again: the same
    m = Memory(store=FactStore.ephemeral(embedder), extractor=LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)))
    (ev,) = m.observe("u", "s", "user", "I prefer metric units.")
    assert ev.kind == EventKind.ERROR and "User prefers met" in ev.reason
    assert m.session("u", "s").turns[-1].content == "I prefer metric units."
    assert [e.kind for e in m.store.history("u")] == [EventKind.ERROR]


def test_json_mode_falls_back_when_server_refuses_it(embedder):
    with FakeOpenAI(reject_json_mode=True) as fake:
        fake.enqueue(json.dumps(GOOD))
        chat = OpenAIChat("m", base_url=fake.base_url)
        assert parse_json(chat.complete([{"role": "user", "content": "x"}], json_mode=True)) == GOOD
        assert "response_format" not in fake.requests[-1]["body"]


def test_structured_output_falls_back_to_json_mode_then_text_and_remembers(embedder):
    with FakeOpenAI(reject_schema=True) as fake:
        chat = OpenAIChat("m", base_url=fake.base_url, max_tokens=64)
        for _ in range(2):
            fake.enqueue(json.dumps(GOOD))
            assert LLMExtractor(chat).extract("I prefer metric units.")[0].key == "user.units"
        sent = [_format(r) for r in fake.requests]
        assert sent == ["json_schema", "json_object+schema", "json_object", "json_object"]  # refused once, not asked again
        assert {r["body"]["max_tokens"] for r in fake.requests} == {64}
    with FakeOpenAI(reject_json_mode=True) as fake:
        fake.enqueue(json.dumps(GOOD))
        chat = OpenAIChat("m", base_url=fake.base_url)
        assert LLMExtractor(chat).extract("I prefer metric units.")[0].key == "user.units"
        assert [_format(r) for r in fake.requests] == ["json_schema", "json_object+schema", "json_object", None]


def test_a_server_that_answers_json_schema_with_a_500_gets_the_schema_in_json_mode_and_no_retry():
    # llama-cpp-python's server: json_schema fails its request validation, reported as HTTP 500; it takes the
    # schema as {"type": "json_object", "schema": ...}
    with FakeOpenAI(like_llama_cpp=True) as fake:
        chat = OpenAIChat("m", base_url=fake.base_url, max_retries=2)
        for _ in range(2):
            fake.enqueue(json.dumps(GOOD))
            assert LLMExtractor(chat).extract("I prefer metric units.")[0].key == "user.units"
        assert [_format(r) for r in fake.requests] == ["json_schema", "json_object+schema", "json_object+schema"]
        assert fake.requests[-1]["body"]["response_format"]["schema"] == FACTS_SCHEMA
        fake.fail("500")  # a 500 that is not about the format is still a fault, retried
        fake.enqueue(json.dumps(GOOD))
        assert LLMExtractor(chat).extract("I prefer metric units.")[0].key == "user.units"
        assert chat.level == "json+schema" and len(fake.requests) == 5


def _format(request: dict) -> str | None:
    """The response_format a request asked for: its type, and "+schema" when JSON mode carries a schema."""
    fmt = request["body"].get("response_format")
    return None if fmt is None else fmt["type"] + ("+schema" if "schema" in fmt else "")


def test_a_reply_with_one_bad_item_keeps_the_good_ones_and_the_turn_names_the_others(fake_llm, embedder):
    reply = json.dumps({"facts": [{"text": "", "kind": "semantic"}, GOOD["facts"][0],
                                  {"text": "User is a robot.", "kind": "belief"},
                                  {"text": "User has a sister named Ana.", "kind": "semantic"}]})
    fake_llm.enqueue(reply)
    found = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)).extract("I prefer metric units.")
    assert [c.key for c in found] == ["user.units"]
    assert found.refused[:2] == ("fact 0 has no text", "fact 2 has unknown kind 'belief'")
    assert found.refused[2].startswith("'User has a sister named Ana.' ")
    fake_llm.enqueue(reply)
    m = Memory(store=FactStore.ephemeral(embedder), extractor=LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)))
    events = m.observe("u", "s", "user", "I prefer metric units.", turn_id="t1")
    assert [e.kind for e in events] == [EventKind.ADD, EventKind.ERROR]
    assert events[1].source == ("t1",) and "fact 0 has no text" in events[1].reason
    assert "'User has a sister named Ana.'" in events[1].reason and "the other 1 kept" in events[1].reason
    assert [e.kind for e in m.store.history("u")] == [EventKind.ADD, EventKind.ERROR]  # in the log too
    assert m.pending_turns == [] and len(fake_llm.requests) == 2  # read once, never asked for again


def test_a_reply_cut_at_its_token_bound_keeps_its_complete_facts_once_each(fake_llm):
    city = {"text": "User lives in Oslo.", "kind": "semantic", "key": "user.city", "value": "Oslo", "importance": 0.6}
    whole = json.dumps({"facts": [GOOD["facts"][0], GOOD["facts"][0], city, city]})
    fake_llm.enqueue(whole[:whole.rindex('"value"')])  # cut inside the last item, as max_tokens cuts a reply
    found = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)).extract(
        "I prefer metric units and I live in Oslo.")
    assert [c.key for c in found] == ["user.units", "user.city"] and len(fake_llm.requests) == 1
    fake_llm.enqueue('{"facts": [{"text": "User lives in', '{"facts": []}')  # no item complete: asked again
    assert LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)).extract("I live in Oslo.") == []
    retry = fake_llm.requests[-1]["body"]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"facts": [{"text": "User lives in'}
    assert "no valid JSON" in retry[-1]["content"]


def test_a_reply_still_coming_at_the_timeout_is_cancelled_not_sent_again(fake_llm):
    import time

    chat = OpenAIChat("m", base_url=fake_llm.base_url, timeout=1.0, max_retries=2)
    fake_llm.fail("drip:0.25")  # 40 words a quarter of a second apart: 10 s of reply
    fake_llm.enqueue(" ".join(["word"] * 40))
    with pytest.raises(ModelUnavailable, match="still coming after 1 s .*cancelled"):
        chat.complete([{"role": "user", "content": "hi"}])
    assert fake_llm.requests[0]["body"]["stream"] is True and len(fake_llm.requests) == 1  # not sent again
    for _ in range(40):  # the server sees the client go at its next word
        if fake_llm.cancelled:
            break
        time.sleep(0.1)
    assert fake_llm.cancelled == 1
    fake_llm.enqueue('{"facts": []}')  # the next request is answered whole
    assert chat.complete([{"role": "user", "content": "hi"}]) == '{"facts": []}'


def test_a_stream_that_stops_before_its_last_chunk_is_a_fault_not_a_reply(fake_llm, embedder):
    good = json.dumps({"facts": [GOOD["facts"][0], GOOD["facts"][0]]})
    fake_llm.fail("cut")
    fake_llm.enqueue(good)
    m = Memory(store=FactStore.ephemeral(embedder), extractor=LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url)))
    (event,) = m.observe("u", "s", "user", "I prefer metric units.", turn_id="t1")
    assert event.kind == EventKind.ERROR and "ended before its last chunk" in event.reason
    assert [t.id for _, t, _ in m.pending_turns] == ["t1"]  # waits for flush(), not settled on half a reply
    fake_llm.enqueue(good)
    assert [e.kind for e in m.flush()] == [EventKind.ADD] and m.pending_turns == []


def test_streaming_can_be_switched_off_for_a_server_that_cannot_stream(fake_llm):
    from memkit import Settings

    env = {"MEMKIT_LLM_BASE_URL": fake_llm.base_url, "MEMKIT_LLM_MODEL": "m"}
    assert Settings.from_env(env).chat_model().stream is True
    chat = Settings.from_env({**env, "MEMKIT_LLM_STREAM": "0"}).chat_model()
    fake_llm.enqueue('{"facts": []}')
    assert chat.complete([{"role": "user", "content": "hi"}]) == '{"facts": []}'
    assert "stream" not in fake_llm.requests[-1]["body"]
    with pytest.raises(ConfigError, match="MEMKIT_LLM_STREAM='maybe' is not a switch"):
        Settings.from_env({**env, "MEMKIT_LLM_STREAM": "maybe"})


def test_max_tokens_is_configurable(monkeypatch):
    from memkit import Settings

    env = {"MEMKIT_LLM_BASE_URL": "http://127.0.0.1:9/v1", "MEMKIT_LLM_MODEL": "m", "MEMKIT_LLM_MAX_TOKENS": "128"}
    assert Settings.from_env(env).chat_model().max_tokens == 128
    assert Settings.from_env({**env, "MEMKIT_LLM_MAX_TOKENS": ""}).chat_model().max_tokens == DEFAULT_MAX_TOKENS


def test_llm_policy_decisions_and_invented_ids(fake_llm, embedder):
    chat = OpenAIChat("m", base_url=fake_llm.base_url)
    m = Memory(store=FactStore.ephemeral(embedder), policy="llm", chat_model=chat)
    fake_llm.enqueue('{"memory": [{"new": 0, "event": "ADD", "id": null, "text": "User prefers metric units."}]}')
    assert [e.kind for e in m.observe("u", "s", "user", "I prefer metric units.")] == [EventKind.ADD]
    sent = json.loads(fake_llm.requests[-1]["body"]["messages"][1]["content"])
    assert sent["existing"] == [] and sent["new"][0]["new"] == 0
    fake_llm.enqueue('```json\n{"memory": [{"new": 0, "event": "UPDATE", "id": 0, "text": "User prefers imperial units."}]}\n```')
    assert [e.kind for e in m.observe("u", "s", "user", "Use imperial units.")] == [EventKind.UPDATE]
    sent = json.loads(fake_llm.requests[-1]["body"]["messages"][1]["content"])
    assert sent["existing"] == [{"id": 0, "text": "User prefers metric units."}]  # small ids, not real ones
    assert [f.text for f in m.store.get("u")] == ["User prefers imperial units."]
    strict = Memory(store=m.store, policy=as_policy("llm", model=chat, fallback=None))
    fake_llm.enqueue('{"memory": [{"new": 0, "event": "DELETE", "id": 7}]}')
    (ev,) = strict.observe("u", "s", "user", "I moved to Oslo.")
    assert ev.kind == EventKind.ERROR and "not offered" in ev.reason  # without a fallback: reported, dropped
    assert [f.text for f in m.store.get("u")] == ["User prefers imperial units."]
    # by default what the model cannot place goes to the keyed policy, and each event says so
    fake_llm.enqueue('{"memory": [{"new": 0, "event": "DELETE", "id": 7}]}')
    (ev,) = m.observe("u", "s", "user", "I moved to Oslo.")
    assert ev.kind == EventKind.ADD and "not offered" in ev.reason and "planned by keyed" in ev.reason
    fake_llm.enqueue('{"memory": []}')  # a decision for no candidate: the skipped one is planned by keyed
    (ev,) = m.observe("u", "s", "user", "Use metric units again.")
    assert ev.kind == EventKind.UPDATE and ev.reason.startswith("the model gave no decision; planned by keyed")
    assert sorted(f.text for f in m.store.get("u")) == ["User lives in Oslo.", "User prefers metric units."]
    strict_skip = Memory(store=m.store, policy=as_policy("llm", model=chat, fallback=None))
    fake_llm.enqueue('{"memory": []}')
    (ev,) = strict_skip.observe("u", "s", "user", "I moved to Lima.")
    assert ev.kind == EventKind.ERROR and "llm gave no decision for" in ev.reason
    with pytest.raises(ConfigError, match="fallback"):
        as_policy("llm", model=chat, fallback="llm")


def test_from_settings_uses_the_endpoint(fake_llm, monkeypatch):
    monkeypatch.setenv("MEMKIT_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("MEMKIT_LLM_MODEL", "deepseek-chat")
    monkeypatch.setenv("MEMKIT_LLM_API_KEY", "sk-llm")
    fake_llm.enqueue(json.dumps(GOOD))
    m = Memory.from_settings()
    assert [e.kind for e in m.observe("u", "s", "user", "I prefer metric units.")] == [EventKind.ADD]
    assert fake_llm.requests[-1]["body"]["model"] == "deepseek-chat"
    assert fake_llm.requests[-1]["auth"] == "Bearer sk-llm"


def test_endpoint_embedder_and_dimension_guard(fake_llm, tmp_path, embedder):
    remote = OpenAIEmbedder("text-embedding-test", base_url=fake_llm.base_url, api_key="sk-secret-123")
    assert "sk-secret-123" not in json.dumps(remote.get_config())  # the key itself is never stored
    s1 = FactStore.persistent(str(tmp_path), remote)
    assert s1.dimension == 8
    from memkit import Fact

    s1.upsert("u", [Fact(id="f", user_id="u", text="User prefers metric units.")])
    s1.close()
    s2 = FactStore.persistent(str(tmp_path), embedder)
    with pytest.raises(DimensionMismatch, match="dimension 8"):  # a vector read of the 8-d index
        s2.search("u", "units")
    with pytest.raises(DimensionMismatch, match="dimension 8"):  # and a write into it
        s2.upsert("u", [Fact(id="g", user_id="u", text="User lives in Oslo.")])
    assert [f.id for f in s2.get("u")] == ["f"]  # the facts' text (the profile) stays readable, nothing corrupted


def test_a_timeout_is_not_sent_again_but_a_server_error_is(fake_llm):
    import time

    fake_llm.fail("slow:1.5")
    with pytest.raises(ModelUnavailable, match="timeout"):
        OpenAIChat("m", base_url=fake_llm.base_url, timeout=0.5, max_retries=2).complete([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 1  # the server may still be generating it: no second copy behind it
    time.sleep(1.2)  # the abandoned request ends (its handler answers no one)
    fake_llm.fail("500", "429")
    fake_llm.enqueue("hello")
    assert OpenAIChat("m", base_url=fake_llm.base_url, max_retries=2).complete([{"role": "user", "content": "hi"}]) == "hello"
    assert len(fake_llm.requests) == 4


def test_after_repeated_faults_calls_fail_at_once_until_a_probe(fake_llm):
    import pickle
    import time

    chat = OpenAIChat("m", base_url=fake_llm.base_url, max_retries=0, breaker_after=2, breaker_cooldown=0.4)
    fake_llm.fail("500", "500")
    for _ in range(2):
        with pytest.raises(ModelUnavailable, match="HTTP 500"):
            chat.complete([{"role": "user", "content": "hi"}])
    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match="not asked again"):
        chat.complete([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 2 and time.monotonic() - started < 0.2  # no request: it failed at once
    time.sleep(0.45)
    fake_llm.enqueue("back")
    assert chat.complete([{"role": "user", "content": "hi"}]) == "back" and chat.failures == 0  # the probe
    copy = pickle.loads(pickle.dumps(chat))  # what memkit bench --jobs sends to its workers
    fake_llm.enqueue("copied")
    assert copy.complete([{"role": "user", "content": "hi"}]) == "copied"


def _llm_check(base_url: str) -> "subprocess.CompletedProcess[str]":
    import os
    import subprocess
    import sys

    env = {**os.environ, "MEMKIT_LLM_BASE_URL": base_url, "MEMKIT_LLM_MODEL": "m", "MEMKIT_LLM_TIMEOUT": "5"}
    return subprocess.run([sys.executable, "-m", "memkit.cli", "llm", "check"], capture_output=True, text=True,
                          env=env, timeout=120)


def test_llm_check_says_what_an_endpoint_can_do(fake_llm):
    sample = {"facts": [{"text": "User prefers metric units.", "kind": "semantic", "key": "user.units",
                         "value": "metric", "importance": 0.6},
                        {"text": "User lives in Oslo.", "kind": "semantic", "key": "user.location", "value": "Oslo",
                         "importance": 0.6}]}
    fake_llm.enqueue("ok", '{"facts": []}', '{"facts": []}', '{"facts": []}', json.dumps(sample))
    out = _llm_check(fake_llm.base_url)
    assert out.returncode == 0, out.stderr
    assert [line.split()[0] for line in out.stdout.splitlines()[1:6]] == ["ok"] * 5
    assert "will ask for structured output" in out.stdout and "can extract facts" in out.stdout
    formats = [_format(r) for r in fake_llm.requests]
    assert formats == [None, "json_schema", "json_object+schema", "json_object", "json_schema"]


def test_llm_check_names_what_fails(embedder):
    with FakeOpenAI(reject_schema=True) as fake:
        fake.enqueue("ok", '{"facts": []}', '{"facts": []}', '{"facts": []}')  # finds nothing in the sample
        out = _llm_check(fake.base_url)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[2].split()[0] == "NO" and "structured output" in lines[2]  # the schema was refused
        assert lines[4].split()[0] == "NO" and "llama.cpp's form" in lines[4]  # in either form
        assert "will ask for JSON mode" in out.stdout and "keep the rule extractor" in out.stdout
    with FakeOpenAI(like_llama_cpp=True) as fake:
        fake.enqueue("ok", '{"facts": []}', '{"facts": []}', '{"facts": []}')
        out = _llm_check(fake.base_url)
        assert "will ask for the schema in JSON mode" in out.stdout, out.stdout
    out = _llm_check("http://127.0.0.1:9/v1")  # nothing listens
    assert out.returncode == 1 and "does not answer" in out.stdout


def test_a_fact_the_turn_does_not_support_is_refused_with_its_reason(fake_llm):
    invented = {"text": "User has a sister named Ana.", "kind": "semantic", "key": "user.family.sister",
                "value": "Ana", "importance": 0.5}
    fake_llm.enqueue(json.dumps({"facts": [GOOD["facts"][0], invented]}))
    x = LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url))
    assert [c.key for c in x.extract("I prefer metric units.")] == ["user.units"]  # the invented one left out
    dropped = {"text": "User uses Docker.", "kind": "semantic", "key": "user.uses.docker", "value": "yes",
               "importance": 0.5}
    fake_llm.enqueue(json.dumps({"facts": [dropped]}), json.dumps({"facts": [dropped]}))  # and when asked again
    with pytest.raises(ExtractionError, match="drops the turn's negation"):
        x.extract("I don't use Docker anymore.")
    assert "drops the turn's negation" in fake_llm.requests[-1]["body"]["messages"][3]["content"]  # the model was told
    fake_llm.enqueue(json.dumps({"facts": [invented]}))
    assert LLMExtractor(OpenAIChat("m", base_url=fake_llm.base_url), check_support=False).extract("I like tea.")[0].key \
        == "user.family.sister"


@pytest.mark.parametrize("fact,turn,why", [
    ("User prefers metric units.", "I prefer metric units.", None),
    ("User has a sister named Ana.", "I like tea.", "unsupported"),
    ("User uses Docker.", "I don't use Docker anymore.", "drops the turn's negation"),
    ("User does not use Docker.", "I don't use Docker anymore.", None),
    ("User dislikes meetings.", "I don't like meetings, but I love pair programming.", None),
    ("User loves pair programming.", "I don't like meetings, but I love pair programming.", None),
    ("User does not like tea.", "I like tea.", "adds a negation"),
    ("User no longer uses Go.", "We moved from Go to Python.", None),
    ("User likes cats.", "No, I love cats!", None),
    ("User's name is Wang Lei.", "我叫王磊", None),  # another script: words cannot judge it
    # a word of the turn, and a name or number it never says
    ("User's sister Maria lives in Paris.", "My sister lives in Lyon.", "never says maria, paris"),
    ("User is 35 years old.", "I'm 53 years old.", "never says 35"),
    ("User moved to Berlin in 2021.", "We moved to berlin in 2021.", None),
    ("User's name is Priya.", "Hi, I'm Priya, a data scientist in Toronto.", None),
])
def test_support_judges_words_and_negation_clause_by_clause(fact, turn, why):
    from memkit.write.support import unsupported
    from memkit.types import Candidate

    got = unsupported(Candidate(fact), turn)
    assert (got is None) if why is None else (got is not None and why in got)
