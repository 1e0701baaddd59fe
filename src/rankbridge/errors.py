"""Every exception and warning rankbridge defines.

The hierarchy::

    Exception
    └── RankbridgeError                 base of everything rankbridge raises on purpose
        ├── InputError (ValueError)     input that rankbridge cannot use
        │   ├── ParseError              a malformed file; carries ``source`` and ``line``
        │   ├── MetricError             an unknown metric name or a bad parameter (k, rel)
        │   ├── IdMismatchError         a run's doc ids are not the ids the golden set judges
        │   ├── ContextMatchError       RAGAS reference contexts matched no corpus document; carries ``match``
        │   ├── ReplyParseError         an LLM reply without the expected shape (triggers the repair step)
        │   └── ModelIdRequired         no model id given and none derivable from the LLM
        ├── MissingExtraError (ImportError)   an optional framework is not installed
        ├── RetrievalError              a retriever failed (raised by adapters and the runner)
        ├── CheckpointError (OSError)   a run's checkpoint could not be written; carries the run so far
        ├── StoreError                  a run history file that cannot be used now (read-only, full, damaged)
        │   └── StoreLockedError        another process holds the history's write lock
        ├── LLMError                    the user's LLM raised, timed out, or kept replying unreadably
        ├── JudgeCacheError (OSError)   the judge cache file cannot be created, written or locked
        ├── BudgetExceededError         a batch's call/token budget (or error limit) stops new calls
        ├── CallTimeout                 one call of a batch outlived its policy's timeout
        └── GenerationError             query generation left documents without a query; carries ``result``

    UserWarning
    ├── IdMismatchWarning               the run's doc ids are almost never judged (scores near 0 for that alone)
    ├── GoldenSetWarning                part of a golden set cannot be scored (questions without judgments)
    ├── RankColumnWarning               a table's 'rank' column, not chosen, orders queries otherwise than its scores
    ├── RunCoverageWarning              most queries scored are missing from the run, or their retrieval failed
    ├── UnmatchedContextsWarning        some RAGAS reference contexts matched no document; carries ``match``
    ├── UndefinedAgreementWarning       a judge agreement kappa is undefined (NaN)
    ├── JudgeCacheMigrated              a schema 1 judge cache was upgraded
    ├── UngradedPairsWarning            most pairs a judge was asked to grade got no grade (unreadable replies...)
    └── TrendSplitWarning               a trend left records out or split them into several series
        └── MixedDefinitionsWarning     records saved under different metric definition versions

``BudgetExceededError`` is the one budget error of :mod:`rankbridge.batch`; its former names
``rankbridge.judge.llm.BudgetExhausted`` and ``rankbridge.integrations.ragas.BudgetExceededError`` are
aliases of it.

The errors and warnings that carry objects beside their message (``source``, ``match``, ``result``...)
share one constructor and pickle with those objects, so that they cross process boundaries (Ray,
multiprocessing) intact.

Each class is also importable from the module that raises it (``rankbridge.evaluate.IdMismatchWarning``,
``rankbridge.store.TrendSplitWarning``, ...). This module imports nothing of rankbridge at run time: every
layer may import it. Every message says what was expected, what was found, and where.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: at run time this module imports nothing of rankbridge
    from rankbridge.io.ragas_testset import ContextMatch
    from rankbridge.judge.generate import GenerationResult

__all__ = [
    "BudgetExceededError",
    "CallTimeout",
    "CheckpointError",
    "ContextMatchError",
    "GenerationError",
    "GoldenSetWarning",
    "IdMismatchError",
    "IdMismatchWarning",
    "InputError",
    "JudgeCacheError",
    "JudgeCacheMigrated",
    "LLMError",
    "MetricError",
    "MissingExtraError",
    "MixedDefinitionsWarning",
    "ModelIdRequired",
    "ParseError",
    "RankColumnWarning",
    "RankbridgeError",
    "ReplyParseError",
    "RetrievalError",
    "RunCoverageWarning",
    "StoreError",
    "StoreLockedError",
    "TrendSplitWarning",
    "UndefinedAgreementWarning",
    "UngradedPairsWarning",
    "UnmatchedContextsWarning",
]


class _Carrying(Exception):
    """The base of the errors and warnings that carry objects beside their message, as attributes.

    Each class's constructor takes its own arguments and passes the message and the objects, by name, to
    this one. Pickling rebuilds an instance from its message and attributes without calling the class's
    constructor, whose arguments need not be the message (``MissingExtraError(package, extra, feature)``).
    """

    def __init__(self, message: str, /, **attributes: object) -> None:
        super().__init__(message)
        self.__dict__.update(attributes)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls: type[_Carrying], args: tuple[str], attributes: dict[str, object]) -> _Carrying:
    """Unpickle a :class:`_Carrying` instance: its message and attributes, as they were."""
    obj = cls.__new__(cls, *args)
    _Carrying.__init__(obj, *args, **attributes)
    return obj


class _CarriesMatch(_Carrying):
    """An error or warning about reference contexts that carries the full :class:`ContextMatch` as ``match``."""

    match: ContextMatch

    def __init__(self, message: str, match: ContextMatch) -> None:
        super().__init__(message, match=match)


class RankbridgeError(Exception):
    """Base class of every error rankbridge raises on purpose."""


class InputError(RankbridgeError, ValueError):
    """Input (a dict, a file, an argument) that rankbridge cannot use."""


class ParseError(_Carrying, InputError):
    """A malformed input file.

    Parameters
    ----------
    message:
        What was expected and what was found.
    source:
        The file name (or a description such as ``"<dict>"``).
    line:
        The 1-based line number, when the problem is on one line.
    """

    message: str
    source: str | None
    line: int | None

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}", message=message, source=source, line=line)


class MetricError(InputError):
    """An unknown metric name, or a metric parameter out of range."""


class IdMismatchError(_Carrying, InputError):
    """Most retrieved doc ids are neither judged nor in the corpus, so any score would be meaningless.

    Attributes
    ----------
    suggestion:
        The ``id_from=`` value whose ids do match (``None`` when no source of the results matches).
    report:
        The :class:`~rankbridge.idmatch.IdReport` behind the decision (shares per id source, examples).
    run:
        The run that was produced before the check failed (``None`` when the check ran before the run),
        so that a long run is not lost.
    """

    suggestion: str | None
    report: object
    run: object

    def __init__(self, message: str, *, suggestion: str | None = None, report: object = None, run: object = None):
        super().__init__(message, suggestion=suggestion, report=report, run=run)


class MissingExtraError(_Carrying, RankbridgeError, ImportError):
    """An optional dependency is missing; the message names the pip command."""

    package: str
    extra: str

    def __init__(self, package: str, extra: str, feature: str):
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'rankbridge[{extra}]'",
            package=package,
            extra=extra,
        )


class RetrievalError(RankbridgeError):
    """A retriever failed: it raised, timed out, or returned something unusable."""


class CheckpointError(_Carrying, RankbridgeError, OSError):
    """The runner could not append to its checkpoint file (a full disk, a lost mount).

    The run stopped at once; ``run`` holds every query that finished, in memory, and the checkpoint holds
    every line written before the failure, so a later call with the same file resumes from there.
    """

    run: object

    def __init__(self, message: str, *, run: object = None):
        super().__init__(message, run=run)


class StoreError(_Carrying, RankbridgeError):
    """A run history file that cannot be used now (locked by another process, read-only, full, damaged).

    Bad input (a file that is not a history, a record that does not exist) is an
    :class:`InputError` instead. ``path`` is the file.
    """

    path: str

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, path=path)


class StoreLockedError(StoreError):
    """Another process holds the history's write lock and did not release it within ``timeout`` seconds.

    The command line exits with code 75 ("try again", ``EX_TEMPFAIL``) on it.
    """

    timeout: float

    def __init__(self, path: str, *, timeout: float, doing: str) -> None:
        super().__init__(
            f"{path}: the run history is locked: another process is writing to it, and it did not finish "
            f"within {timeout:g} s (while trying to {doing}). Try again when it is done, or wait longer "
            "(RunStore(..., timeout=SECONDS), rankbridge history --lock-timeout SECONDS)",
            path=path,
        )
        self.timeout = timeout


class ContextMatchError(_CarriesMatch, InputError):
    """Reference contexts matched no corpus document (``unmatched="error"``); ``.match`` has the details."""


class ReplyParseError(InputError):
    """A reply that does not have the expected shape (triggers the repair step)."""


class ModelIdRequired(InputError):
    """No model id was given and none can be derived from the LLM (a plain callable, a nameless model)."""


class LLMError(RankbridgeError):
    """The user's LLM raised, timed out, or kept returning replies that could not be read."""


