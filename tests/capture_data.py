"""The small corpus, questions and qrels the capture and adapter tests share (one copy for every framework)."""

from __future__ import annotations

from rankbridge import GoldenSet, Qrels, Query

CORPUS = {
    "d0": "Scurvy is a disease caused by a lack of vitamin C in the diet.",
    "d1": "Sailors on long voyages suffered from scurvy before citrus rations.",
    "d2": "Vitamin C is found in citrus fruits such as oranges and lemons.",
    "d3": "The cat sat on the mat and watched the dogs in the garden.",
    "d4": "Dogs bark loudly at night when strangers pass the house.",
    "d5": "Rickets is caused by a lack of vitamin D and sunlight.",
    "d6": "Oranges grow in warm climates and are rich in vitamin C.",
    "d7": "Bread is made from flour, water, yeast and salt.",
    "d8": "A balanced diet prevents many deficiency diseases like scurvy and rickets.",
    "d9": "Cats sleep for most of the day and hunt at night.",
}
QUERIES = {
    "q1": "What causes scurvy?",
    "q2": "vitamin C citrus oranges",
    "q3": "dogs and cats at night",
    "q4": "deficiency disease diet",
    "q5": "bread yeast",
}
QRELS = Qrels({"q1": {"d0": 2, "d1": 1}, "q2": {"d2": 1, "d6": 1}, "q3": {"d4": 1, "d9": 1}, "q4": {"d8": 1}})
GOLDEN = GoldenSet([Query(q, t) for q, t in QUERIES.items()], QRELS)
