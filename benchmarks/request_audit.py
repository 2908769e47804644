"""Audit (issue 46): coder's requests in the shapes of server tools, paused turns and tools on demand, checked by
rules written here from the APIs' documentation, apart from the fake server's rule table.

Scenarios drive real sessions (in-process `open_session`, and `coder run` processes that are cut by --max-turns or
SIGKILL and resumed) through the real anthropic and openai SDKs against the fake server, which records every request
it receives. Each recorded body is then checked by `audit_messages` / `audit_chat` below, a second reading of the
documentation (platform.claude.com: server-tools, web-search-tool, tool-search-tool, vision, extended-thinking,
api/errors; developers.openai.com: images-vision, reasoning, and the public answers quoted in
coder_testkit/fake_rules/chat.py), written without the fake's code, and by the fake's own rule table (every request
here was answered 200, so the table let it through). The section counts the requests, the scenarios, the blocks of
each shape, and lists every request a rule of this audit refuses.

Usage: python benchmarks/request_audit.py [--quick] [--only NAME...] [--out FILE] [--baseline LABEL JSON]
       (--quick: one model per loaded-tools scenario; --baseline: the JSON printed by a run in another checkout, such
       as main with this test kit and these two files copied in, shown beside this one)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from audit_scenarios import SCENARIOS, Recorder, isolate  # noqa: E402

from coder_testkit.fake_rules import check_chat, check_messages  # noqa: E402

TOOL_SEARCH_MODELS = ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-5", "claude-opus-4-6",
                      "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-mythos-preview",
                      "claude-sonnet-5", "claude-opus-5", "claude-fable-5", "claude-mythos-5", "claude-opus-5-5",
                      "claude-sonnet-5-5", "claude-haiku-5-5")  # [tool-search] model compatibility + supportedModels
#: [vision] 100 images a request on models with a 200k-token window (the overview's table), 600 on the others
WINDOW_200K = ("claude-3", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-1")
NO_PREFILL = re.compile(r"claude-(opus|sonnet)-4-[6-9]|claude-(opus|sonnet|haiku|fable|mythos)-5|claude-mythos-p")
DOMAIN = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(/[^*\s]*(\*[^*\s]*)?)?$")  # [server-tools] domain filtering
CHAT_IMAGE_TYPES = ("image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif")  # [images-vision]


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def audit_messages(body: dict[str, Any]) -> list[str]:
    """What a Messages API request breaks, by this audit's reading of the documentation."""
    broken: list[str] = []
    model, messages, tools = str(body["model"]), body["messages"], body.get("tools") or []
    deferred = {t["name"] for t in tools if t.get("defer_loading")}
    if deferred and not model.startswith(TOOL_SEARCH_MODELS):
        broken.append("tool-search: defer_loading to a model without tool search")
    if any(t.get("defer_loading") and "cache_control" in t for t in tools):
        broken.append("tool-search: cache_control on a deferred tool")
    if tools and len(deferred) == len(tools):
        broken.append("tool-search: every tool deferred")
    for tool in tools:
        for key in ("allowed_domains", "blocked_domains"):
            for domain in tool.get(key) or []:
                if not DOMAIN.match(domain) or not domain.isascii():
                    broken.append(f"server-tools: domain {domain!r}")
        if "max_uses" in tool and (not isinstance(tool["max_uses"], int) or tool["max_uses"] < 1):
            broken.append("web-search: max_uses")
    servers = {t["name"] for t in tools if "type" in t}
    uses: dict[str, int] = {}
    answered: set[str] = set()
    available = {t["name"] for t in tools if not t.get("defer_loading")}
    images = 0
    for index, message in enumerate(messages):
        for block in _content(message):
            kind = block.get("type", "")
            if kind == "image":
                images += 1
                if message["role"] != "user":
                    broken.append(f"vision: image in a {message['role']} message")
            if kind == "server_tool_use":
                uses[block["id"]] = index
            elif kind.endswith("_tool_result"):
                if block.get("tool_use_id") not in uses:
                    broken.append("server-tools: a result without its call")
                answered.add(block.get("tool_use_id"))
                for item in block.get("content") if isinstance(block.get("content"), list) else []:
                    if "encrypted_content" not in item:
                        broken.append("web-search: a result without encrypted_content")
            elif kind == "tool_result":
                for part in block.get("content") if isinstance(block.get("content"), list) else []:
                    if part.get("type") == "image":
                        images += 1
                    if part.get("type") == "tool_reference":
                        if part["tool_name"] not in deferred:
                            broken.append("tool-search: tool_reference to no deferred tool")
                        available.add(part["tool_name"])
            elif kind == "tool_use" and block["name"] not in available and block["name"] in deferred:
                broken.append(f"tool-search: a call to {block['name']}, which the request never loads")
    for call, index in uses.items():
        if call in answered:
            continue
        tail = messages[index + 1:]
        if tail and not (len(tail) == 1 and tail[0]["role"] == "user"
                         and all(b.get("type") == "tool_result" for b in _content(tail[0]))):
            broken.append("server-tools: a waiting server tool call in a turn that ended")
        elif not servers:
            broken.append("server-tools: a waiting server tool the request does not declare")
    if images > (100 if model.startswith(WINDOW_200K) else 600):
        broken.append("vision: too many images")
    last = messages[-1]
    if last["role"] == "assistant" and NO_PREFILL.search(model) and not any(
            b.get("type") == "server_tool_use" or b.get("type", "").endswith("_tool_result") for b in _content(last)):
        broken.append("errors: prefill on a model without it")
    return broken