class JudgeCacheError(RankbridgeError, OSError):
    """The judge cache file cannot be created, written or locked (read-only or full disk, permissions, lock)."""


class BudgetExceededError(RankbridgeError):
    """A batch's budget -- calls (prompts), tokens, or items failed -- stops new calls (see :mod:`rankbridge.batch`).

    Raised inside the batch; the items not tried are reported as not judged / not scored, never dropped.
    """


class CallTimeout(RankbridgeError):
    """One call of a batch outlived its policy's ``timeout`` (see :func:`rankbridge.batch.within`).

    Its own class, so that a ``TimeoutError`` raised by the user's LLM or retriever never reads as ours.
    """


class GenerationError(_Carrying, RankbridgeError):
    """Some documents produced no query (failed, or the budget stopped the batch).

    ``result`` holds what was generated and the report; pass ``on_error="skip"`` to accept a partial set.
    """

    result: GenerationResult

    def __init__(self, message: str, result: GenerationResult) -> None:
        super().__init__(message, result=result)


# -- warnings ---------------------------------------------------------------------------------------------
class IdMismatchWarning(UserWarning):
    """The run's doc ids are almost never judged in the qrels: the scores are near 0 for that reason alone."""


class GoldenSetWarning(UserWarning):
    """A golden set was read, but part of it cannot be scored (questions without judgments)."""


