"""LLM relevance judge (0-3 grades) and query generation.

Nothing here imports LangChain or LlamaIndex at import time; a framework object passed as ``llm`` is
recognised by its classes.

Examples
--------
>>> from rankbridge.judge import Judge
>>> with Judge(lambda prompt: '{"reason": "on topic", "grade": 2}', model_id="scripted") as judge:
...     judge.grade("what causes scurvy", "Scurvy is caused by a lack of vitamin C.")
Grade(grade=2, reason='on topic')
"""

from rankbridge.judge.generate import (
    GenerateReport,
    GenerationError,
    GenerationResult,
    agenerate_golden_set,
    generate_golden_set,
    generate_queries,
    parse_query,
)
from rankbridge.judge.grading import (
    GRADES,
    Agreement,
    Grade,
    Judge,
    JudgeCacheError,
    JudgeCacheMigrated,
    JudgedQrels,
    JudgeReport,
    Judgment,
    JudgmentCache,
    Judgments,
    RelevanceSummary,
    UndefinedAgreementWarning,
    agreement,
    cohen_kappa,
    confusion_matrix,
    doc_hash,
    judge_runs,
    merge_qrels,
    parse_grade,
    pool,
    relevance_summary,
)
from rankbridge.judge.injection import INJECTION_KINDS, injection_flags, redact_instructions
from rankbridge.judge.llm import (
    BudgetExhausted,
    CallPolicy,
    LLMClient,
    LLMError,
    LLMReply,
    ModelIdRequired,
    ReplyParseError,
    Usage,
    as_llm,
    derived_model_id,
)
from rankbridge.judge.prompts import QUERY_STYLES, QUERY_V1, RELEVANCE_V1, REPAIR_V1, Prompt

__all__ = [
    "GRADES",
    "INJECTION_KINDS",
    "QUERY_STYLES",
    "QUERY_V1",
    "RELEVANCE_V1",
    "REPAIR_V1",
    "Agreement",
    "BudgetExhausted",
    "CallPolicy",
    "GenerateReport",
    "GenerationError",
    "GenerationResult",
    "Grade",
    "Judge",
    "JudgeCacheError",
    "JudgeCacheMigrated",
    "JudgeReport",
    "JudgedQrels",
    "Judgment",
    "JudgmentCache",
    "Judgments",
    "LLMClient",
    "LLMError",
    "LLMReply",
    "ModelIdRequired",
    "Prompt",
    "RelevanceSummary",
    "ReplyParseError",
    "UndefinedAgreementWarning",
    "Usage",
    "agenerate_golden_set",
    "agreement",
    "as_llm",
    "cohen_kappa",
    "confusion_matrix",
    "derived_model_id",
    "doc_hash",
    "generate_golden_set",
    "generate_queries",
    "injection_flags",
    "judge_runs",
    "merge_qrels",
    "parse_grade",
    "parse_query",
    "pool",
    "redact_instructions",
    "relevance_summary",
]
