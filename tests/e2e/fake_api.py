"""A fake Anthropic Messages API for the real Claude Code CLI (stdlib `http.server`, 127.0.0.1 only).

`FakeAnthropic` listens on a random port of 127.0.0.1 and answers:
- `POST /v1/messages`: streaming (SSE: message_start, content_block_start/delta/stop, message_delta,
  message_stop) when the body says `"stream": true`, else one JSON message. The answer is the first
  scripted response whose `match` accepts the request (`FakeAnthropic.script`), else a
  `StructuredOutput` tool call when the request offers that tool (a `--json-schema` run) and the
  conversation has not answered one yet, else `<analysis>/<summary>` blocks holding
  `compact_summary` for a compaction request, else a short text answer (`default_text`).
- `POST /v1/messages/count_tokens`: `{"input_tokens": <body chars / 4>}`.
- `CONNECT` (anything sent through HTTPS_PROXY) is refused with 403; any other method or path gets
  `{}`, so nothing else can be reached and nothing breaks.

Every request is logged in `requests` (`Request`: method, path, headers with the values of
authorization / x-api-key / cookie replaced by "[set]", the raw body text, the parsed JSON body).

Invariant: a scripted response is used once (popped), in order among those that match; the log
keeps every request in arrival order (a lock guards both, the server is threaded).
"""

from __future__ import annotations

import gzip
import json
import threading
import uuid
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

SECRET_HEADERS = ("authorization", "x-api-key", "cookie", "proxy-authorization")
STRUCTURED_TOOL = "StructuredOutput"


@dataclass
class Request:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    raw: str
    body: Any

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return [t.get("name") for t in tools or [] if isinstance(t, dict)]

    def system_text(self) -> str:
        """The system prompt as one string (a string or a list of text blocks)."""
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return "\n".join(b.get("text", "") for b in system or [] if isinstance(b, dict))

    def messages_text(self) -> str:
        """Every text of every message (text blocks, tool inputs and results) as one string."""
        out: list[str] = []
        for msg in (self.body.get("messages") or []) if isinstance(self.body, dict) else []:
            out.append(_content_text(msg.get("content")))
        return "\n".join(out)

    def last_user_text(self) -> str:
        msgs = (self.body.get("messages") or []) if isinstance(self.body, dict) else []
        for msg in reversed(msgs):
            if msg.get("role") == "user":
                return _content_text(msg.get("content"))
        return ""

    def has_tool_result(self, tool_use_id: str | None = None) -> bool:
        for msg in (self.body.get("messages") or []) if isinstance(self.body, dict) else []:
            content = msg.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    if tool_use_id is None or block.get("tool_use_id") == tool_use_id:
                        return True
        return False


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(block.get("text", ""))
        elif kind == "tool_use":
            out.append(json.dumps(block.get("input"), ensure_ascii=False))
        elif kind == "tool_result":
            out.append(_content_text(block.get("content")))
    return "\n".join(out)


@dataclass
class Scripted:
    """One scripted answer. `content` holds Messages API content blocks (text / tool_use; a
    tool_use without an id gets one); `match(request) -> bool` picks which request it answers
    (default: any main-loop request, i.e. one that offers tools and is not a compaction)."""

    content: list[dict[str, Any]]
    match: Callable[[Request], bool] | None = None
    stop_reason: str | None = None
    used_by: Request | None = field(default=None, repr=False)

    def accepts(self, request: Request) -> bool:
        if self.match is not None:
            return bool(self.match(request))
        return bool(request.tool_names) and not _is_compaction(request)


def text(answer: str, match: Callable[[Request], bool] | None = None) -> Scripted:
    return Scripted([{"type": "text", "text": answer}], match)


def tool_use(name: str, tool_input: dict[str, Any], match: Callable[[Request], bool] | None = None,
             *, preamble: str = "") -> Scripted:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": preamble}] if preamble else []
    blocks.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name, "input": tool_input})
    return Scripted(blocks, match)