class RunCoverageWarning(UserWarning):
    """Most of the queries scored are not in the run (missing from it, or their retrieval failed): the means
    say more about the queries the run lacks than about the retriever. Also: every list of a run is shorter
    than the ``k`` asked for, since the retriever's own top-k caps it (:func:`rankbridge.run_retriever`)."""


class RankColumnWarning(UserWarning):
    """A run table has a ``rank`` column that was not chosen, and the scores that ranked the run order some
    queries otherwise (``Run.from_pandas(run.to_pandas())`` of a reranked run whose scores were kept)."""


class UnmatchedContextsWarning(_CarriesMatch, UserWarning):
    """Some reference contexts matched no corpus document; ``.match`` holds the full :class:`ContextMatch`."""


class UndefinedAgreementWarning(UserWarning):
    """Kappa is undefined (both raters used one and the same label, or there are no pairs): it is NaN."""


class JudgeCacheMigrated(UserWarning):
    """A schema 1 judge cache was upgraded; grades keyed by a derived model id were moved aside."""


class UngradedPairsWarning(UserWarning):
    """Most pairs a judging batch got to have no grade (the LLM's replies were unreadable, its calls failed, or
    the texts were missing): qrels made of the grades leave those pairs unjudged."""


class TrendSplitWarning(UserWarning):
    """A trend left records out or split them into several series (the reasons are in the message)."""


class MixedDefinitionsWarning(TrendSplitWarning):
    """A trend met records saved under different :data:`METRIC_DEFINITIONS_VERSION` values (and split them)."""


class _LineReaderNeeded(Exception):
    """Internal signal of the bulk TREC readers (:mod:`rankbridge.io.trec`), never seen by users: the file
    needs the line-by-line reader, which names the line that is off."""
