"""A scripted model server for the launcher's tests: it speaks, streaming, the Anthropic Messages
API (`POST /v1/messages`, as Claude Code calls it through ANTHROPIC_BASE_URL), the OpenAI
Responses API (`POST /v1/responses`, as Codex calls a configured provider), the OpenAI Chat
Completions API (`POST /v1/chat/completions`, as opencode calls an OpenAI-compatible provider)
and the Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, as Gemini CLI
calls GOOGLE_GEMINI_BASE_URL) on 127.0.0.1 and replays a script of assistant turns, so that the
real agent CLIs run end to end with no model reachable.

A script is a list of turns. Each turn is a list of blocks, `{"text": "..."}` or
`{"tool": "Write", "input": {...}}`, or `{"status": 429}` for a turn that answers with an HTTP
error. The agent's main loop (a request that offers tools) gets the turn numbered by what its
conversation already holds: the assistant messages (Messages and Chat Completions APIs), the
function calls (Responses API: one tool call per turn there), the model contents (Gemini API);
side requests (a title, a summary) get a short text. Every request is kept in `requests` for the
test to read. A script may also be a function of the agent's working folder, read from the
request (the "Primary working directory" line of Claude Code's system prompt, Codex's `<cwd>`,
Gemini CLI's workspace directories): one server then plays every run of a sweep.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

WORKING_FOLDER = re.compile(
    r"[Ww]orking directory: (/[^\s\"\\]+)|<cwd>(/[^<]+)</cwd>"
    r"|Workspace Directories:\*\*\\n +- (/[^\s\"\\]+)"
)


class ScriptedModel:
    def __init__(self, script):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def turn_for(self, body: dict[str, Any]) -> list[dict[str, Any]] | None:
        if not body.get("tools"):
            return None  # a side request
        script = self.script
        if callable(script):
            found = WORKING_FOLDER.search(json.dumps(body))
            script = script(Path(next(folder for folder in found.groups() if folder)))
        if "input" in body:  # Responses API
            done = sum(1 for item in body["input"] if item.get("type") == "function_call")
        elif "contents" in body:  # Gemini API
            done = sum(1 for content in body["contents"] if content.get("role") == "model")
        else:
            done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return script[done] if done < len(script) else [{"text": "Done."}]

    def _handler(self):
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                model.requests.append({"path": self.path, "body": body})
                events = next((e for route, e in STREAMS if route in self.path), None)
                if events is None or "count_tokens" in self.path:
                    return self._json(200, {"input_tokens": 100, "totalTokens": 100})
                turn = model.turn_for(body)
                if turn and "status" in turn[0]:
                    error = {"type": "rate_limit_error", "message": "scripted rate limit"}
                    return self._json(turn[0]["status"], {"type": "error", "error": error})
                name = body.get("model") or self.path.partition("models/")[2].partition(":")[0]
                self._stream(events(name, turn or [{"text": "Kernel work"}], len(model.requests)))

            def do_GET(self) -> None:
                self._json(200, {})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event in events:
                    self.wfile.write(event)
                self.wfile.flush()

        return Handler


def event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def sse_events(model: str, turn: list[dict[str, Any]], number: int):
    """The Messages API's stream for one assistant turn."""

    usage = {"input_tokens": 1200, "output_tokens": 1, "cache_read_input_tokens": 0}
    message = {
        "id": f"msg_scripted_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield event("message_start", {"message": message})
    uses_tool = False
    for index, block in enumerate(turn):
        if "tool" in block:
            uses_tool = True
            start = {"type": "tool_use", "id": f"toolu_{number}_{index}", "name": block["tool"]}
            yield event(
                "content_block_start", {"index": index, "content_block": start | {"input": {}}}
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield event("content_block_delta", {"index": index, "delta": delta})
        else:
            yield event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            delta = {"type": "text_delta", "text": block["text"]}
            yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
    stop = "tool_use" if uses_tool else "end_turn"
    yield event(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 40}},
    )
    yield event("message_stop", {})


def responses_events(model: str, turn: list[dict[str, Any]], number: int):
    """The Responses API's stream for one assistant turn: a message item per text block, a
    function_call item per tool block (its input as the JSON arguments)."""
    response = {"id": f"resp_scripted_{number}", "object": "response", "model": model}
    yield event("response.created", {"response": response | {"status": "in_progress"}})
    for index, block in enumerate(turn):
        if "tool" in block:
            item = {
                "type": "function_call",
                "id": f"fc_{number}_{index}",
                "call_id": f"call_{number}_{index}",
                "name": block["tool"],
                "arguments": json.dumps(block["input"]),
                "status": "completed",
            }
            yield event("response.output_item.added", {"output_index": index, "item": item})
        else:
            item_id = f"msg_{number}_{index}"
            content = [{"type": "output_text", "text": block["text"], "annotations": []}]
            item = {"type": "message", "id": item_id, "role": "assistant", "content": content}
            added = item | {"content": [], "status": "in_progress"}
            yield event("response.output_item.added", {"output_index": index, "item": added})
            delta = {"item_id": item_id, "output_index": index, "content_index": 0}
            yield event("response.output_text.delta", delta | {"delta": block["text"]})
        yield event("response.output_item.done", {"output_index": index, "item": item})
    usage = {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1240,
    }
    yield event(
        "response.completed", {"response": response | {"status": "completed", "usage": usage}}
    )


def gemini_events(model: str, turn: list[dict[str, Any]], number: int):
    """The Gemini API's stream for one model turn: a chunk per block (a text part, or a
    functionCall part with the input as its args), the last with the finish reason and usage."""
    usage = {"promptTokenCount": 1200, "candidatesTokenCount": 40, "totalTokenCount": 1240}
    for index, block in enumerate(turn):
        part = {"text": block["text"]} if "text" in block else {}
        if "tool" in block:
            part = {"functionCall": {"name": block["tool"], "args": block["input"]}}
        candidate = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk = {"candidates": [candidate], "modelVersion": model, "responseId": f"r{number}"}
        if index == len(turn) - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = usage
        yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def chat_events(model: str, turn: list[dict[str, Any]], number: int):
    """The Chat Completions stream for one assistant turn: a chunk per block (a content delta,
    or a tool_calls delta with the input as the JSON arguments), the finish reason, then a
    chunk with the usage alone (as with ``stream_options.include_usage``)."""
    head = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "model": model}
    calls = [block for block in turn if "tool" in block]
    for index, block in enumerate(turn):
        delta: dict[str, Any] = {"role": "assistant", "content": block.get("text")}
        if "tool" in block:
            function = {"name": block["tool"], "arguments": json.dumps(block["input"])}
            call = {"id": f"call_{number}_{index}", "type": "function", "function": function}
            delta["tool_calls"] = [call | {"index": calls.index(block)}]
        yield _data(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = "tool_calls" if calls else "stop"
    yield _data(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    usage = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}
    yield _data(head | {"choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"


def _data(chunk: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


# the streaming route each API answers on, by what its path holds
STREAMS = (
    ("/v1/messages", sse_events),
    ("/v1/responses", responses_events),
    ("/v1/chat/completions", chat_events),
    (":streamGenerateContent", gemini_events),
)