def minimal_instance(schema: Any) -> Any:
    """The smallest value valid under a plain JSON schema (required properties only, empty arrays)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: minimal_instance(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        n = int(schema.get("minItems", 0) or 0)
        return [minimal_instance(schema.get("items", {})) for _ in range(n)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0) or 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


class FakeAnthropic:
    """The fake API server; `start()` / `stop()`, or use as a context manager. `url` is its base URL."""

    DEFAULT_TEXT = "OK, done."
    COMPACT_SUMMARY = "The user and the assistant exchanged a few short prompts."

    def __init__(self, model: str = "claude-sonnet-4-5") -> None:
        self.default_text = self.DEFAULT_TEXT
        #: what a compaction request (one asking for a <summary> block) is answered with
        self.compact_summary = self.COMPACT_SUMMARY
        self.model = model
        self.requests: list[Request] = []
        self.scripted: list[Scripted] = []
        #: structured-output answers for --json-schema requests, used in order (else a minimal
        #: instance); a callable entry is called with the `Request` and its result is the answer
        self.structured: list[Any] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> "FakeAnthropic":
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting and inspection
    def script(self, *responses: Scripted) -> None:
        with self._lock:
            self.scripted.extend(responses)

    def reset(self) -> None:
        """Forget every request and scripted answer; default answers back to their defaults."""
        with self._lock:
            self.default_text = self.DEFAULT_TEXT
            self.compact_summary = self.COMPACT_SUMMARY
            self.requests.clear()
            self.scripted.clear()
            self.structured.clear()

    def messages(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_messages]

    def main_requests(self) -> list[Request]:
        """Model requests of the agent loop (those that offer tools), compactions excluded."""
        return [r for r in self.messages() if r.tool_names and not _is_compaction(r)]

    def compactions(self) -> list[Request]:
        return [r for r in self.messages() if _is_compaction(r)]

    def all_raw(self) -> str:
        with self._lock:
            return "\n".join(r.raw for r in self.requests) + "\n" + "\n".join(
                json.dumps(r.headers) + r.path for r in self.requests)

    # -- answering
    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def answer(self, request: Request) -> tuple[list[dict[str, Any]], str]:
        """(content blocks, stop_reason) for one /v1/messages request."""
        with self._lock:
            for i, item in enumerate(self.scripted):
                if item.accepts(request):
                    del self.scripted[i]
                    item.used_by = request
                    stop = item.stop_reason or ("tool_use" if any(b.get("type") == "tool_use" for b in item.content)
                                                else "end_turn")
                    return [_with_id(b) for b in item.content], stop
            if STRUCTURED_TOOL in request.tool_names and not _answered_structured(request):
                tool = next(t for t in request.body["tools"] if t.get("name") == STRUCTURED_TOOL)
                value = self.structured.pop(0) if self.structured else minimal_instance(tool.get("input_schema"))
                if callable(value):
                    value = value(request)
                return [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": STRUCTURED_TOOL,
                         "input": value}], "tool_use"
        if _is_compaction(request):
            return [{"type": "text", "text": f"<analysis>{self.compact_summary}</analysis>\n"
                                             f"<summary>{self.compact_summary}</summary>"}], "end_turn"
        return [{"type": "text", "text": self.default_text}], "end_turn"


def _is_compaction(request: Request) -> bool:
    """Claude Code's compaction request (/compact, auto-compact): it asks for a <summary> block."""
    last = request.last_user_text()
    return "<summary>" in last and "summar" in last.lower()


def _with_id(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "tool_use" and not block.get("id"):
        return {**block, "id": "toolu_" + uuid.uuid4().hex[:24]}
    return dict(block)


def _answered_structured(request: Request) -> bool:
    """Whether the conversation already holds a StructuredOutput tool call."""
    for msg in request.body.get("messages") or []:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == STRUCTURED_TOOL:
                return True
    return False


def _usage(request: Request, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": max(1, len(request.raw) // 4), "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet)
        pass

    def _read(self) -> Request:
        length = int(self.headers.get("content-length") or 0)
        data = self.rfile.read(length) if length else b""
        enc = (self.headers.get("content-encoding") or "").lower()
        try:
            if enc == "gzip":
                data = gzip.decompress(data)
            elif enc == "deflate":
                data = zlib.decompress(data)
        except (OSError, zlib.error):
            pass
        raw = data.decode("utf-8", "replace")
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): ("[set]" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        path = self.path
        if path.startswith("http://") or path.startswith("https://"):   # absolute-form (a proxied request)
            path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
        req = Request(self.command, path, headers, raw, body)
        self.owner._log(req)
        return req

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        req = self._read()
        route = req.path.split("?")[0]
        if route == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": max(1, len(req.raw) // 4)})
            return
        if route != "/v1/messages" or not isinstance(req.body, dict):
            self._json(200, {})
            return
        content, stop = self.owner.answer(req)
        msg_id = "msg_fake_" + uuid.uuid4().hex[:16]
        model = req.body.get("model") or self.owner.model
        out_tokens = max(1, sum(len(json.dumps(b)) for b in content) // 4)
        if not req.body.get("stream"):
            self._json(200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                             "content": content, "stop_reason": stop, "stop_sequence": None,
                             "usage": _usage(req, out_tokens)})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.end_headers()
        self.close_connection = True
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {
            "type": "message_start",
            "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                        "stop_reason": None, "stop_sequence": None, "usage": _usage(req, 1)}})]
        for i, block in enumerate(content):
            if block["type"] == "tool_use":
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block.get("text", "")}
            events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                       ("content_block_stop", {"type": "content_block_stop", "index": i})]
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": out_tokens}}),
                   ("message_stop", {"type": "message_stop"})]
        for name, payload in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        self._read()
        self._json(200, {})

    do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        self._read()
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_CONNECT(self) -> None:  # noqa: N802
        self._read()
        self.send_response(403, "no network in tests")
        self.send_header("content-length", "0")
        self.end_headers()
        self.close_connection = True
