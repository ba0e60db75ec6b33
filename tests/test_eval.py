import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from memkit import DatasetError, FactStore
from memkit.eval import load, run
from memkit.eval.data import timestamp
from memkit.eval.datasets import describe
from memkit.eval.metrics import answer_in_context, duplicate_rate, evidence_recall, normalise, stale, stale_of
from memkit.types import Context, Fact, Part

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parents[1]
SUITE = ROOT / "data" / "suite.jsonl"


def test_locomo_loader():
    (c,) = load(DATA / "locomo_sample.json")
    assert c.user_id == "conv-t1" and [s.id for s in c.sessions] == ["session_1", "session_2"]
    assert c.sessions[0].time == "1:56 pm on 8 May, 2023"
    t = c.turn("D1:3")
    assert t.speaker == "Caroline" and "rainbow flag" in t.content
    types = [p.type for p in c.probes]
    assert types == ["single-hop", "temporal", "multi-hop", "adversarial"]
    assert c.probes[1].answer == "2020"
    assert c.probes[2].evidence == ("D2:1", "D1:2")
    assert c.probes[3].answer == "Rex" and c.probes[3].evidence == ()
    assert c.notes["malformed_evidence"] == 1
    assert {p.time for p in c.probes} == {timestamp(c.sessions[-1].time)} != {None}  # asked after the last session


def test_memkit_jsonl_sessions_are_replayed_in_time_order_and_a_probe_is_asked_after_its_session(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "c", "user_id": "u", "sessions": [
        {"id": "late", "time": "2026-03-09T10:00:00", "turns": [{"id": "late:1", "role": "user", "content": "Hi."}]},
        {"id": "early", "time": "2026-03-02T10:00:00", "turns": [{"id": "early:1", "role": "user", "content": "Yo."}]}],
        "probes": [{"id": "p", "after_session": "early", "question": "?", "answer": "a"},
                   {"id": "q", "after_session": "late", "question": "?", "answer": "a", "time": "2026-04-01T00:00:00"}]}))
    (c,) = load(path)
    assert [s.id for s in c.sessions] == ["early", "late"]
    assert c.probes[0].time == timestamp("2026-03-02T10:00:00") and c.probes[1].time == timestamp("2026-04-01T00:00:00")


def test_longmemeval_loader():
    a, b = load(DATA / "longmemeval_sample.json")
    assert a.probes[0].evidence == ("sA:0",) and a.probes[0].type == "single-session-user"
    assert b.probes[0].type == "abstention" and b.probes[0].evidence == ()
    assert a.sessions[1].turns[0].content == "It was hot yesterday."


def test_realtalk_loader_normalises_evidence_and_counts_what_it_leaves_out():
    second, tenth = load(DATA / "realtalk", "realtalk")  # a folder: chats in their number's order
    assert (second.id, tenth.id) == ("Chat_2_fixture", "Chat_10_fixture") and second.user_id == second.id
    # sessions replayed in time order (session_3 holds day 2); an empty turn is not a turn
    assert [s.id for s in second.sessions] == ["session_1", "session_3", "session_2"]
    assert second.turn("D1:4") is None and second.turn("D2:1").speaker == "Ines Duarte"
    assert second.turn("D1:2").role == "assistant" and second.turn("D1:1").role == "user"
    assert second.turn("D1:3").content.endswith("[image: a red bicycle leaning on a wall]")
    assert [p.evidence for p in second.probes] == [("D1:2", "D3:1"), ("D2:1",), ("D3:1", "D3:2", "D3:3"), ("D1:3",),
                                                   (), ()]
    assert [p.type for p in second.probes][:3] == ["commonsense", "temporal", "multi-hop"]
    assert second.notes["questions"] == 6 and second.notes["without_evidence"] == 2
    assert second.notes["missing_evidence"] == 2 and second.notes["malformed_evidence"] == 2  # D1:9, D9:1; "", "D:56"
    assert {p.time for p in second.probes} == {timestamp("05.02.2024, 19:00:00")}
    assert load(DATA / "realtalk" / "Chat_10_fixture.json")[0].probes[0].evidence == ("D1:1",)
    assert describe([second, tenth]).startswith("7 questions, 2 without evidence")


