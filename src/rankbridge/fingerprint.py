"""Fingerprints: stable hashes that tell whether two evaluations were scored on the same judgments.

The run history (:mod:`rankbridge.store`) keeps one with every record, so that a trend joins only
records scored on the same qrels and the same queries. A fingerprint depends on the content alone:

* :func:`qrels_fingerprint` hashes every judgment -- query id, doc id and label, the judged-0 ones
  included (they decide what counts as unjudged) -- and nothing else: not the order of the dicts, not the
  qrels' ``name``, not the type the ids were given as (``7`` and ``"7"`` are the same id, as
  :class:`~rankbridge.Qrels` reads them).
* :func:`query_set_fingerprint` hashes a set of query ids (order and repeats do not matter).

Both are the SHA-256 (lowercase hex, 64 characters) of a canonical JSON text: for qrels
``[[qid, [[doc, label], ...]], ...]`` with query ids and, within a query, doc ids sorted as Unicode
strings; for a query set, the sorted list of ids; each prefixed with a scheme tag
(``rankbridge-qrels-v1``, ``rankbridge-queries-v1``) so that a future scheme can never collide with this one.

Examples
--------
>>> a = qrels_fingerprint({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}})
>>> b = qrels_fingerprint({"q2": {"d3": 2}, "q1": {"d2": 0, "d1": 1}})  # another order
>>> a == b, len(a)
(True, 64)
>>> a == qrels_fingerprint({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}})  # one label changed
False
>>> query_set_fingerprint(["q2", "q1"]) == query_set_fingerprint(("q1", "q2", "q1"))
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from rankbridge.types import GoldenSet, Qrels

__all__ = ["qrels_fingerprint", "query_set_fingerprint", "short_fingerprint"]

_QRELS_SCHEME = "rankbridge-qrels-v1"
_QUERIES_SCHEME = "rankbridge-queries-v1"


def _digest(scheme: str, payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    h = hashlib.sha256(scheme.encode("ascii"))
    h.update(b"\n")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def qrels_fingerprint(qrels: Qrels | GoldenSet | Mapping[Any, Any]) -> str:
    """A stable hash of the judgments' content: query ids, doc ids and labels.

    Parameters
    ----------
    qrels:
        A :class:`~rankbridge.Qrels`, a :class:`~rankbridge.GoldenSet` (its qrels are hashed), or anything
        :class:`~rankbridge.Qrels` accepts (``{qid: {doc: label}}``, ``{qid: [relevant docs]}``).

    Returns
    -------
    str
        64 lowercase hex characters. Equal for equal content whatever the dict order and the qrels' name;
        different when any query, doc or label differs (judged-0 docs and queries without judgments count).

    Raises
    ------
    InputError
        When ``qrels`` is not something :class:`~rankbridge.Qrels` accepts.

    Examples
    --------
    >>> from rankbridge import Qrels
    >>> qrels_fingerprint(Qrels({"q1": {"d1": 1}}, name="v1")) == qrels_fingerprint({"q1": ["d1"]})
    True
    >>> qrels_fingerprint({"q1": {"d1": 1}}) == qrels_fingerprint({"q1": {"d1": 1, "d2": 0}})
    False
    >>> qrels_fingerprint({7: {"d1": 1}}) == qrels_fingerprint({"7": {"d1": 1}})  # ids are read as str
    True
    """
    if isinstance(qrels, GoldenSet):
        qrels = qrels.qrels
    if not isinstance(qrels, Qrels):
        qrels = Qrels(qrels)  # validates, and reads ids and labels as Qrels does
    payload = [[qid, sorted([doc, int(label)] for doc, label in qrels[qid].items())] for qid in sorted(qrels)]
    return _digest(_QRELS_SCHEME, payload)


def query_set_fingerprint(query_ids: Iterable[str]) -> str:
    """A stable hash of a set of query ids (order and repeats ignored).

    Examples
    --------
    >>> query_set_fingerprint(["b", "a"]) == query_set_fingerprint(["a", "b", "b"])
    True
    >>> query_set_fingerprint(["a"]) == query_set_fingerprint(["a", "b"])
    False
    """
    return _digest(_QUERIES_SCHEME, sorted({str(q) for q in query_ids}))


def short_fingerprint(fingerprint: str | None, length: int = 6) -> str:
    """The first ``length`` characters of a fingerprint for display; ``"?"`` for an unknown one (None).

    Examples
    --------
    >>> short_fingerprint("3f2a9c0d" + "0" * 56), short_fingerprint(None)
    ('3f2a9c', '?')
    """
    return "?" if fingerprint is None else fingerprint[:length]