def audit_chat(body: dict[str, Any]) -> list[str]:
    """What a Chat Completions request breaks, by this audit's reading of the documentation and answers."""
    broken: list[str] = []
    model = str(body["model"])
    if re.match(r"^gpt-(5\.6|6)", model) and body.get("tools") and body.get("reasoning_effort") != "none":
        broken.append("chat: GPT-5.6 function tools with a reasoning effort")
    if model.startswith(("gpt-5", "gpt-6", "o")) and ("max_tokens" in body or body.get("temperature", 1) != 1):
        broken.append("reasoning: max_tokens or a temperature on a reasoning model")
    urls = [p["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]
    if len(urls) > 500:  # the strictest figure the images-vision guide has published
        broken.append("images-vision: more than 500 images")
    if any(u.startswith("data:") and u[5:].split(";")[0] not in CHAT_IMAGE_TYPES for u in urls):
        broken.append("images-vision: an image type the API does not take")
    pending: set[str] = set()
    for message in body["messages"]:
        if message["role"] == "tool":
            pending.discard(message.get("tool_call_id"))
        elif pending:
            broken.append("function-calling: a tool call without its tool message")
            pending = set()
        pending |= {c["id"] for c in message.get("tool_calls") or []}
    return broken


def run(names: list[str], quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"scenarios": {}, "requests": 0, "shapes": Counter(), "broken": [], "judge": []}
    with tempfile.TemporaryDirectory(prefix="request-audit-") as tmp:
        for name in names:
            started = time.monotonic()
            recorder = Recorder(Path(tmp) / name)
            SCENARIOS[name](recorder, quick)
            bodies = recorder.bodies()
            out["scenarios"][name] = {"requests": len(bodies), "seconds": round(time.monotonic() - started, 1),
                                      "errors": recorder.errors}
            for n, (route, body) in enumerate(bodies):
                out["requests"] += 1
                _shapes(out["shapes"], route, body)
                check: Callable[[dict[str, Any]], list[str]] = audit_chat if route == "chat" else audit_messages
                for problem in check(body):
                    out["broken"].append(f"{name} request {n + 1}: {problem}")
                judged = check_chat(body) if route == "chat" else check_messages(body)
                if judged is not None:
                    out["judge"].append(f"{name} request {n + 1}: {judged.rule.id}")
    return out


def _shapes(counter: Counter[str], route: str, body: dict[str, Any]) -> None:
    counter[route] += 1
    text = json.dumps(body)
    for shape in ("server_tool_use", "web_search_tool_result", "tool_reference", "defer_loading", '"image"',
                  "image_url", "reasoning_effort"):
        counter[shape.strip('"')] += text.count(shape)
    if route == "messages" and body["messages"][-1]["role"] == "assistant":
        counter["paused turns sent back"] += 1


def section(result: dict[str, Any], command: str, baseline: tuple[str, dict[str, Any]] | None = None) -> str:
    lines = ["## Request audit: server tools, paused turns, tools on demand (issue 46)", "",
             f"Command: `{command}`  ", f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
             f"Machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared)", "",
             "Every request the fake server received in the scenarios below, checked by this audit's own reading of "
             "the documentation (benchmarks/request_audit.py, apart from the fake's rule table) and by the fake's "
             "table.", "", "| scenario | requests | errors the session met | seconds |", "|---|---:|---|---:|"]
    lines += [f"| {n} | {s['requests']} | {'; '.join(s['errors']) or 'none'} | {s['seconds']} |"
              for n, s in result["scenarios"].items()]
    shapes = ", ".join(f"{k}: {v}" for k, v in sorted(result["shapes"].items()))
    lines += ["", f"**{result['requests']} requests checked** ({shapes}).", "",
              f"Refused by the audit: {len(result['broken'])}" + (": " + "; ".join(result["broken"]) if
                                                                   result["broken"] else "."),
              f"Refused by the fake's table: {len(result['judge'])}" + (": " + "; ".join(result["judge"]) if
                                                                       result["judge"] else ".")]
    if baseline is not None:
        label, other = baseline
        lines += ["", f"The same scenarios on {label}: {other['requests']} requests; refused by the audit: "
                  f"{len(other['broken'])}, by the fake's table: {len(other['judge'])}; the sessions met "
                  f"{sum(len(x['errors']) for x in other['scenarios'].values())} refusals.", ""]
        lines += [f"- {problem}" for problem in other["broken"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one model per loaded-tools scenario")
    ap.add_argument("--only", nargs="*", help="scenarios by name (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "request_audit.md")
    ap.add_argument("--baseline", nargs=2, metavar=("LABEL", "JSON"),
                    help="the JSON this script printed in another checkout (e.g. main with this test kit)")
    args = ap.parse_args()
    isolate()
    result = run(args.only or list(SCENARIOS), args.quick)
    print(json.dumps({k: v for k, v in result.items() if k != "shapes"} | {"shapes": dict(result["shapes"])},
                     indent=1))
    baseline = (args.baseline[0], json.loads(Path(args.baseline[1]).read_text())) if args.baseline else None
    args.out.write_text(section(result, "python benchmarks/request_audit.py " + " ".join(sys.argv[1:]), baseline))
    errors = any(s["errors"] for s in result["scenarios"].values())
    return 1 if result["broken"] or result["judge"] or errors else 0


if __name__ == "__main__":
    sys.exit(main())