def test_beam_loader_reads_message_ids_and_every_shape_of_evidence():
    one, two = load(DATA / "beam")  # a folder of conversations, guessed as BEAM
    assert (one.id, two.id) == ("beam-beam-1", "beam-beam-2")
    assert [s.id for s in one.sessions] == ["s1", "s2"] and one.sessions[1].time == "May-27-2025"
    assert one.turn("0").content == "I'm wiring a rain sensor to my balcony irrigation timer; the pump test is on June 4."
    assert one.turn("4").content.endswith("after the firmware fix") and one.turn("6").content.endswith("(my rule).")
    assert one.turn("1").role == "assistant"
    by_type = {p.type: p for p in one.probes}
    assert by_type["information_extraction"].evidence == ("0",)
    assert by_type["knowledge_update"].evidence == ("2", "4")  # a dict of lists, written as a string, one repeat
    assert by_type["knowledge_update"].superseded == ("2",)  # original_info: the value turn "4" replaced
    assert by_type["contradiction_resolution"].superseded == by_type["information_extraction"].superseded == ()
    old, new = (one.turn(t).content for t in ("2", "4"))
    stale = by_type["knowledge_update"]
    assert stale_of(ctx(old), one, stale) == 1.0 and stale_of(ctx(f"{old}\n{new}"), one, stale) == 0.0
    assert stale_of(ctx(new), one, stale) == 0.0 and math.isnan(stale_of(ctx(old), one, by_type["abstention"]))
    updated = Fact(id="f", user_id="u", text="The valves open in about 40 seconds.", source=("2", "4"))
    assert stale_of(ctx("The valves open in about 40 seconds.", [updated]), one, stale) == 0.0  # updated in place
    assert by_type["abstention"].evidence == () and by_type["abstention"].answer == ""
    assert by_type["instruction_following"].evidence == ("6",) and by_type["instruction_following"].answer == ""
    assert by_type["contradiction_resolution"].answer == "You said you'd rather keep it on a single Raspberry Pi."
    assert one.notes == {"questions": 5, "missing_evidence": 1, "without_evidence": 1}
    assert {p.time for p in one.probes} == {timestamp("May-27-2025")} != {None}
    (alone,) = load(DATA / "beam" / "2", "beam")
    assert alone.id == "beam-2" and alone.probes[0].evidence == ("0",)


@pytest.mark.parametrize("path,fmt", [("beam", "realtalk"), ("realtalk", "beam"), ("nope", "beam"),
                                      ("locomo_sample.json", "realtalk")])
def test_real_dev_set_loaders_name_a_wrong_path(path, fmt):
    with pytest.raises(DatasetError):
        load(DATA / path, fmt)


def test_builtin_suite_shape():
    convs = load(SUITE)
    assert len(convs) >= 60 and len({c.user_id for c in convs}) >= 60
    types = {p.type for c in convs for p in c.probes}
    assert {"knowledge-update", "update-reworded", "update-zh", "alike", "long-range", "abstention",
            "negation", "single-fact"} <= types
    for c in convs:
        assert len(c.sessions) >= 12
        for p in c.probes:
            for e in p.evidence:
                assert c.turn(e) is not None, (c.id, p.id, e)


@pytest.mark.parametrize("suite,committed", [("first", "suite.jsonl"), ("chats", "chats.jsonl"),
                                             ("assistant", "assistant.jsonl")])
def test_the_committed_suites_are_what_the_installed_generators_write(tmp_path, suite, committed):
    out = tmp_path / "s.jsonl"
    subprocess.run([sys.executable, "-m", "memkit", "generate", "--suite", suite, "--out", str(out)], check=True,
                   capture_output=True)
    assert out.read_bytes() == (SUITE.parent / committed).read_bytes()
    from memkit.eval import builtin_suite

    assert [c.id for c in builtin_suite(suite)] == [c.id for c in load(SUITE.parent / committed)]


@pytest.mark.parametrize("path,fmt", [("nope.json", None), (DATA / "locomo_sample.json", "longmemeval"),
                                      (DATA / "longmemeval_sample.json", "memkit"), (SUITE, "locomo")])
def test_bad_files_are_clear_errors(path, fmt):
    with pytest.raises(DatasetError):
        load(path, fmt)


def ctx(text, facts=()):
    items = tuple({"id": f.id, "text": f.text, "source": list(f.source)} for f in facts)
    return Context(({"role": "user", "content": text},), (Part("facts", "", 0, items), Part("turns", text, 1)), 100)


