"""OpenAI Chat Completions rules on the messages: roles, the content parts each role may send ([chat] the message
types), and tool calls answered by tool messages before the conversation goes on ([function-calling])."""

from __future__ import annotations

from typing import Any

from coder_testkit.fake_rules.book import CHAT_API, FUNCTION_CALLING, IMAGES_VISION, Found, Rules
from coder_testkit.fake_rules.chat import ChatCall

RULES: Rules[ChatCall] = Rules()

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: [chat] the content part types each role may send
PARTS = {"system": ("text",), "developer": ("text",), "user": ("text", "image_url", "input_audio", "file"),
         "assistant": ("text", "refusal"), "tool": ("text",)}
IMAGE_DETAILS = ("auto", "low", "high", "original")  # [images-vision] "original" since the GPT-5.5 models
#: [images-vision] "Image input requirements": PNG, JPEG, WEBP, non-animated GIF; "Up to 1500 individual image
#: inputs per request" (500 before the page's 2026 revision)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif")
MAX_IMAGES = 1500


def _supported(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _messages(call: ChatCall) -> list[Any]:
    return call.body["messages"]


@RULES.rule("chat.role", "every message's role is system, developer, user, assistant, tool or function",
            "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and "
            "'developer'.", CHAT_API, "schema", param="messages[{index}].role", code="invalid_value")
def _role(call: ChatCall) -> Found:
    for index, message in enumerate(_messages(call)):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            return {"index": index, "role": role}
    return None


def _parts(call: ChatCall) -> list[tuple[int, int, str, dict[str, Any]]]:
    out = []
    for index, message in enumerate(_messages(call)):
        content = message.get("content")
        for position, part in enumerate(content if isinstance(content, list) else []):
            out.append((index, position, message["role"], part if isinstance(part, dict) else {}))
    return out


@RULES.rule("chat.content-part", "each content part is of a type the message's role may send (system, developer "
            "and tool: text; user: text, image_url, input_audio, file; assistant: text, refusal)",
            "Invalid value: '{value}'. Supported values are: {supported}.", CHAT_API, "schema",
            param="messages[{index}].content[{position}].type", code="invalid_value")
def _content_part(call: ChatCall) -> Found:
    for index, position, role, part in _parts(call):
        allowed = PARTS.get(role, ("text",))
        if part.get("type") not in allowed:
            return {"index": index, "position": position, "value": part.get("type"),
                    "supported": _supported(allowed)}
    return None


@RULES.rule("chat.image-url", "an image_url part has a url and a detail of auto, low, high or original",
            "Invalid value: '{value}'. Supported values are: 'auto', 'low', 'high', and 'original'.", CHAT_API,
            "schema",
            param="messages[{index}].content[{position}].image_url.detail", code="invalid_value")
def _image_url(call: ChatCall) -> Found:
    for index, position, _, part in _parts(call):
        image = part.get("image_url") if part.get("type") == "image_url" else None
        if image is None:
            continue
        detail = image.get("detail", "auto") if isinstance(image, dict) else None
        if not isinstance(image, dict) or not isinstance(image.get("url"), str) or detail not in IMAGE_DETAILS:
            return {"index": index, "position": position, "value": detail}
    return None


def _image_urls(call: ChatCall) -> list[tuple[int, int, str]]:
    return [(index, position, str(part["image_url"]["url"])) for index, position, _, part in _parts(call)
            if part.get("type") == "image_url" and isinstance(part.get("image_url"), dict)]


@RULES.rule("chat.image-type", "an image sent as a data URL is PNG, JPEG, WEBP or GIF",
            "You uploaded an unsupported image. Please make sure your image has of one the following formats: "
            "['png', 'jpeg', 'gif', 'webp'].", IMAGES_VISION, "seen",
            seen="https://github.com/marketing-factory/ai-filemetadata/issues/19", code="invalid_image_format")
def _image_type(call: ChatCall) -> Found:
    for _, _, url in _image_urls(call):
        if url.startswith("data:") and url[5:].split(";", 1)[0].split(",", 1)[0].lower() not in IMAGE_TYPES:
            return {}
    return None


@RULES.rule("chat.image-count", "at most 1500 images a request",
            "Invalid 'messages': too many image inputs. Expected at most 1500, but got {count}.", IMAGES_VISION,
            "closest", param="messages", code="invalid_value")
def _image_count(call: ChatCall) -> Found:
    count = len(_image_urls(call))
    return {"count": count} if count > MAX_IMAGES else None


@RULES.rule("chat.tool-call-id", "a tool message names the call it answers (tool_call_id)",
            "Missing required parameter: 'messages[{index}].tool_call_id'.", CHAT_API, "schema",
            param="messages[{index}].tool_call_id", code="missing_required_parameter")
def _tool_call_id(call: ChatCall) -> Found:
    for index, message in enumerate(_messages(call)):
        if message["role"] == "tool" and not isinstance(message.get("tool_call_id"), str):
            return {"index": index}
    return None


@RULES.rule("chat.tool-calls", "an assistant's tool calls each have an id, a function name and string arguments",
            "Missing required parameter: 'messages[{index}].tool_calls[{position}].{field}'.", CHAT_API, "schema",
            param="messages[{index}].tool_calls[{position}].{field}", code="missing_required_parameter")
def _tool_calls(call: ChatCall) -> Found:
    for index, message in enumerate(_messages(call)):
        for position, tool_call in enumerate(message.get("tool_calls") or [] if message["role"] == "assistant"
                                             else []):
            function = tool_call.get("function") if isinstance(tool_call, dict) else None
            checks = [("id", isinstance(tool_call, dict) and isinstance(tool_call.get("id"), str)),
                      ("function.name", isinstance(function, dict) and isinstance(function.get("name"), str)),
                      ("function.arguments", isinstance(function, dict)
                       and isinstance(function.get("arguments"), str))]
            for field, ok in checks:
                if not ok:
                    return {"index": index, "position": position, "field": field}
    return None


@RULES.rule("chat.content-null", "content is given unless an assistant message carries tool calls",
            "Invalid value for 'content': expected a string, got null.", CHAT_API, "closest",
            param="messages.[{index}].content")
def _content_null(call: ChatCall) -> Found:
    for index, message in enumerate(_messages(call)):
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        if message.get("content") is None and not calls:
            return {"index": index}
    return None


def _pairing(call: ChatCall) -> tuple[str, dict[str, Any]] | None:
    """The first break of "every tool call is answered by a tool message before the conversation goes on"."""
    pending: list[str] = []
    opened_at = 0
    for index, message in enumerate(_messages(call)):
        if message["role"] == "tool":
            if message["tool_call_id"] not in pending:
                return "orphan", {"index": index}
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return "unanswered", {"index": opened_at, "ids": ", ".join(pending)}
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        if calls:
            pending = [c["id"] for c in calls]
            opened_at = index
    return ("unanswered", {"index": opened_at, "ids": ", ".join(pending)}) if pending else None


@RULES.rule("chat.tool-message-orphan", "a tool message answers a call of the assistant message before it",
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'.", FUNCTION_CALLING, "closest", param="messages.[{index}].role")
def _orphan(call: ChatCall) -> Found:
    found = _pairing(call)
    return found[1] if found and found[0] == "orphan" else None


@RULES.rule("chat.tool-call-unanswered", "every tool call is answered by a tool message before the next message",
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}", FUNCTION_CALLING,
            "seen", seen="https://github.com/RamiAwar/dataline/issues/172", param="messages.[{index}].role")
def _unanswered(call: ChatCall) -> Found:
    found = _pairing(call)
    return found[1] if found and found[0] == "unanswered" else None
