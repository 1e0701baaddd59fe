"""The examples' tiny golden set: twelve questions about vitamins over twelve passages, graded 0-2.

Each example imports it (it sits beside them, so ``python examples/NAME.py`` finds it). Replace it with
your own corpus, questions and judgments; the rankbridge calls in the examples stay the same.
(2 = the passage answers the question, 1 = it is on topic.)
"""

from __future__ import annotations

import rankbridge as rb

CORPUS = {
    "d01": "Scurvy is caused by a lack of vitamin C; sailors on long voyages suffered bleeding gums.",
    "d02": "Citrus fruits such as lemons and limes are rich in vitamin C and kept navy crews free of scurvy.",
    "d03": "Rickets softens the bones of children and results from too little vitamin D or calcium.",
    "d04": "Sunlight lets the skin produce vitamin D, which helps the body absorb calcium.",
    "d05": "Beriberi is a thiamine deficiency, common where polished white rice is the staple food.",
    "d06": "Night blindness is an early sign of vitamin A deficiency; carrots and liver supply vitamin A.",
    "d07": "Iron deficiency anaemia makes people tired because red blood cells carry less oxygen.",
    "d08": "Goitre, a swelling of the thyroid gland, is prevented by adding iodine to table salt.",
    "d09": "Pellagra, caused by a lack of niacin, brings dermatitis, diarrhoea and dementia.",
    "d10": "Folic acid taken before and during pregnancy lowers the risk of neural tube birth defects.",
    "d11": "Vitamin K is needed for blood clotting; newborn babies receive an injection of it.",
    "d12": "Calcium and vitamin D together keep the bones of older adults strong.",
}
QUESTIONS = {
    "q01": "what causes scurvy",
    "q02": "which fruit prevents scurvy",
    "q03": "why do children get rickets",
    "q04": "how does the skin make vitamin D",
    "q05": "deficiency linked to eating white rice",
    "q06": "vitamin A and night blindness",
    "q07": "why is iodine added to salt",
    "q08": "tired because of low iron",
    "q09": "symptoms of niacin deficiency",
    "q10": "supplement in pregnancy against birth defects",
    "q11": "which vitamin helps blood clotting",
    "q12": "keeping bones strong in old age",
}
QRELS = {
    "q01": {"d01": 2, "d02": 1},
    "q02": {"d02": 2, "d01": 1},
    "q03": {"d03": 2, "d04": 1, "d12": 1},
    "q04": {"d04": 2},
    "q05": {"d05": 2},
    "q06": {"d06": 2},
    "q07": {"d08": 2},
    "q08": {"d07": 2},
    "q09": {"d09": 2},
    "q10": {"d10": 2},
    "q11": {"d11": 2},
    "q12": {"d12": 2, "d03": 1},
}


def golden_set() -> rb.GoldenSet:
    """The questions and judgments as a :class:`rankbridge.GoldenSet` (the corpus stays in ``CORPUS``)."""
    return rb.GoldenSet([rb.Query(q, t) for q, t in QUESTIONS.items()], rb.Qrels(QRELS), name="vitamins")