def test_metrics():
    (c,) = load(DATA / "locomo_sample.json")
    assert evidence_recall(ctx("Caroline: I'm a counselor, so I love helping people."), c, ["D1:3"]) == 1.0
    f = Fact(id="f", user_id="u", text="Caroline is a counselor.", source=("D1:3",))
    assert evidence_recall(ctx("nothing here", [f]), c, ["D1:3", "D2:2"]) == 0.5
    assert math.isnan(evidence_recall(ctx("x"), c, []))
    assert answer_in_context(ctx("They moved in 2020."), "2020") == 1.0
    assert answer_in_context(ctx("They moved in 2021."), "2020") == 0.0
    assert stale(ctx("User prefers metric units."), "imperial", "metric") == 1.0
    assert stale(ctx("metric then imperial"), "imperial", "metric") == 0.0
    assert normalise("Café, ÜBER!") == "cafe uber"
    facts = [Fact(id=str(i), user_id="u", text=t, key=k) for i, (t, k) in
             enumerate([("a", "user.units"), ("b", "user.units"), ("c", None), ("c", None), ("d", "user.x")])]
    assert duplicate_rate(facts) == 0.8


def test_runner_compares_strategies_on_the_suite():
    convs = load(SUITE)[:3]
    results, summary, confusion = run(convs, ["window", "two-layer:keyed", "two-layer:similarity"], budget=600,
                                      store=FactStore.ephemeral())
    assert set(results["strategy"]) == {"window", "two-layer:keyed", "two-layer:similarity"}
    assert len(results) == 3 * sum(len(c.probes) for c in convs)
    allrows = summary[summary["type"] == "all"].set_index("strategy")
    assert (results.groupby("strategy")["context_tokens"].max() <= 600).all()
    # two-layer memory beats a sliding window of the same budget on multi-session recall
    assert allrows.loc["two-layer:keyed", "evidence_recall"] > allrows.loc["window", "evidence_recall"]
    # the keyed policy leaves no contradicting duplicates; the similarity threshold does
    assert allrows.loc["two-layer:keyed", "duplicate_rate"] < allrows.loc["two-layer:similarity", "duplicate_rate"]
    assert set(confusion["gold"]) <= {"ADD", "UPDATE", "DELETE", "NOOP"}
    for col in ["read_p50_ms", "read_p95_ms", "write_p50_ms", "write_p95_ms", "tokens_per_turn", "op_accuracy",
                "fact_precision"]:
        assert col in allrows.columns
    assert 0 < allrows.loc["two-layer:keyed", "fact_precision"] <= 1 and math.isnan(allrows.loc["window", "fact_precision"])


def test_fact_precision_counts_facts_written_from_turns_that_should_change_nothing():
    from memkit.eval.metrics import fact_precision

    assert fact_precision({("ADD", "ADD"): 3, ("NOOP", "ADD"): 1, ("UPDATE", "ADD"): 2, ("ADD", "NOOP"): 5}) == 5 / 6
    assert math.isnan(fact_precision({("ADD", "NOOP"): 2}))


def test_every_measure_is_declared_once_and_a_row_missing_one_is_an_error():
    from memkit.eval.metrics import PROBE_MEASURES, RUN_MEASURES, with_columns
    from memkit.eval.stats import METRICS

    convs = load(SUITE)[:1]
    results, summary, _ = run(convs, ["two-layer:keyed"], budget=400, per_turn_tokens=False)
    names = [m.name for m in PROBE_MEASURES + RUN_MEASURES]
    assert len(names) == len(set(names))
    assert list(results.columns[5:]) == [m.name for m in PROBE_MEASURES if not m.judged]
    assert {m.name for m in PROBE_MEASURES if m.aggregate and not m.judged} | {m.name for m in RUN_MEASURES} <= set(summary)
    assert {f"{m}_ci_low" for m in METRICS} <= set(summary) and "evidence_recall" in METRICS
    with pytest.raises(ValueError, match="stale"):
        with_columns([{"a": 1, "stale": 0.0}, {"a": 2}], ["a", "stale"])
    with pytest.raises(ValueError, match="extra"):
        with_columns([{"a": 1, "extra": 0.0}], ["a"])


