"""Messages API rules on the shape of the conversation: roles, content, the block types each role may send, and
the fields of text, tool_use and tool_result blocks. Images and documents have their own module
(messages_media)."""

from __future__ import annotations

from coder_testkit.fake_rules.book import ANTHROPIC_SDK, MESSAGES_API, TOOL_CALLS, Found, Rules
from coder_testkit.fake_rules.context import Block, MessagesCall, first_found

RULES: Rules[MessagesCall] = Rules()

#: the block types a message may hold (anthropic 2.14 ContentBlockParam, in the SDK's order)
BLOCK_TYPES = ("text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
               "tool_result", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
               "code_execution_tool_result", "bash_code_execution_tool_result",
               "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload")
#: the block types a tool result may hold (ToolResultBlockParam.content)
TOOL_RESULT_TYPES = ("text", "image", "search_result", "document", "tool_reference")
#: [handle-tool-calls] results go back in a user message; calls and thinking are the assistant's own output
ONLY_IN = {"tool_result": "user", "tool_use": "assistant", "server_tool_use": "assistant",
           "thinking": "assistant", "redacted_thinking": "assistant",
           "image": "user", "document": "user"}  # [vision], [pdf]: images and documents are what the user sends


def _tags(types: tuple[str, ...]) -> str:
    return ", ".join(f"'{t}'" for t in types)


@RULES.rule("message.role", "every message is an object whose role is user or assistant",
            "messages.{index}.role: Input should be 'user' or 'assistant'", MESSAGES_API, "schema")
def _role(call: MessagesCall) -> Found:
    for index, message in enumerate(call.messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return {"index": index}
    return None


@RULES.rule("message.content", "every message has content: a string or a list of blocks",
            "messages.{index}.content: Field required", MESSAGES_API, "schema")
def _content(call: MessagesCall) -> Found:
    for index, message in enumerate(call.messages):
        if not isinstance(message.get("content"), (str, list)):
            return {"index": index}
    return None


@RULES.rule("message.block-object", "every block is an object with a type",
            "messages.{index}.content.{position}: Input should be a valid dictionary or object", MESSAGES_API,
            "schema")
def _block_object(call: MessagesCall) -> Found:
    for index, message in enumerate(call.messages):
        content = message["content"]
        for position, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return {"index": index, "position": position}
    return None


@RULES.rule("message.block-type", "every block is of a type the API defines",
            "{path}: Input tag '{tag}' found using 'type' does not match any of the expected tags: "
            + _tags(BLOCK_TYPES), ANTHROPIC_SDK, "closest")
def _block_type(call: MessagesCall) -> Found:
    return first_found([b for b in call.blocks if not b.in_tool_result],
                  lambda b: {"path": b.path, "tag": b.type} if b.type not in BLOCK_TYPES else None)


@RULES.rule("message.empty", "every message but a final assistant one has content",
            "messages.{index}: all messages must have non-empty content except for the optional final assistant "
            "message", MESSAGES_API, "seen", seen="https://github.com/anthropics/claude-code/issues/6774")
def _empty(call: MessagesCall) -> Found:
    last = len(call.messages) - 1
    for index, message in enumerate(call.messages):
        final_assistant = index == last and message["role"] == "assistant"
        if message["content"] in ("", []) and not final_assistant:
            return {"index": index}
    return None


@RULES.rule("message.block-role", "tool results only in user turns; tool calls and thinking only in assistant "
            "turns", "{path}: `{type}` blocks can only be in `{role}` messages", TOOL_CALLS, "closest")
def _block_role(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        role = ONLY_IN.get(block.type)
        return {"path": block.path, "type": block.type, "role": role} if role and block.role != role else None
    return first_found([b for b in call.blocks if not b.in_tool_result], broken)


@RULES.rule("text.string", "a text block's text is a string", "{path}: Input should be a valid string", ANTHROPIC_SDK,
            "schema")
def _text_string(call: MessagesCall) -> Found:
    return first_found(call.system_blocks + call.of_type("text"),
                  lambda b: {"path": b.at("text")} if not isinstance(b.block.get("text"), str) else None)


@RULES.rule("text.empty", "text blocks are not empty", "{where}: text content blocks must be non-empty", MESSAGES_API,
            "seen", seen="https://github.com/stackblitz/bolt.new/issues/7426")
def _text_empty(call: MessagesCall) -> Found:
    return first_found(call.system_blocks + call.of_type("text"),
                  lambda b: {"where": b.path.split(".")[0]} if b.block["text"] == "" else None)


@RULES.rule("text.whitespace", "text blocks hold non-whitespace text",
            "{where}: text content blocks must contain non-whitespace text", MESSAGES_API, "seen",
            seen="https://github.com/anthropics/claude-code/issues/23440")
def _text_whitespace(call: MessagesCall) -> Found:
    return first_found(call.system_blocks + call.of_type("text"),
                  lambda b: {"where": b.path.split(".")[0]} if not b.block["text"].strip() else None)


@RULES.rule("tool-use.fields", "a tool_use block has a string id and name and an object input",
            "{path}: {problem}", ANTHROPIC_SDK, "schema")
def _tool_use_fields(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        for key in ("id", "name"):
            if not isinstance(block.block.get(key), str):
                return {"path": block.at(key), "problem": "Input should be a valid string"}
        if not isinstance(block.block.get("input"), dict):
            return {"path": block.at("input"), "problem": "Input should be a valid dictionary"}
        return None
    return first_found(call.of_type("tool_use"), broken)


@RULES.rule("tool-result.tool-use-id", "a tool_result names the call it answers (`tool_use_id`, a string)",
            "{path}: Field required", ANTHROPIC_SDK, "schema")
def _tool_result_id(call: MessagesCall) -> Found:
    return first_found(call.of_type("tool_result"), lambda b: {"path": b.at("tool_use_id")}
                  if not isinstance(b.block.get("tool_use_id"), str) else None)


@RULES.rule("tool-result.is-error", "`is_error` is a boolean", "{path}: Input should be a valid boolean", ANTHROPIC_SDK,
            "schema")
def _tool_result_is_error(call: MessagesCall) -> Found:
    return first_found(call.of_type("tool_result"), lambda b: {"path": b.at("is_error")}
                  if "is_error" in b.block and not isinstance(b.block["is_error"], bool) else None)


@RULES.rule("tool-result.content", "a tool result's content is a string or a list of text, image, search_result, "
            "document and tool_reference blocks",
            "{path}: Input tag '{tag}' found using 'type' does not match any of the expected tags: "
            + _tags(TOOL_RESULT_TYPES), ANTHROPIC_SDK, "closest")
def _tool_result_content(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        content = block.block.get("content")
        if content is None or isinstance(content, str):
            return None
        for k, sub in enumerate(content if isinstance(content, list) else [content]):
            tag = sub.get("type") if isinstance(sub, dict) else None
            if tag not in TOOL_RESULT_TYPES:
                return {"path": f"{block.at('content')}.{k}", "tag": tag}
        return None
    return first_found(call.of_type("tool_result"), broken)
