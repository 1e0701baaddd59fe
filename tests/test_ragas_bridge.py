"""The RAGAS bridge: export, model-free and LLM scoring through the real ``ragas.evaluate``, joining, CLI.

No network: every model is scripted (see ragas_fakes.py), and the OpenAI client of the ``llm_factory``
test talks to an ``httpx.MockTransport``. Expected scores come from an independent recomputation of
RAGAS' formulas with the same scripted rules, compared on every row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge import GoldenSet, Hit, Qrels, Query, Run
from rankbridge.errors import InputError, MissingExtraError

pytest.importorskip("ragas", reason="needs the ragas extra: pip install 'rankbridge[ragas]'")
pytest.importorskip("langchain_core", reason="the scripted chat model is a LangChain BaseChatModel")

import ragas_fakes as fakes
from rankbridge.cli import ragas as ragas_cli
from rankbridge.integrations import ragas as rr
from rankbridge.integrations.answers import Answer, Answers, generate_answers


@pytest.fixture(scope="module", autouse=True)
def _ragas_user_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    fakes.isolate_ragas_user_dir(tmp_path_factory.mktemp("ragas_home"))


# -- toy data, worked by hand ---------------------------------------------------------------------
SCURVY = "Scurvy is caused by a lack of vitamin C."
RICKETS = "Rickets is caused by vitamin D deficiency."
BONES = "Bones are hard and white."
MOON = "The moon orbits the earth."


def toy() -> tuple[GoldenSet, Run]:
    golden = GoldenSet(
        [
            Query("q1", "What causes scurvy?", reference="Scurvy is caused by lack of vitamin C."),
            Query("q2", "What causes rickets?", reference="Rickets is caused by vitamin D deficiency. It hurts bones."),
            Query("q3", "Where is the moon?", reference="The moon orbits the earth.", reference_context_ids=("d4",)),
        ],
        Qrels({"q1": {"d1": 1}, "q2": {"d2": 2, "d3": 1, "d9": 0}, "q3": {}}),
        corpus={"d3": {"title": "Bones", "text": BONES}, "d4": {"title": "", "text": MOON}},
    )
    run = Run.from_ranked(
        {
            "q1": [Hit("d2", 2.0, RICKETS), Hit("d1", 1.0, SCURVY)],
            "q2": [Hit("d2", 0.9, RICKETS), Hit("d3", 0.5), Hit("d7", 0.1, MOON)],
            "q3": [Hit("d4", 1.0)],
        },
        name="toy",
    )
    return golden, run


RESPONSES = {
    "q1": "Scurvy is caused by lack of vitamin C. The moon is made of cheese.",
    "q2": "Rickets is caused by vitamin D deficiency.",
    "q3": "I don't know.",
}


# -- export ---------------------------------------------------------------------------------------
def test_rows_take_texts_from_hits_then_corpus_and_say_which() -> None:
    golden, run = toy()
    rows = {r["query_id"]: r for r in rr.ragas_rows(run, golden, RESPONSES)}
    assert rows["q1"]["retrieved_contexts"] == [RICKETS, SCURVY]
    assert rows["q1"]["context_source"] == "hit"
    assert rows["q2"]["retrieved_contexts"] == [RICKETS, "Bones\n" + BONES, MOON]
    assert rows["q2"]["context_source"] == "hit+corpus"
    assert rows["q3"]["retrieved_contexts"] == [MOON]
    assert rows["q3"]["context_source"] == "corpus"
    # reference ids: the qrels' relevant docs, best label first; the query's own ids when the qrels have none
    assert rows["q2"]["reference_context_ids"] == ["d2", "d3"]
    assert rows["q3"]["reference_context_ids"] == ["d4"]
    assert rows["q1"]["response"] == RESPONSES["q1"]
    for r in rows.values():
        assert all(isinstance(i, str) for i in r["retrieved_context_ids"] + r["reference_context_ids"])


def test_reference_from_query_prefers_the_query_ids() -> None:
    golden, run = toy()
    golden.queries[1] = Query("q2", "What causes rickets?", reference_context_ids=("d3",))
    rows = {r["query_id"]: r for r in rr.ragas_rows(run, golden, reference_from="query", allow_partial=True)}
    assert rows["q2"]["reference_context_ids"] == ["d3"]
    assert rows["q1"]["reference_context_ids"] == ["d1"]  # falls back to the qrels


def test_missing_text_is_an_error_unless_partial_allowed() -> None:
    golden, run = toy()
    run.add("q1", [Hit("nowhere")])
    with pytest.raises(InputError, match=r"'retrieved_contexts' is missing for 1 of 3 queries .*'nowhere'"):
        rr.ragas_rows(run, golden)
    rows = {r["query_id"]: r for r in rr.ragas_rows(run, golden, allow_partial=True)}
    assert rows["q1"]["retrieved_contexts"] is None
    assert rows["q1"]["retrieved_context_ids"] == ["nowhere"]


def test_every_row_is_validated_not_only_the_first() -> None:
    golden, run = toy()
    run.add("q3", [Hit("d4", text=123)])  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"query 'q3', field 'retrieved_contexts'\[0\]: expected a string"):
        rr.ragas_rows(run, golden)
    with pytest.raises(InputError, match="responses: 1 query ids are not in the golden set"):
        rr.ragas_rows(toy()[1], golden, {"zzz": "answer"})
    with pytest.raises(InputError, match="k must be an int >= 1"):
        rr.ragas_rows(toy()[1], golden, k=0)


def test_failed_and_missing_queries_export_empty_retrievals() -> None:
    golden, run = toy()
    run.add_error("q1", "timeout: 5 s")
    del run._data["q3"]
    rows = {r["query_id"]: r for r in rr.ragas_rows(run, golden)}
    assert rows["q1"]["retrieved_context_ids"] == [] and rows["q1"]["retrieved_contexts"] == []
    assert rows["q3"]["context_source"] == "none"


def test_to_ragas_and_hf_dataset_round_trip(tmp_path: Path) -> None:
    from ragas import EvaluationDataset

    golden, run = toy()
    ds = rr.to_ragas(run, golden, RESPONSES, k=2)
    assert isinstance(ds, EvaluationDataset) and len(ds) == 3
    first = ds.to_list()[0]
    assert first["user_input"] == "What causes scurvy?"
    assert ds.to_list()[1]["retrieved_context_ids"] == ["d2", "d3"]  # k=2
    hf = rr.to_hf_dataset(run, golden, RESPONSES)
    assert hf.column_names[-2:] == ["query_id", "context_source"]
    back = EvaluationDataset.from_hf_dataset(hf)
    assert back.to_list() == rr.to_ragas(run, golden, RESPONSES).to_list()
    for suffix in ("jsonl", "parquet"):
        out = rr.write_dataset(rr.ragas_rows(run, golden, RESPONSES), tmp_path / f"rows.{suffix}")
        if suffix == "jsonl":
            loaded = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        else:
            import datasets  # type: ignore[import-untyped]

            loaded = datasets.Dataset.from_parquet(str(out)).to_list()
        assert [r["query_id"] for r in loaded] == ["q1", "q2", "q3"]
        assert loaded[1]["retrieved_contexts"] == [RICKETS, "Bones\n" + BONES, MOON]
    with pytest.raises(InputError, match=r"\.jsonl or \.parquet"):
        rr.write_dataset([], tmp_path / "rows.csv")


# -- model-free scoring ---------------------------------------------------------------------------
def _random_case(seed: int, n: int = 40) -> tuple[GoldenSet, Run]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    queries, qrels, ranked = [], {}, {}
    for i in range(n):
        qid = f"q{i:02d}"
        queries.append(Query(qid, f"question {i}"))
        qrels[qid] = {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))}
        if rng.random() < 0.1:  # a query with no relevant doc
            qrels[qid] = {d: 0 for d in qrels[qid]}
        ranked[qid] = [Hit(d, text=f"text of {d}") for d in rng.sample(docs, rng.randint(1, 10))]
    return GoldenSet(queries, Qrels(qrels)), Run.from_ranked(ranked, name=f"random{seed}")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_id_based_metrics_agree_with_set_computation_on_every_row(seed: int) -> None:
    golden, run = _random_case(seed)
    ev = rr.evaluate_ragas(run, golden, metrics=["id_based_context_precision", "ragas.id_based_context_recall"])
    assert ev.query_ids == tuple(sorted(q.id for q in golden.queries))
    for i, qid in enumerate(ev.query_ids):
        rel = [d for d, lab in golden.qrels[qid].items() if lab >= 1]
        got_p = ev.values["ragas.id_based_context_precision"][i]
        got_r = ev.values["ragas.id_based_context_recall"][i]
        if not rel:  # nothing to compare with: not scored, and said so
            assert math.isnan(got_p) and math.isnan(got_r)
            assert ev.failures["ragas.id_based_context_recall"][qid].startswith("no input: no relevant doc")
            continue
        assert got_p == pytest.approx(fakes.set_precision(run.ranking(qid), rel), abs=1e-12)
        assert got_r == pytest.approx(fakes.set_recall(run.ranking(qid), rel), abs=1e-12)


def test_id_based_recall_equals_recall_at_k_on_the_same_cut() -> None:
    golden, run = _random_case(3)
    k = 5
    ranking = rb.evaluate(golden.qrels, run, [f"recall@{k}"], missing="skip")
    ev = rr.evaluate_ragas(run, golden, metrics=["id_based_context_recall"], k=k, query_ids=ranking.query_ids)
    both = rr.join(ranking, ev)
    ok = ~np.isnan(both.values["ragas.id_based_context_recall"])
    np.testing.assert_allclose(both.values["ragas.id_based_context_recall"][ok], both.values[f"recall@{k}"][ok])
    assert both.counts["ragas.id_based_context_recall"] == int(ok.sum()) == len(ok) - len(both.no_relevant)


def test_without_llm_runs_model_free_metrics_and_says_how_to_get_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    def no_client(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an OpenAI client was built behind the user's back")

    monkeypatch.setattr(openai.OpenAI, "__init__", no_client)
    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", no_client)
    golden, run = toy()
    ev = rr.evaluate_ragas(run, golden, responses=RESPONSES)
    assert set(ev.values) == {
        "ragas.id_based_context_precision",
        "ragas.id_based_context_recall",
        "ragas.non_llm_context_precision_with_reference",
        "ragas.non_llm_context_recall",
    }
    assert ev.measures == ()
    for name in rr.LLM_METRICS:
        assert "needs an LLM: pass llm=" in ev.skipped["ragas." + name]
    assert "not run: ragas.context_precision" in ev.describe()
    # q1 retrieved d2 (not relevant) then d1 (relevant): set precision 1/2, recall 1
    assert ev.per_query["ragas.id_based_context_precision"]["q1"] == 0.5
    assert ev.per_query["ragas.id_based_context_recall"]["q2"] == 1.0
    # only q3's reference doc (d4) has a text in the corpus: q1 and q2 are not scored, counted, and said why
    assert math.isnan(ev.per_query["ragas.non_llm_context_recall"]["q1"])
    assert set(ev.failures["ragas.non_llm_context_recall"]) == {"q1", "q2"}
    assert ev.failures["ragas.non_llm_context_recall"]["q1"] == (
        "no input: a reference context id has no text in golden.corpus"
    )
    assert ev.counts["ragas.non_llm_context_recall"] == 1
    assert ev.per_query["ragas.non_llm_context_recall"]["q3"] == 1.0  # the moon text is retrieved verbatim
    assert not math.isnan(ev.mean["ragas.non_llm_context_recall"])
    assert ev.usage["prompts"] == 0
    assert ev.context_source == {"corpus": 1, "hit": 1, "hit+corpus": 1}


def test_llm_metric_without_llm_is_an_error_not_a_hidden_client() -> None:
    golden, run = toy()
    with pytest.raises(InputError, match="'faithfulness' needs an LLM: pass llm="):
        rr.evaluate_ragas(run, golden, metrics=["faithfulness"], responses=RESPONSES)
    with pytest.raises(InputError, match="'answer_relevancy' needs embeddings"):
        rr.evaluate_ragas(run, golden, llm=fakes.make_chat_model(), metrics=["answer_relevancy"])
    with pytest.raises(InputError, match="unknown RAGAS metric 'ndcg@10'"):
        rr.evaluate_ragas(run, golden, metrics=["ndcg@10"])
    with pytest.raises(InputError, match="llm: expected a LangChain chat model"):
        rr.evaluate_ragas(run, golden, llm=object(), metrics=["id_based_context_recall"])
    with pytest.raises(InputError, match="max_workers must be an int >= 1"):
        rr.evaluate_ragas(run, golden, max_workers=0)


def test_join_requires_the_same_queries() -> None:
    golden, run = toy()
    ranking = rb.evaluate(golden.qrels, run, ["ndcg@10", "P@2"])
    ev = rr.evaluate_ragas(run, golden, metrics=["id_based_context_recall"])
    both = rr.join(ranking, ev)
    assert both.metric_names == ["ndcg@10", "precision@2", "ragas.id_based_context_recall"]
    assert both.measures == ranking.measures and both.table is ranking.table
    assert both["P@2"] is ranking.values["precision@2"]
    assert isinstance(both, rb.Evaluation)
    sub = rr.evaluate_ragas(run, golden, metrics=["id_based_context_recall"], query_ids=["q1", "q2"])
    with pytest.raises(InputError, match=r"1 only in the ranking evaluation \(e.g. 'q3'\).*query_ids="):
        rr.join(ranking, sub)
    with pytest.raises(InputError, match="both evaluations have the column"):
        rr.join(both, ev)


# -- LLM paths, end to end through ragas.evaluate --------------------------------------------------
def _check_against_oracle(ev: rr.RagasEvaluation, golden: GoldenSet, run: Run, *, n_generations: int = 3) -> None:
    queries = {q.id: q for q in golden.queries}
    rows = {r["query_id"]: r for r in rr.ragas_rows(run, golden, RESPONSES)}
    for qid in ev.query_ids:
        q, row = queries[qid], rows[qid]
        pq = {name: ev.per_query[name][qid] for name in ev.values}
        assert q.reference is not None
        ctx = row["retrieved_contexts"]
        assert pq["ragas.context_precision"] == pytest.approx(fakes.expected_context_precision(ctx, q.reference))
        assert pq["ragas.context_recall"] == pytest.approx(fakes.expected_context_recall(ctx, q.reference))
        assert pq["ragas.faithfulness"] == pytest.approx(fakes.expected_faithfulness(ctx, RESPONSES[qid]))
        assert pq["ragas.answer_relevancy"] == pytest.approx(fakes.expected_answer_relevancy(q.text, RESPONSES[qid]))
    # worked by hand for q1: contexts [rickets, scurvy] vs the scurvy reference -> verdicts [0, 1]
    assert ev.per_query["ragas.context_precision"]["q1"] == pytest.approx(0.5)
    assert ev.per_query["ragas.faithfulness"]["q1"] == pytest.approx(0.5)  # the cheese claim is unsupported
    assert ev.per_query["ragas.answer_relevancy"]["q3"] == 0.0  # noncommittal
    assert not {name: f for name, f in ev.failures.items() if name[len("ragas.") :] in rr.LLM_METRICS}


LLM_METRICS = ["context_precision", "context_recall", "faithfulness", "answer_relevancy"]


def test_langchain_chat_model_end_to_end() -> None:
    golden, run = toy()
    script = fakes.Script()
    ev = rr.evaluate_ragas(
        run, golden, llm=fakes.make_chat_model(script), embeddings=fakes.make_embeddings(), responses=RESPONSES
    )
    assert set(rr.LLM_METRICS) <= {n[len("ragas.") :] for n in ev.values}
    _check_against_oracle(ev, golden, run)
    # answer relevancy asks a LangChain model for 3 answers with one prompt: 3 model calls, 1 prompt
    assert len(script.titles) == ev.usage["prompts"] + 2 * len(ev.query_ids)
    assert ev.usage["tokens"] > 0  # reported by the chat model
    assert {"Verification", "ContextRecallClassifications", "NLIStatementOutput"} <= set(script.titles)


def test_llamaindex_llm_end_to_end() -> None:
    pytest.importorskip("llama_index.core", reason="needs llama-index-core")
    golden, run = toy()
    script = fakes.Script()
    ev = rr.evaluate_ragas(
        run,
        golden,
        llm=fakes.make_llamaindex_llm(script),
        embeddings=fakes.make_llamaindex_embedding(),
        metrics=LLM_METRICS,
        responses=RESPONSES,
    )
    _check_against_oracle(ev, golden, run)
    assert ev.usage["prompts"] == len(script.titles) > 0


def test_llm_factory_over_mock_transport_end_to_end() -> None:
    from ragas.llms import llm_factory

    golden, run = toy()
    requests: list[dict[str, Any]] = []
    client = fakes.make_openai_client(requests=requests)
    llm = llm_factory("gpt-4o-mini", client=client)
    ev = rr.evaluate_ragas(
        run, golden, llm=llm, embeddings=fakes.make_embeddings(), metrics=LLM_METRICS, responses=RESPONSES
    )
    _check_against_oracle(ev, golden, run)
    assert len(requests) == ev.usage["prompts"] > 0
    assert all(r["model"] == "gpt-4o-mini" for r in requests)


def test_failures_are_counted_and_shown_not_averaged_as_nan() -> None:
    golden, run = toy()
    script = fakes.Script(fail_if=lambda prompt: "rickets" in prompt.lower() and "NLIStatementOutput" in prompt)
    ev = rr.evaluate_ragas(
        run,
        golden,
        llm=fakes.make_chat_model(script),
        metrics=["faithfulness", "context_recall"],
        responses=RESPONSES,
        max_retries=0,
        max_wait=0,
    )
    faith = ev.values["ragas.faithfulness"]
    assert math.isnan(ev.per_query["ragas.faithfulness"]["q2"])
    assert ev.failures["ragas.faithfulness"]["q2"].startswith("error: ScriptedFailure")
    # q1's statements include nothing about rickets... but its context does: q1 fails too; q3 has no statements
    assert set(ev.failures["ragas.faithfulness"]) >= {"q2"}
    assert ev.counts["ragas.faithfulness"] == int((~np.isnan(faith)).sum())
    assert ev.mean["ragas.faithfulness"] == pytest.approx(float(np.nanmean(faith)))
    assert "ragas.context_recall" not in ev.failures
    assert "ragas.faithfulness:" in ev.summary() and "not scored" in ev.summary()


def test_undefined_rows_are_reported_as_such() -> None:
    golden, run = toy()
    ev = rr.evaluate_ragas(
        run, golden, llm=fakes.make_chat_model(), metrics=["faithfulness"], responses={**RESPONSES, "q3": " "}
    )
    assert ev.failures["ragas.faithfulness"]["q3"].startswith("undefined:")  # no statements in a blank answer
    assert ev.counts["ragas.faithfulness"] == 2


def test_budget_stops_llm_calls() -> None:
    golden, run = toy()
    script = fakes.Script()
    ev = rr.evaluate_ragas(
        run,
        golden,
        llm=fakes.make_chat_model(script),
        metrics=["context_precision", "context_recall"],
        budget=rr.Budget(max_prompts=2),
        max_workers=1,
    )
    assert ev.usage["prompts"] == 2 == len(script.titles)
    reasons = [r for fails in ev.failures.values() for r in fails.values()]
    assert reasons and all(r.startswith("budget: the budget of 2 prompts is used up") for r in reasons)
    assert sum(ev.counts.values()) + len(reasons) == 2 * ev.num_queries
    with pytest.raises(InputError, match="max_prompts must be an int >= 0"):
        rr.Budget(max_prompts=-1)


def test_works_inside_a_running_event_loop() -> None:
    golden, run = toy()

    async def main() -> tuple[rr.RagasEvaluation, rr.RagasEvaluation]:
        sync_inside_loop = rr.evaluate_ragas(run, golden, llm=fakes.make_chat_model(), metrics=["context_recall"])
        awaited = await rr.aevaluate_ragas(run, golden, llm=fakes.make_chat_model(), metrics=["context_recall"])
        return sync_inside_loop, awaited

    a, b = asyncio.run(main())
    np.testing.assert_array_equal(a.values["ragas.context_recall"], b.values["ragas.context_recall"])
    assert a.counts["ragas.context_recall"] == 3


def test_classic_metric_objects_are_accepted() -> None:
    from ragas.metrics._context_recall import IDBasedContextRecall

    golden, run = toy()
    ev = rr.evaluate_ragas(run, golden, metrics=[IDBasedContextRecall()])
    assert list(ev.values) == ["ragas.id_based_context_recall"]
    with pytest.raises(InputError, match="expected RAGAS metric names"):
        rr.evaluate_ragas(run, golden, metrics=[object()])


# -- answers: the contexts the generator saw ------------------------------------------------------
def test_generate_answers_from_a_callable_and_judge_faithfulness_on_its_contexts() -> None:
    golden, run = toy()

    def pipeline(question: str) -> tuple[str, list[tuple[str, str]]]:
        if "moon" in question:
            raise RuntimeError("generator down")
        return "Scurvy is caused by lack of vitamin C.", [("d1", SCURVY)]

    answers = generate_answers(pipeline, golden)
    assert answers.errors == {"q3": "error: RuntimeError: generator down"}
    assert answers["q2"].context_ids == ("d1",) and answers["q2"].contexts == (SCURVY,)
    ev = rr.evaluate_ragas(run, golden, llm=fakes.make_chat_model(), metrics=["faithfulness"], responses=answers)
    # q2's run hits are about rickets, but the answer was generated from the scurvy passage: faithful
    assert ev.per_query["ragas.faithfulness"]["q2"] == 1.0
    assert (
        ev.failures["ragas.faithfulness"]["q3"] == "no input: generation failed (error: RuntimeError: generator down)"
    )
    assert any("generated from" in n for n in ev.notes)
    captured = answers.to_run()
    assert captured.ranking("q1") == ["d1"] and "q3" in captured.errors


def test_generate_answers_from_a_langchain_runnable() -> None:
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    chain: Any = RunnableLambda(
        lambda inp: {
            "input": inp["input"],
            "answer": "Vitamin C.",
            "context": [Document(page_content=SCURVY, id="d1"), Document(page_content=BONES, id="d3")],
        }
    )
    answers = generate_answers(chain, {"q1": "What causes scurvy?"}, input_key="input")
    assert answers["q1"] == Answer("Vitamin C.", (SCURVY, BONES), ("d1", "d3"), latency=answers["q1"].latency)
    plain = generate_answers(RunnableLambda(lambda q: f"answer to {q}"), {"q1": "x"})
    assert plain["q1"].response == "answer to x" and not plain["q1"].captured


def test_generate_answers_from_a_llamaindex_query_engine() -> None:
    pytest.importorskip("llama_index.core", reason="needs llama-index-core")
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_="d1", text=SCURVY), score=1.0)]

    engine = RetrieverQueryEngine.from_args(Fixed(), llm=fakes.make_llamaindex_llm())
    answers = generate_answers(engine, {"q1": "What causes scurvy?"})
    assert answers["q1"].error is None
    assert answers["q1"].response == SCURVY  # the scripted generator quotes its first context sentence
    assert answers["q1"].context_ids == ("d1",) and answers["q1"].contexts == (SCURVY,)


def test_generate_answers_validates_and_times_out() -> None:
    import time

    with pytest.raises(InputError, match="max_workers must be an int >= 1"):
        generate_answers(lambda q: q, {"q": "x"}, max_workers=0)

    def sleepy(q: str) -> str:
        time.sleep(0.5)
        return q

    slow = generate_answers(sleepy, {"q": "x"}, timeout=0.05)
    assert slow.errors["q"].startswith("timeout:")
    assert isinstance(slow, Answers) and slow.responses() == {}
    bad = generate_answers(lambda q: 42, {"q": "x"})
    assert "expected a string, an (answer, contexts) pair" in bad.errors["q"]


# -- privacy, laziness, missing extra --------------------------------------------------------------
def _python(code: str, env_extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> str:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_importing_the_bridge_is_light_and_telemetry_is_off_by_default(tmp_path: Path) -> None:
    code = (
        "import sys, os\n"
        "import rankbridge.integrations.ragas as r\n"
        "print(','.join(m for m in ('ragas', 'datasets', 'langchain_core', 'llama_index') if m in sys.modules))\n"
        "r._import_ragas()\n"
        "from ragas import _analytics\n"
        "print(os.environ['RAGAS_DO_NOT_TRACK'], _analytics.do_not_track())\n"
    )
    out = _python(code, {"XDG_DATA_HOME": str(tmp_path)}, drop=("RAGAS_DO_NOT_TRACK",)).splitlines()
    assert out == ["", "true True"]


def test_an_explicit_tracking_choice_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "false")
    rr._import_ragas()
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "false"


def test_missing_ragas_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    golden, run = toy()
    monkeypatch.setitem(sys.modules, "ragas", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'rankbridge\[ragas\]'"):
        rr.to_ragas(run, golden)


# -- command line ---------------------------------------------------------------------------------
def _beir(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": SCURVY, "d2": RICKETS, "d3": BONES}
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items()), encoding="utf-8"
    )
    qs = {"q1": "What causes scurvy?", "q2": "What causes rickets?"}
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in qs.items()), encoding="utf-8"
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n", encoding="utf-8")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d2 1 3.0 t\n", encoding="utf-8")
    return root, run


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rankbridge")
    ragas_cli.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_export_and_model_free_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, run = _beir(tmp_path)
    for name in ("rows.jsonl", "rows.parquet"):
        assert _cli(["ragas", "export", str(run), "--golden", str(root), "-o", str(tmp_path / name)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["retrieved_context_ids"] for r in rows] == [["d2", "d1"], ["d2"]]
    assert rows[0]["retrieved_contexts"] == [RICKETS, SCURVY] and rows[0]["context_source"] == "corpus"
    assert "wrote 2 rows" in capsys.readouterr().err
    assert _cli(["ragas", "score", str(run), "--golden", str(root), "--format", "json", "--per-query"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["mean"]["ragas.id_based_context_precision"] == pytest.approx(0.75)
    assert payload["mean"]["ndcg@10"] == pytest.approx(
        rb.evaluate(
            {"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d2": 3.0}}, ["ndcg@10"]
        ).mean["ndcg@10"]
    )
    assert "needs an LLM" in payload["not_run"]["ragas.faithfulness"]


def test_cli_score_with_an_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, run = _beir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    responses = tmp_path / "answers.jsonl"
    responses.write_text(
        json.dumps({"query_id": "q1", "response": "Scurvy is caused by lack of vitamin C."}) + "\n", encoding="utf-8"
    )
    argv = ["ragas", "score", str(run), "--golden", str(root), "--llm", "ragas_fakes:scripted_chat_model"]
    argv += ["-m", "faithfulness", "--responses", str(responses)]
    assert _cli(argv) == 0
    out = capsys.readouterr().out
    assert "ragas.faithfulness" in out and "(n=1 of 2)" in out
    with pytest.raises(InputError, match="expected 'module:attr'"):
        _cli(["ragas", "score", str(run), "--golden", str(root), "--llm", "nocolon"])
