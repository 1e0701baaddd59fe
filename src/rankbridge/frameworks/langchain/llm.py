"""A LangChain chat model or LLM behind the judge's ``complete`` / ``acomplete``.

Called through ``invoke`` / ``ainvoke`` with the prompt as one human message; the reply's text is its
``content`` (a string, or the text of its content blocks) and its token usage ``usage_metadata``.
Nothing here imports LangChain: the model is duck-typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankbridge.errors import LLMError
from rankbridge.frameworks.base import (
    NAME_FIELDS,
    LLMReply,
    as_int,
    format_model_id,
    output_params,
    safe_attr,
    safe_call,
)

__all__ = ["acomplete", "complete", "describe", "model_id", "reply"]


def reply(msg: Any) -> LLMReply:
    """The text and token usage of what ``invoke`` returned (a message, or text from a ``BaseLLM``)."""
    if isinstance(msg, str):  # a BaseLLM returns text
        return LLMReply(msg)
    content = getattr(msg, "content", None)
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content blocks
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        text = "".join(parts)
    else:
        raise LLMError(f"the LangChain model returned {type(msg).__name__}; expected a message with text content")
    usage = getattr(msg, "usage_metadata", None) or {}
    return LLMReply(text, as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens")))


def complete(obj: Any, prompt: str) -> LLMReply:
    """Send ``prompt`` (framework errors propagate unchanged)."""
    return reply(obj.invoke(prompt))


async def acomplete(obj: Any, prompt: str) -> LLMReply:
    """Async :func:`complete`."""
    return reply(await obj.ainvoke(prompt))


def model_id(obj: Any) -> str | None:
    """``langchain:<model name>?<output parameters>``, or None when the model has no name.

    The name is ``_get_ls_params()["ls_model_name"]``, else a field of :data:`~rankbridge.frameworks.base.NAME_FIELDS`;
    the parameters come from the fields, ``_identifying_params`` and ``_get_ls_params()``, with the provider
    when the integration states one (not the base class's guess from the class name).
    """
    ls = safe_call(safe_attr(obj, "_get_ls_params"))
    ls = ls if isinstance(ls, dict) else {}
    name = ls.get("ls_model_name")
    if not (isinstance(name, str) and name):
        name = next((v for f in NAME_FIELDS if isinstance(v := safe_attr(obj, f), str) and v), None)
    if name is None:
        return None
    identifying = safe_attr(obj, "_identifying_params")
    params = output_params(obj, [ls, dict(identifying) if isinstance(identifying, Mapping) else None])
    params.pop("model_name", None)
    provider = ls.get("ls_provider")
    if (
        isinstance(provider, str)
        and provider
        and type(obj)._get_ls_params.__qualname__.split(".")[0]
        not in (
            "BaseChatModel",
            "BaseLLM",
            "BaseLanguageModel",
        )
    ):  # a provider the integration states, not the base class's guess from the class name
        params = {"provider": provider, **params}
    return format_model_id("langchain", name, params)


def describe(obj: Any) -> str:
    """A provenance name when :func:`model_id` has none: ``langchain:<_llm_type or class name>``."""
    llm_type = safe_attr(obj, "_llm_type")
    return f"langchain:{llm_type if isinstance(llm_type, str) else type(obj).__name__}"
