"""A golden set of 12 questions and two strategies whose RAGAS judges fail on chosen questions.

Shared by the tests of RAGAS columns in the analysis layer (test_ragas_compare.py) and in the reports
(test_report_ragas.py): RAGAS scores come from its real code path with the scripted models of ragas_fakes.
"""

from __future__ import annotations

import ragas_fakes as fakes
import rankbridge as rb
from rankbridge import GoldenSet, Hit, Qrels, Query, Run
from rankbridge.integrations import ragas as rr

ANIMALS = ["otter", "heron", "badger", "falcon", "walrus", "puffin", "lynx", "condor", "beaver", "pelican"]
ANIMALS += ["marten", "osprey"]
PLACES = ["rivers", "marshes", "woodland burrows", "cliffs", "arctic ice", "sea cliffs", "northern forests"]
PLACES += ["andes mountains", "ponds", "coastal lagoons", "pine forests", "lakeshores"]
DISTRACTORS = [
    "Copper wiring conducts electricity.",
    "Granite forms from cooled magma.",
    "Violins have four strings.",
    "Tea leaves contain caffeine.",
    "Glaciers carve deep valleys.",
    "Comets carry frozen gases.",
    "Bread rises because yeast ferments.",
    "Saturn displays bright rings.",
    "Marble polishes smoothly.",
    "Chess openings follow theory.",
    "Tulips bloom during spring.",
    "Volcanoes emit sulfur dioxide.",
]
N = 12
CHEESE = " The moon is made of green cheese."  # a sentence no context supports: faithfulness 0.5
# The scripted judge of each run fails (raises) on the faithfulness verdicts of these questions.
FAILS = {"bm25": ("heron", "walrus"), "dense": ("walrus", "pelican")}
NOT_SCORED = {"bm25": {"q01", "q04"}, "dense": {"q04", "q09"}}


def build() -> tuple[GoldenSet, Run, Run]:
    queries, qrels, corpus = [], {}, {}
    for i, (animal, place) in enumerate(zip(ANIMALS, PLACES, strict=True)):
        qid = f"q{i:02d}"
        text = f"The {animal} lives near {place}."
        corpus[f"d{i}"] = {"title": "", "text": text}
        corpus[f"x{i}"] = {"title": "", "text": DISTRACTORS[i]}
        category = "even" if i % 2 == 0 else "odd"
        queries.append(Query(qid, f"Where does the {animal} live?", reference=text, category=category))
        qrels[qid] = {f"d{i}": 1, f"x{i}": 0}
    golden = GoldenSet(queries, Qrels(qrels), corpus=corpus)

    def hit(doc: str) -> Hit:
        return Hit(doc, text=corpus[doc]["text"])

    # bm25: the relevant doc second on odd questions; dense: first, except every fourth it is not retrieved
    bm25 = {f"q{i:02d}": [hit(f"x{i}"), hit(f"d{i}")] if i % 2 else [hit(f"d{i}"), hit(f"x{i}")] for i in range(N)}
    dense = {f"q{i:02d}": [hit(f"x{i}")] if i % 4 == 3 else [hit(f"d{i}"), hit(f"x{i}")] for i in range(N)}
    return golden, Run.from_ranked(bm25, name="bm25"), Run.from_ranked(dense, name="dense")


def responses(run: Run, cheese: set[int]) -> dict[str, str]:
    """Each answer is the top context, plus an unsupported sentence on the ``cheese`` questions."""
    return {q: run.hits(q)[0].text + (CHEESE if i in cheese else "") for i, q in enumerate(run.query_ids())}


def fail_on(animals: tuple[str, ...]) -> fakes.Script:
    return fakes.Script(fail_if=lambda prompt: "NLIStatementOutput" in prompt and any(a in prompt for a in animals))


def joined_runs(golden: GoldenSet, runs: tuple[Run, ...]) -> dict[str, rr.RagasEvaluation]:
    """Each run's nDCG@10 and MRR@10 joined with its RAGAS faithfulness and context recall, scored through
    RAGAS' real code path by the scripted judges (failing on ``FAILS``; bm25's answers carry ``CHEESE``)."""
    cheese = {"bm25": {0, 2, 3, 5, 6, 7, 8, 10, 11}, "dense": set()}
    out = {}
    for run in runs:
        ranking = rb.evaluate(golden, run, ["ndcg@10", "mrr@10"])
        scores = rr.evaluate_ragas(
            run,
            golden,
            llm=fakes.make_chat_model(fail_on(FAILS[run.name])),
            metrics=["faithfulness", "context_recall"],
            responses=responses(run, cheese[run.name]),
            query_ids=ranking.query_ids,
            max_retries=0,
            max_wait=0,
        )
        out[run.name] = rr.join(ranking, scores)
    return out
