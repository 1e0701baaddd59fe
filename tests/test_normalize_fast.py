"""normalize_hits' fast paths give exactly what its general loop gives, or stand aside for it."""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any

import pytest

from rankbridge import Hit
from rankbridge.errors import RetrievalError
from rankbridge.retriever import normalize_hits


def _general(items: Any, keep_text: bool) -> list[Hit]:
    # a doc_map that maps nothing sends every item through the general loop, ids unchanged
    return normalize_hits(items, k=100, doc_map=lambda doc_id: None, keep_text=keep_text)[0]


class Text(str):
    pass


DICT_CASES: list[list[Any]] = [
    [{"id": "d1", "score": 2.0, "text": "a"}, {"id": "d2", "score": 1, "text": "b"}],
    [{"doc_id": "d1", "id": "x"}, {"_id": "d2", "page_content": "p"}],
    [{"id": "", "doc_id": None, "_id": "d3", "text": None, "page_content": "ignored"}],
    [{"id": "d1", "score": math.nan, "metadata": {"k": 1}}],
    [{"id": "d1", "metadata": MappingProxyType({"k": 1})}],  # another Mapping: the general loop keeps it
    [{"id": 7, "score": True}],  # an int id and a bool score: the general loop converts them
    [{"id": "d1", "text": Text("sub")}],
    [{"id": "d1", "metadata": "not a mapping"}],
]


@pytest.mark.parametrize("items", DICT_CASES)
@pytest.mark.parametrize("keep_text", [True, False])
def test_dicts_fast_path_equals_the_general_loop(items: list[Any], keep_text: bool) -> None:
    fast = normalize_hits(items, k=100, keep_text=keep_text)[0]
    assert fast == _general(items, keep_text)
    assert [type(h.text) for h in fast] == [type(h.text) for h in _general(items, keep_text)]


def test_dicts_without_an_id_are_refused_as_before() -> None:
    with pytest.raises(RetrievalError, match=r"result at rank 2 .* has no doc id"):
        normalize_hits([{"id": "d1"}, {"text": "no id"}], k=10)


class Document:  # the shape of a LangChain Document, without LangChain
    def __init__(self, id: Any, page_content: Any, metadata: Any) -> None:
        self.id, self.page_content, self.metadata = id, page_content, metadata


@pytest.mark.parametrize(
    "docs",
    [
        [Document("d1", "a", {"s": 1}), Document("d2", "b", {})],
        [Document("d1", Text("sub"), MappingProxyType({"s": 1}))],
        [Document("d1", "a", None), Document(None, "b", {})],
    ],
)
def test_bare_framework_objects_fast_path_equals_the_general_loop(docs: list[Any]) -> None:
    try:
        expected: Any = _general(docs, True)
    except RetrievalError as exc:
        expected = str(exc)
    for _ in range(2):  # the second time the types are known and the fast path reads them
        try:
            got: Any = normalize_hits(docs, k=100)[0]
        except RetrievalError as exc:
            got = str(exc)
        assert got == expected
