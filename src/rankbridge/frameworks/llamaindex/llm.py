"""A LlamaIndex LLM behind the judge's ``complete`` / ``acomplete``.

Called through ``chat`` / ``achat`` (the prompt as one user message) when ``metadata.is_chat_model`` is true,
otherwise ``complete`` / ``acomplete``; token usage is read from an OpenAI-style ``usage`` in ``raw`` (or
``additional_kwargs``). LlamaIndex is imported only to build the ``ChatMessage`` of a chat call.
"""

from __future__ import annotations

from typing import Any

from rankbridge.errors import LLMError, MissingExtraError
from rankbridge.frameworks.base import NAME_FIELDS, LLMReply, as_int, format_model_id, output_params, safe_attr

__all__ = ["acomplete", "complete", "describe", "model_id", "reply"]


def _usage(resp: Any) -> tuple[int | None, int | None]:
    for source in (getattr(resp, "raw", None), getattr(resp, "additional_kwargs", None)):
        if source is None:
            continue
        usage = source.get("usage", source) if isinstance(source, dict) else getattr(source, "usage", None)
        if usage is None:
            continue
        get = usage.get if isinstance(usage, dict) else (lambda key, u=usage: getattr(u, key, None))
        inp = as_int(get("prompt_tokens")) or as_int(get("input_tokens"))
        out = as_int(get("completion_tokens")) or as_int(get("output_tokens"))
        if inp is not None or out is not None:
            return inp, out
    return None, None


def reply(resp: Any) -> LLMReply:
    """The text and token usage of a ``ChatResponse`` or ``CompletionResponse``."""
    message = getattr(resp, "message", None)
    text = getattr(message, "content", None) if message is not None else getattr(resp, "text", None)
    if not isinstance(text, str):
        text = "" if text is None and message is not None else text
    if not isinstance(text, str):
        raise LLMError(f"the LlamaIndex LLM returned {type(resp).__name__} without text")
    return LLMReply(text, *_usage(resp))


def _message(prompt: str) -> Any:
    try:
        # lazy: the framework itself, only for a chat call
        from llama_index.core.llms import ChatMessage
    except ImportError as exc:  # pragma: no cover - the object came from llama_index
        raise MissingExtraError("llama-index-core", "llamaindex", "Judging with a LlamaIndex LLM") from exc
    return ChatMessage(role="user", content=prompt)


def _is_chat(obj: Any) -> bool:
    return bool(getattr(getattr(obj, "metadata", None), "is_chat_model", False))


def complete(obj: Any, prompt: str) -> LLMReply:
    """Send ``prompt`` (framework errors propagate unchanged)."""
    if _is_chat(obj):
        return reply(obj.chat([_message(prompt)]))
    return reply(obj.complete(prompt))


async def acomplete(obj: Any, prompt: str) -> LLMReply:
    """Async :func:`complete`."""
    if _is_chat(obj):
        return reply(await obj.achat([_message(prompt)]))
    return reply(await obj.acomplete(prompt))


def model_id(obj: Any) -> str | None:
    """``llamaindex:<metadata.model_name>?<output parameters>``, or None when the model has no name."""
    name = safe_attr(safe_attr(obj, "metadata"), "model_name")
    if not (isinstance(name, str) and name and name != "unknown"):
        name = next((v for f in NAME_FIELDS if isinstance(v := safe_attr(obj, f), str) and v), None)
    if name is None:
        return None
    return format_model_id("llamaindex", name, output_params(obj, []))


def describe(obj: Any) -> str:
    """A provenance name when :func:`model_id` has none: ``llamaindex:<class name>``."""
    return f"llamaindex:{type(obj).__name__}"