def test_bench_cli_writes_files(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(SUITE), "--limit", "2",
                        "--strategy", "window", "--strategy", "two-layer:keyed", "--budget", "500",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "two-layer:keyed" in r.stdout
    res = pd.read_csv(out / "results.csv")
    summ = pd.read_csv(out / "summary.csv")
    assert set(res["strategy"]) == {"window", "two-layer:keyed"} and "evidence_recall" in res
    assert {"all", "knowledge-update"} <= set(summ["type"])
    assert (out / "plot.html").stat().st_size > 10_000
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["budget"] == 500 and run_json["format"] == "memkit"  # the guessed format, not null


def test_bench_cli_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(tmp_path / "missing.jsonl"),
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "DatasetError" in r.stderr and "missing.jsonl" in r.stderr
    assert "memkit generate --suite first|chats|assistant" in r.stderr  # names what there is instead
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(DATA / "locomo_sample.json"),
                        "--format", "longmemeval", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "not a LongMemEval file" in r.stderr


def test_bench_runs_on_converted_public_formats(tmp_path):
    for f in ["locomo_sample.json", "longmemeval_sample.json"]:
        results, summary, _ = run(load(DATA / f), ["window", "two-layer:keyed"], budget=300, store=FactStore.ephemeral())
        assert len(results) == 2 * sum(len(c.probes) for c in load(DATA / f))


def test_bench_scale_times_the_paths_users_call(tmp_path):
    from memkit.eval.scale import measure

    row = measure(6, 20, queries=12, path=str(tmp_path / "both"), max_users=4)
    assert (row["users"], row["items_per_user"], row["items"]) == (6, 20, 120)
    for name in ("context", "bare_read", "index_calls", "cold_context", "opened_100ms", "observe", "bare_write"):
        assert row[f"{name}_p95_ms"] >= row[f"{name}_p50_ms"] > 0, name
    assert row["memory_search_p50_ms"] > 0 and row["store_search_p50_ms"] > 0 and row["idle_warm_p50_ms"] > 0
    assert row["opened_vs_idle_warm_p50"] == row["opened_100ms_p50_ms"] / row["idle_warm_p50_ms"]
    assert row["index_calls_vs_bare_p95"] == row["index_calls_p95_ms"] / row["bare_read_p95_ms"]
    assert 0 < row["context_vs_bare_p95_low"] <= row["context_vs_bare_p95_high"]
    assert row["peak_rss_mb"] > 0 and row["disk_mb"] > 0
    assert 0 <= row["opened_still_loading"] <= 6


def test_pooled_embedder_embeds_each_distinct_sentence_once_and_queries_for_real():
    from memkit.models.embed import shared_embedder
    from memkit.eval.scale import PooledEmbedder

    e = PooledEmbedder()
    a, b, q = e(["User uses vim #1", "User uses vim #2", "User uses vim?"])
    assert list(e.memo) == ["User uses vim"] and (a == b).all()
    assert (q == shared_embedder()(["User uses vim?"])[0]).all()


def test_judged_answer_column_through_a_fake_endpoint(fake_llm):
    from memkit import OpenAIChat

    convs = load(DATA / "longmemeval_sample.json")
    fake_llm.enqueue("You prefer metric units.", '{"correct": true}',          # q1
                     "I don't know.", "```json\n{\"correct\": true}\n```")       # q2 (abstention)
    results, summary, _ = run(convs, ["two-layer:keyed"], budget=300, store=FactStore.ephemeral(),
                              judge_model=OpenAIChat("judge", base_url=fake_llm.base_url), per_turn_tokens=False)
    assert list(results["judged_correct"]) == [1.0, 1.0]
    assert results["judged_answer"][0] == "You prefer metric units."
    answer_request = fake_llm.requests[0]["body"]["messages"][1]["content"]
    assert "prefer metric units." in answer_request and "What units do I prefer?" in answer_request
    assert "judged_correct" in summary.columns
    fake_llm.enqueue("Metric.", "the answer seems right")                        # unparsable grade
    fake_llm.enqueue("No idea.", '{"correct": false}')
    results, _, _ = run(convs, ["two-layer:keyed"], budget=300, store=FactStore.ephemeral(),
                        judge_model=OpenAIChat("judge", base_url=fake_llm.base_url), per_turn_tokens=False)
    assert math.isnan(results["judged_correct"][0]) and results["judged_correct"][1] == 0.0


def test_judge_flag_needs_an_endpoint(tmp_path):
    r = subprocess.run([sys.executable, "-m", "memkit.cli", "bench", "--data", str(SUITE), "--limit", "1", "--judge",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "MEMKIT_LLM_MODEL" in r.stderr


def test_longmemeval_sessions_replay_in_date_order_and_the_probe_keeps_its_question_date(tmp_path):
    from datetime import datetime

    item = json.loads((DATA / "longmemeval_sample.json").read_text())[0]
    item = {**item, "haystack_session_ids": item["haystack_session_ids"][::-1],
            "haystack_dates": item["haystack_dates"][::-1], "haystack_sessions": item["haystack_sessions"][::-1]}
    path = tmp_path / "longmemeval_shuffled.json"
    path.write_text(json.dumps([item]))
    [conv] = load(path)
    times = [datetime.strptime(s.time, "%Y/%m/%d (%a) %H:%M") for s in conv.sessions]
    assert times == sorted(times) and [s.id for s in conv.sessions] == sorted(item["haystack_session_ids"])
    assert conv.probes[0].time == datetime(2023, 5, 30, 10, 0).timestamp()


def test_assistant_suite_is_user_assistant_shaped_with_question_times():
    from memkit.models import tokens
    from memkit.eval import builtin_suite

    convs = builtin_suite("assistant", seed=3, conversations=3)
    assert builtin_suite("assistant", seed=3, conversations=3) == convs  # deterministic for a seed
    answers = [tokens.count(t.content) for c in convs for s in c.sessions for t in s.turns if t.role == "assistant"]
    assert 300 <= min(answers) and max(answers) <= 800
    types = {p.type for c in convs for p in c.probes}
    assert {"single-session-user", "single-session-assistant", "single-session-preference", "knowledge-update",
            "temporal-reasoning"} <= types
    for c in convs:
        last = max(timestamp(s.time) for s in c.sessions)
        for p in c.probes:
            assert p.time is not None and p.time > last and p.evidence
            for e in p.evidence:
                turn = c.turn(e)
                assert turn is not None
                if p.type == "single-session-assistant":  # the answer is said by the assistant, in a long turn
                    assert turn.role == "assistant" and p.answer in turn.content
                if p.type in ("single-session-user", "knowledge-update"):
                    assert turn.role == "user" and p.answer in turn.content
    committed = load(ROOT / "data" / "assistant.jsonl")
    assert [c.id for c in committed] == [c.id for c in builtin_suite("assistant")]  # the file is seed 0


def test_ratio_interval_resamples_rounds_in_pairs():
    import random

    from memkit.eval.stats import ratio_interval

    rng = random.Random(0)
    bare = [rng.uniform(5, 10) for _ in range(400)]
    assert ratio_interval([2 * b for b in bare], bare) == pytest.approx((2.0, 2.0))  # paired: every resample is 2x
    low, high = ratio_interval([b + rng.uniform(0, 10) for b in bare], bare)
    assert 1.0 < low < high < 3.0
    assert all(math.isnan(x) for x in ratio_interval([], []) + ratio_interval([1.0], [1.0, 2.0]))


def test_summary_has_intervals_and_compare_pairs_strategies_on_the_same_conversations():
    from memkit.eval import builtin_suite
    from memkit.eval.stats import compare

    convs = builtin_suite("first", conversations=6)
    results, summary, _ = run(convs, ["window", "two-layer:keyed", "summary"], budget=[300, 900],
                              per_turn_tokens=False)
    for metric in ("evidence_recall", "answer_in_context"):
        valued = summary[summary[metric].notna()]  # abstention probes have no evidence: no value, no interval
        low, high = valued[f"{metric}_ci_low"], valued[f"{metric}_ci_high"]
        assert len(valued) > 20 and low.notna().all() and high.notna().all()
        assert ((low <= valued[metric] + 1e-9) & (valued[metric] <= high + 1e-9)).all()
        assert summary.loc[summary[metric].isna(), f"{metric}_ci_low"].isna().all()
    again = run(convs, ["window", "two-layer:keyed", "summary"], budget=[300, 900], per_turn_tokens=False)[1]
    assert again["evidence_recall_ci_low"].equals(summary["evidence_recall_ci_low"])  # a fixed seed
    pairs = compare(results, ["window", "two-layer:keyed", "summary"])
    assert len(pairs[(pairs["type"] == "all") & (pairs["metric"] == "evidence_recall")]) == 3 * 2  # 3 pairs x 2 budgets
    row = pairs[(pairs["budget"] == 300) & (pairs["type"] == "all") & (pairs["metric"] == "evidence_recall")
                & (pairs["strategy_a"] == "window") & (pairs["strategy_b"] == "two-layer:keyed")].iloc[0]
    means = summary[(summary["type"] == "all") & (summary["budget"] == 300)].set_index("strategy")["evidence_recall"]
    assert math.isclose(row["difference"], means["window"] - means["two-layer:keyed"])
    assert row["ci_high"] < 0 and row["p_value"] < 0.05 and row["verdict"] == "two-layer:keyed higher"
    assert row["units"] == 6  # resampled by conversation
    same = compare(pd.concat([results, results.assign(strategy="copy")]), ["window", "copy"])
    assert (same["difference"] == 0).all()
    assert (same.loc[same["units"] > 5, "verdict"] == "indistinguishable").all()
    # five conversations or fewer (here, the probe types only some conversations have): a sign-flip test cannot
    # go below 2/32, whatever the difference; the verdict says so
    few_units = same[same["units"] <= 5]
    assert (few_units["verdict"] == few_units["units"].map("too few conversations ({}) for p < 0.05".format)).all()
    few = compare(results[results["conversation"].isin([c.id for c in convs[:5]])], ["window", "two-layer:keyed"])
    assert few["verdict"].str.startswith("too few conversations (").all()


def test_a_line_many_turns_say_covers_none_of_them_and_a_shown_turn_covers_itself():
    from memkit.eval.data import conversation

    c = conversation({"id": "c", "user_id": "u", "sessions": [{"id": "s1", "time": None, "turns": [
        {"id": "t1", "role": "assistant", "content": "Consistency matters more than intensity. Bake it at 190 degrees."},
        {"id": "t2", "role": "assistant", "content": "Consistency matters more than intensity. Rest on Sundays."}]}]})
    assert evidence_recall(ctx("Consistency matters more than intensity."), c, ["t1"]) == 0.0  # said by both
    assert evidence_recall(ctx("Bake it at 190 degrees."), c, ["t1"]) == 1.0  # said by t1 alone
    shown = Context((), (Part("episodes", "excerpt", 1, ({"turn_id": "t2", "text": "..."},)),), 100)
    assert evidence_recall(shown, c, ["t2", "t1"]) == 0.5  # an item of the episodes part covers its turn


def test_a_bench_run_is_reproducible_to_the_token():
    # the same words said in several sessions tie on distance, and background warm-ups used to change the
    # embedding batches: two runs then differed by a few tokens and repeated lines on some probes
    convs = load(ROOT / "data" / "chats.jsonl")[:1]
    runs = [run(convs, ["rag:hybrid"], budget=[200, 1200], per_turn_tokens=False)[0] for _ in range(2)]
    columns = [c for c in runs[0].columns if c != "read_ms"]
    pd.testing.assert_frame_equal(runs[0][columns], runs[1][columns])


def test_longmemeval_probes_report_session_level_recall_beside_turn_level_evidence():
    from memkit.eval.metrics import session_recall

    a, b = load(DATA / "longmemeval_sample.json")
    assert a.probes[0].sessions == ("sA",) and b.probes[0].sessions == ()
    results, summary, _ = run([a, b], ["rag:bm25"], budget=300, per_turn_tokens=False)
    row = results[results["probe"] == a.probes[0].id].iloc[0]
    assert row["session_recall_any"] == row["session_recall_all"] == 1.0 == row["evidence_recall"]
    assert math.isnan(results[results["probe"] == b.probes[0].id].iloc[0]["session_recall_any"])  # none named
    assert "session_recall_all" in summary.columns
    # two answer sessions, one of them shown: any, not all
    shown = Context((), (Part("episodes", "x", 1, ({"turn_id": "sA:0", "session_id": "sA"},)),), 100)
    assert session_recall(shown, a, ["sA", "sB"]) == (1.0, 0.0)
    fact = Context((), (Part("facts", "x", 1, ({"id": "f", "source": ["sB:1"]},)),), 100)
    assert session_recall(fact, a, ["sA", "sB"]) == (1.0, 0.0) and session_recall(fact, a, ["sB"]) == (1.0, 1.0)


def test_a_turn_the_model_failed_on_is_an_error_not_a_correct_noop(fake_llm):
    from memkit import LLMExtractor, OpenAIChat

    conv = next(c for c in load(SUITE) if c.ops)
    user_turns = sum(t.role == "user" for s in conv.sessions for t in s.turns)
    fake_llm.enqueue(*["no json here"] * 2 * user_turns)  # every extraction reply malformed, asked again too
    model = OpenAIChat("m", base_url=fake_llm.base_url, api_key="k")
    _, summary, confusion = run([conv], ["two-layer:keyed"], budget=400, per_turn_tokens=False,
                                store=FactStore.ephemeral(), extractor=LLMExtractor(model))
    row = summary[summary["type"] == "all"].iloc[0]
    assert set(confusion["predicted"]) == {"ERROR"} and row["error_rate"] == 1.0
    assert row["op_accuracy"] == 0.0  # turns that should change nothing were not "right" because nothing was written


def test_a_memory_option_no_strategy_takes_is_refused_before_the_run_starts():
    """A misspelt option was dropped in silence by the baselines (and by every strategy of a run that had
    none of the two-layer ones): now it is a ConfigError naming it, from run() and from strategies.make."""
    from memkit.errors import ConfigError
    from memkit.strategies import make

    convs = load(str(Path(__file__).resolve().parents[1] / "data" / "suite.jsonl"))[:1]
    with pytest.raises(ConfigError, match="profile_tokes"):
        run(convs, ["rag:bm25"], budget=200, profile_tokes=0)
    with pytest.raises(ConfigError, match="unknown memory options"):
        make("full", "u", 200, windw_tokens=10)
    results, _, _ = run(convs, ["rag:bm25"], budget=200, profile_tokens=0)  # a real option a baseline does not use
    assert len(results) > 0


def test_a_run_spec_is_checked_once_and_runs_as_run_does():
    """RunSpec: the run's what and how, frozen and checked where it is built; run_spec(convs, spec) gives the
    rows run(...) gives for the same arguments."""
    import dataclasses

    from memkit.errors import ConfigError, InvalidArgument
    from memkit.eval import RunSpec, run_spec

    convs = load(str(Path(__file__).resolve().parents[1] / "data" / "suite.jsonl"))[:1]
    with pytest.raises(ConfigError, match="unknown strategy"):
        RunSpec(("two-layer:nope",), (400,))
    with pytest.raises(InvalidArgument, match="budget"):
        RunSpec(("window",), (0,))
    with pytest.raises(ConfigError, match="windw_tokens"):
        RunSpec(("window",), (400,), options={"windw_tokens": 10})
    spec = RunSpec(("window", "two-layer:keyed"), (200, 400), k=3, options={"profile_tokens": 0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.k = 4  # type: ignore[misc]
    assert [(c.id, name, bs) for c, name, bs in spec.jobs(convs)] == \
        [(convs[0].id, "window", [200, 400]), (convs[0].id, "two-layer:keyed", [200, 400])]
    timing = lambda df: df[[c for c in df.columns if not c.endswith("_ms")]]  # noqa: E731
    a, _, _ = run_spec(convs, spec)
    b, _, _ = run(convs, ["window", "two-layer:keyed"], budget=[200, 400], k=3, profile_tokens=0)
    pd.testing.assert_frame_equal(timing(a), timing(b))


def test_what_each_layer_adds_pairs_every_variant_with_full_memory(tmp_path):
    from memkit.eval import layers

    convs = load(DATA / "beam")
    rows = layers.measure(convs, [400], [layers.FULL, "without episodes", "rag:bm25"])
    assert set(rows["strategy"]) == {layers.FULL, "without episodes", "rag:bm25"}
    t = layers.table(rows).set_index(["variant", "type"])
    full, off = t.loc[(layers.FULL, "all")], t.loc[("without episodes", "all")]
    assert math.isnan(full["evidence_recall_diff"]) and full["probes"] == off["probes"] == len(rows) // 3
    # the paired difference is the variant's mean minus the full memory's (the same probes answer both)
    assert off["evidence_recall_diff"] == pytest.approx(off["evidence_recall"] - full["evidence_recall"])
    assert off["evidence_recall_low"] <= off["evidence_recall_diff"] <= off["evidence_recall_high"]
    assert off["evidence_recall"] < full["evidence_recall"]  # the fixture's answers are in past turns, not in facts
    flipped = layers.table(rows[::-1].reset_index(drop=True)).set_index(["variant", "type"])  # rows in any order
    assert flipped.loc[("without episodes", "all"), "evidence_recall_diff"] == off["evidence_recall_diff"]
    assert t.loc[(layers.FULL, "knowledge_update"), "stale"] == 0.0  # the updated value is shown
    with pytest.raises(ValueError, match="unknown layer variants"):
        layers.measure(convs, [400], ["no such layer"])
    # the page's section and notebook 8's frame read the same table
    shown = layers.frame(layers.table(rows), "evidence_recall")
    assert list(shown.columns) == [400] and shown.loc[layers.FULL, 400] == f"{full['evidence_recall']:.3f}"
    assert shown.loc["without episodes", 400].startswith(f"{off['evidence_recall_diff']:+.3f} [")
    from memkit.eval.report import layers_section

    layers.table(rows).to_csv(tmp_path / "fixture.csv", index=False)
    page = layers_section(tmp_path / "fixture.csv", "What each layer adds: fixtures")
    assert page.startswith("## What each layer adds: fixtures") and f"| **{layers.FULL}** |" in page
    assert "Stale content on knowledge-update questions" in page and "Facts switched off, by question type" not in page
    # a range, not a test, where the conversations are too few for one (the fixture's); not under 35 of them
    assert f"with {int(t['conversations'].max())}, read it as a range, not a test" in page
    layers.table(rows).assign(conversations=35).to_csv(tmp_path / "fixture.csv", index=False)
    assert "read it as a range" not in layers_section(tmp_path / "fixture.csv", "What each layer adds: fixtures")


def test_a_run_made_another_way_is_shown_with_its_cost_and_whether_its_rows_equal_the_runs(tmp_path):
    """A form's rows that differ only in timings are said to equal the run's; one changed recall says they differ."""
    import shutil

    from memkit.eval.report import run_section

    run = tmp_path / "run"
    (run / "dask").mkdir(parents=True)
    for name in ("run.json", "summary.csv", "compare.csv"):  # the committed cold run, without its own forms
        shutil.copy(ROOT / "docs" / "results" / "beam-confirm-cold" / name, run / name)
    form = json.loads((run / "run.json").read_text())
    form.update(scheduler="tcp://127.0.0.1:8786", jobs=1)
    (run / "dask" / "run.json").write_text(json.dumps(form))
    rows = pd.read_csv(run / "summary.csv")
    rows.assign(read_p50_ms=rows["read_p50_ms"] * 2, turns_per_s=1.0).to_csv(run / "dask" / "summary.csv", index=False)
    page = run_section(run, "a run")
    assert "The same run on `--scheduler tcp://127.0.0.1:8786`" in page
    assert "its rows equal these in every column but the timings" in page
    rows.loc[0, "evidence_recall"] += 0.01
    rows.to_csv(run / "dask" / "summary.csv", index=False)
    assert "its rows differ from these beyond the timings" in run_section(run, "a run")


def test_the_layer_table_takes_a_models_facts_beside_the_rules(tmp_path):
    """scripts/measure_layers.py --extractor llm: two-layer memory with the configured model's facts (the remote
    model stood in for at the HTTP level), named apart, so that --from-rows tables it against the rules' run."""
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_openai import FakeOpenAI

    script = [sys.executable, str(ROOT / "scripts" / "measure_layers.py"), "--data", str(DATA / "beam"), "--format",
              "beam", "--budget", "400", "--out", str(tmp_path)]
    offline = {k: v for k, v in os.environ.items() if not k.startswith(("MEMKIT_LLM_", "OPENAI_"))}
    r = subprocess.run([*script, "--name", "rules", "--variant", "two-layer", "--variant", "without facts", "--rows",
                        str(tmp_path / "rules-rows.csv")], capture_output=True, text=True, timeout=600,
                       env={**offline, "MEMKIT_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cache" / "embeddings.sqlite3").is_file()  # memkit bench's embedding cache, by default
    with FakeOpenAI() as fake:  # every reply: no facts
        r = subprocess.run([*script, "--name", "llm", "--variant", "two-layer", "--extractor", "llm", "--rows",
                            str(tmp_path / "llm-rows.csv"), "--embed-cache", "off"], capture_output=True, text=True,
                           timeout=600, env={**offline, "MEMKIT_LLM_BASE_URL": fake.base_url, "MEMKIT_LLM_MODEL": "fake",
                                             "MEMKIT_CACHE_DIR": str(tmp_path / "none")})
        asked = [q for q in fake.requests if q["path"].endswith("/chat/completions")]
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "none" / "embeddings.sqlite3").exists()
    users = sum(t.role == "user" for c in load(DATA / "beam") for s in c.sessions for t in s.turns)
    assert len(asked) == users  # the model read every user turn, once
    rules, llm = pd.read_csv(tmp_path / "rules-rows.csv"), pd.read_csv(tmp_path / "llm-rows.csv")
    assert set(llm["strategy"]) == {"two-layer (llm facts)"}
    # a model that reads no fact leaves two-layer memory what it is without facts: the same context, probe by probe
    key = ["conversation", "probe"]
    off = rules[rules["strategy"] == "without facts"].set_index(key)["context_tokens"]
    assert llm.set_index(key)["context_tokens"].equals(off)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "measure_layers.py"), "--from-rows",
                        str(tmp_path / "rules-rows.csv"), str(tmp_path / "llm-rows.csv"), "--name", "both", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    t = pd.read_csv(tmp_path / "both.csv").set_index(["variant", "type"])
    model, full = t.loc[("two-layer (llm facts)", "all")], t.loc[("two-layer", "all")]
    assert model["evidence_recall_diff"] == pytest.approx(model["evidence_recall"] - full["evidence_recall"])
    for wrong, said in ((["--extractor", "llm"], "ConfigError: --extractor llm need a chat model"),
                        (["--extractor", "nosuch"], "ConfigError: unknown extractor 'nosuch'"),
                        (["--limit", "0"], "argument --limit: must be at least 1")):
        r = subprocess.run([*script, "--name", "x", *wrong], capture_output=True, text=True, timeout=300, env=offline)
        assert r.returncode in (1, 2) and said in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / "x.csv").exists()
