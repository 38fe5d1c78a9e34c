"""Small servers for three wire formats, written from the vendors' public documentation and
from what the real servers answer, NOT from :mod:`cross_judge.testing`: "a vendor nobody in
the project wrote", for the integration tests of structured answers, reasoning controls and
confidence from token probabilities.

* :class:`OpenAIChatServer`: OpenAI chat completions. ``response_format`` ``json_schema``
  is checked as strict mode checks it (name ``^[a-zA-Z0-9_-]{1,64}$``, ``strict``, every
  object with ``additionalProperties: false`` and every property required) and answered
  with JSON matching the schema; ``json_object`` needs the word "json" in the messages;
  ``logprobs``/``top_logprobs`` are served on tokens split as OpenAI's tokenizer plausibly
  splits compact JSON (``{"``, ``kind``, ``":"``, ``PASS``, ``","``, ...), with ``bytes``;
  ``reasoning_effort`` makes it a reasoning model: ``completion_tokens_details.
  reasoning_tokens`` in the usage, and ``temperature`` or ``max_tokens`` refused with
  OpenAI's 400s; a cap below ``truncate_below`` gets ``finish_reason: "length"`` and no
  content (the tokens went to reasoning).
* :class:`LlamaCppServer`: llama-cpp-python 0.3.x's server. Its request model types
  ``response_format.type`` as ``Literal["text", "json_object"]``, and FastAPI's validation
  error reaches its route error handler, which renders every unexpected exception as a 500
  ``internal_server_error`` with ``str(exc)`` as the message (``llama_cpp/server/
  types.py``, ``errors.py``): that exact shape for ``json_schema``. ``{"type":
  "json_object", "schema": {...}}`` is enforced (a grammar: the answer matches the schema);
  logprobs as it serves them (``bytes: null``; tokens like `` "``, ``P``, ``ASS``; the
  top list holds the raw distribution, before the grammar, and the chosen token is
  appended when it is not among the top k).
* :class:`AnthropicMessagesServer`: the Messages API. A forced tool is answered with a
  ``tool_use`` block (``stop_reason: "tool_use"``); ``output_config.format`` with a JSON
  text block; ``thinking`` with a thinking block first, the budget spent, and
  ``stop_reason: "max_tokens"`` when ``max_tokens`` leaves no room for the answer; the
  documented 400s: ``budget_tokens`` < 1024 or >= ``max_tokens``, a forced tool while
  thinking, ``temperature`` other than 1 while thinking.

What each answers comes from a script: ``answer(body) -> Answer`` (the label, confidence,
reasoning and, for logprobs, the probabilities of the labels at the label's token). Every
server records the JSON bodies it received (:attr:`WireServer.bodies`, at most
:data:`MAX_RECORDED`; never the headers, which carry the key), binds 127.0.0.1 on a free
port, and is started and stopped by a context manager. Bodies over
:data:`MAX_BODY_BYTES` get a 413; a connection idle for :data:`IDLE_TIMEOUT_S` is closed.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typing_extensions import Self

__all__ = [
    "Answer",
    "AnthropicMessagesServer",
    "LlamaCppServer",
    "OpenAIChatServer",
    "WireServer",
    "count_tokens",
]

MAX_BODY_BYTES = 1_000_000
MAX_RECORDED = 1_000
IDLE_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Answer:
    """What the scripted model answers.

    ``label_probs``: the probability of each label (and of any other token text) at the
    token that writes the label, for ``logprobs``; ``None``: the chosen label at 0.9, the
    rest of the mass spread over the other labels of the schema. ``free_text``: what the
    model writes when no schema is enforced (``None``: the same JSON answer).
    """

    label: str
    confidence: float = 0.9
    reasoning: str = "It does what the task asks."
    label_probs: Mapping[str, float] | None = None
    free_text: str | None = None


Script = Callable[[Mapping[str, Any]], Answer]


def always(label: str, **kwargs: Any) -> Script:
    """A script answering ``label`` to every request."""
    answer = Answer(label, **kwargs)
    return lambda body: answer


class WireError(Exception):
    """A refusal: the status and the body the vendor sends."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


class WireServer:
    """A vendor on 127.0.0.1: subclasses answer :meth:`respond`."""

    path = "/v1/chat/completions"

    def __init__(self, answer: Script, *, api_key: str | None = None) -> None:
        self.answer = answer
        self.api_key = api_key
        self._bodies: deque[dict[str, Any]] = deque(maxlen=MAX_RECORDED)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the recorded requests ----------------------------------------------------------

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, oldest first (at most :data:`MAX_RECORDED`)."""
        with self._lock:
            return list(self._bodies)

    @property
    def last(self) -> dict[str, Any]:
        """The last body received."""
        return self.bodies[-1]

    # -- life cycle -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL a client is given (OpenAI-style: the prefix of /chat/completions)."""
        return f"{self.origin}/v1"

    def __enter__(self) -> Self:
        handler = _handler_for(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join(STOP_TIMEOUT_S)
        self._server = self._thread = None

    # -- what subclasses provide ----------------------------------------------------------

    def authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    def unauthorised(self) -> WireError:
        return WireError(401, _openai_error("Incorrect API key provided.", "invalid_api_key"))

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def handle(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any]:
        if path.rstrip("/") != self.path:
            return 404, {"error": {"message": f"no route {path}"}}
        if not self.authorised(headers):
            error = self.unauthorised()
            return error.status, error.body
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, _openai_error("We could not parse the JSON body of your request.")
        if not isinstance(body, dict):
            return 400, _openai_error("The body must be a JSON object.")
        with self._lock:
            self._bodies.append(body)
        try:
            return 200, self.respond(body)
        except WireError as error:
            return error.status, error.body


def _handler_for(owner: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = IDLE_TIMEOUT_S

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("content-length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY_BYTES:
                self._send(413, {"error": {"message": "request body too large"}})
                self.close_connection = True
                return
            raw = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = owner.handle(self.path, headers, raw)
            self._send(status, payload)

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: pytest shows what matters

    return Handler


# -- answers in the schema's shape ----------------------------------------------------------


def _openai_error(
    message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def _label_key(schema: Mapping[str, Any] | None) -> str:
    if schema:
        for key, spec in schema.get("properties", {}).items():
            if isinstance(spec, dict) and "enum" in spec:
                return str(key)
    return "kind"


def _labels(schema: Mapping[str, Any] | None) -> list[str]:
    if schema:
        spec = schema.get("properties", {}).get(_label_key(schema), {})
        return [str(v) for v in spec.get("enum", [])]
    return []


def answer_object(answer: Answer, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The answer as a JSON object: the schema's properties in their order (an enforced
    schema can write nothing else), or ``kind``/``confidence``/``reasoning``.

    Raises:
        WireError: the scripted label is not in the schema's enum (a grammar could never
            write it: the script is wrong), as a 500 naming it.
    """
    if schema is None:
        return {
            "kind": answer.label,
            "confidence": answer.confidence,
            "reasoning": answer.reasoning,
        }
    labels = _labels(schema)
    if labels and answer.label not in labels:
        raise WireError(500, {"error": {"message": f"script: {answer.label!r} not in {labels}"}})
    label_key = _label_key(schema)
    value: dict[str, Any] = {}
    for key, spec in schema.get("properties", {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if key == label_key:
            value[key] = answer.label
        elif kind in ("number", "integer"):
            value[key] = answer.confidence
        else:
            value[key] = answer.reasoning
    return value


def _strict_problem(schema: Any, context: tuple[str, ...] = ()) -> str | None:
    """What OpenAI's strict mode says of ``schema`` (``None``: it takes it)."""
    if not isinstance(schema, dict):
        return f"In context={context}, schema must be a JSON Schema of 'type: \"object\"'"
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={context}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        required = schema.get("required", [])
        missing = [key for key in properties if key not in required]
        if missing:
            return (
                f"In context={context}, 'required' is required to be supplied and to be an "
                f"array including every key in properties. Missing '{missing[0]}'."
            )
        for key, spec in properties.items():
            problem = _strict_problem(spec, (*context, "properties", key))
            if problem is not None:
                return problem
    return None


# -- tokenizers -------------------------------------------------------------------------------

# Compact JSON as OpenAI's tokenizer plausibly splits it: the quote-colon-quote runs are
# single tokens, words (with a leading space) are tokens, digits one by one.
_OPENAI_PIECES = re.compile(r'\{"|":"|":|","|,"|"\}|\}| ?[A-Za-z]+|\d|.', re.DOTALL)
# json.dumps's spaced JSON as llama.cpp's (SmolLM2's BPE) splits it.
_LLAMA_PIECES = re.compile(r'\{"|":|",| "|"\}|\}| ?[A-Za-z]+|\d|.', re.DOTALL)
_SENTINEL = "\u0000LABEL\u0000"


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as :class:`OpenAIChatServer` and :class:`AnthropicMessagesServer`
    count them."""
    return len(_OPENAI_PIECES.findall(text))


def _render(value: dict[str, Any], spaced: bool) -> str:
    if spaced:
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


@dataclass
class _Tokens:
    text: str
    pieces: list[str]
    label_at: int | None = None  # index of the first token of the label's value
    label_pieces: list[str] = field(default_factory=list)


def _tokenise(value: dict[str, Any], label_key: str, *, llama: bool) -> _Tokens:
    pattern = _LLAMA_PIECES if llama else _OPENAI_PIECES
    label = value.get(label_key)
    text = _render(value, llama)
    if not isinstance(label, str) or not label:
        return _Tokens(text, pattern.findall(text))
    marked = _render({**value, label_key: _SENTINEL}, llama)
    before, after = marked.split(json.dumps(_SENTINEL)[1:-1], 1)
    head, tail = pattern.findall(before), pattern.findall(after)
    pieces = [label[0], label[1:]] if llama and len(label) > 1 else [label]
    joined = "".join(head + pieces + tail)
    assert joined == text, (joined, text)
    return _Tokens(text, head + pieces + tail, len(head), pieces)


def _top_at_label(
    answer: Answer, labels: list[str], chosen_piece: str, *, llama: bool
) -> list[tuple[str, float]]:
    """``(token, probability)`` at the label's first token, most likely first."""
    if answer.label_probs is not None:
        probs = dict(answer.label_probs)
    else:
        others = [label for label in labels if label != answer.label]
        probs = {answer.label: 0.9}
        for other in others:
            probs[other] = 0.1 / len(others)
    merged: dict[str, float] = {}
    for text, p in probs.items():
        piece = text[0] if llama and text in [*labels, answer.label] and len(text) > 1 else text
        if text == answer.label:
            piece = chosen_piece
        merged[piece] = merged.get(piece, 0.0) + p
    return sorted(merged.items(), key=lambda item: -item[1])


def _logprob_entries(
    tokens: _Tokens, answer: Answer, labels: list[str], top: int, *, llama: bool
) -> list[dict[str, Any]]:
    entries = []
    for index, piece in enumerate(tokens.pieces):
        if index == tokens.label_at:
            ranked = _top_at_label(answer, labels, piece, llama=llama)
        elif llama and index == (tokens.label_at or -2) + 1:
            ranked = [(piece, 0.95), ("ART", 0.01)]  # the rest of the label, nearly certain
        else:
            ranked = [(piece, 0.999), (" " if piece != " " else "\n", 0.0005)]
        chosen = dict(ranked).get(piece, 1e-6)
        listed = ranked[: max(top, 0)]
        if llama and piece not in dict(listed):
            listed.append((piece, chosen))  # llama.cpp appends the sampled token
        entries.append(
            {
                "token": piece,
                "logprob": math.log(chosen),
                "bytes": None if llama else list(piece.encode()),
                "top_logprobs": [
                    {
                        "token": text,
                        "logprob": math.log(p),
                        "bytes": None if llama else list(text.encode()),
                    }
                    for text, p in listed
                ],
            }
        )
    return entries


# -- OpenAI chat completions ---------------------------------------------------------------------


class OpenAIChatServer(WireServer):
    """OpenAI's chat completions (see the module docstring). ``reasoning_tokens`` gives the
    tokens a reasoning model thinks per effort; ``truncate_below`` the cap under which its
    answer is cut off (``None``: never)."""

    def __init__(
        self,
        answer: Script,
        *,
        api_key: str | None = None,
        reasoning_tokens: Mapping[str, int] | None = None,
        truncate_below: int | None = None,
    ) -> None:
        super().__init__(answer, api_key=api_key)
        self.reasoning_tokens = dict(reasoning_tokens or {"low": 64, "medium": 192, "high": 768})
        self.truncate_below = truncate_below
        self._served = 0

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        effort = body.get("reasoning_effort")
        if effort is not None:
            for name in ("temperature", "max_tokens"):
                if name in body:
                    hint = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                    raise WireError(
                        400,
                        _openai_error(
                            f"Unsupported parameter: '{name}' is not supported with this "
                            f"model.{hint}",
                            "unsupported_parameter",
                            name,
                        ),
                    )
            if effort not in self.reasoning_tokens:
                raise WireError(
                    400,
                    _openai_error(
                        f"Invalid value: '{effort}'.", "invalid_value", "reasoning_effort"
                    ),
                )
        schema = self._schema(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise WireError(
                400, _openai_error("'messages' must be a non-empty array.", None, "messages")
            )
        prompt = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        answer = self.answer(body)
        cap = body.get("max_completion_tokens", body.get("max_tokens"))
        thought = self.reasoning_tokens[effort] if effort is not None else 0
        self._served += 1
        if cap is not None and self.truncate_below is not None and cap < self.truncate_below:
            return self._completion(body, "", "length", prompt, cap, min(thought, cap), None)
        value = answer_object(answer, schema)
        fmt = (body.get("response_format") or {}).get("type")
        if schema is None and fmt != "json_object" and answer.free_text is not None:
            text, logprobs = answer.free_text, None
            used = count_tokens(text)
        else:
            tokens = _tokenise(value, _label_key(schema), llama=False)
            text, used = tokens.text, len(tokens.pieces)
            logprobs = None
            if body.get("logprobs"):
                entries = _logprob_entries(
                    tokens, answer, _labels(schema), int(body.get("top_logprobs") or 0), llama=False
                )
                logprobs = {"content": entries, "refusal": None}
        return self._completion(body, text, "stop", prompt, used + thought, thought, logprobs)

    def _schema(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        fmt = body.get("response_format")
        if fmt is None:
            return None
        if not isinstance(fmt, dict) or fmt.get("type") not in (
            "text",
            "json_object",
            "json_schema",
        ):
            raise WireError(
                400,
                _openai_error(
                    "Invalid value: 'response_format.type'. Supported values are: 'text', "
                    "'json_object' and 'json_schema'.",
                    "invalid_value",
                    "response_format.type",
                ),
            )
        if fmt["type"] == "json_object":
            words = json.dumps(body.get("messages", [])).lower()
            if "json" not in words:
                raise WireError(
                    400,
                    _openai_error(
                        "'messages' must contain the word 'json' in some form, to use "
                        "'response_format' of type 'json_object'.",
                        None,
                        "messages",
                    ),
                )
            return None
        if fmt["type"] == "text":
            return None
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not _NAME.match(str(spec.get("name", ""))):
            raise WireError(
                400,
                _openai_error(
                    "Invalid 'response_format.json_schema.name': string does not match "
                    "pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                    "invalid_value",
                    "response_format.json_schema.name",
                ),
            )
        schema = spec.get("schema")
        if spec.get("strict") is True:
            problem = _strict_problem(schema)
            if problem is not None:
                raise WireError(
                    400,
                    _openai_error(
                        f"Invalid schema for response_format '{spec['name']}': {problem}",
                        "invalid_json_schema",
                        "response_format",
                    ),
                )
        return schema if isinstance(schema, dict) else None

    def _completion(
        self,
        body: Mapping[str, Any],
        text: str,
        finish: str,
        prompt: str,
        completion_tokens: int,
        thought: int,
        logprobs: dict[str, Any] | None,
    ) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": count_tokens(prompt),
            "completion_tokens": completion_tokens,
            "total_tokens": count_tokens(prompt) + completion_tokens,
        }
        if body.get("reasoning_effort") is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": thought}
        return {
            "id": f"chatcmpl-wire{self._served}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": str(body.get("model", "")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": logprobs,
                    "finish_reason": finish,
                }
            ],
            "usage": usage,
        }


# -- llama-cpp-python's server ---------------------------------------------------------------

_LLAMACPP_APP = "/site-packages/llama_cpp/server/app.py"


class LlamaCppServer(WireServer):
    """llama-cpp-python 0.3.x's OpenAI-compatible server (see the module docstring)."""

    def __init__(self, answer: Script) -> None:
        super().__init__(answer)
        self._served = 0

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        fmt = body.get("response_format")
        schema: dict[str, Any] | None = None
        if fmt is not None:
            kind = fmt.get("type") if isinstance(fmt, dict) else None
            if kind not in ("text", "json_object"):
                raise WireError(500, self._validation_error(kind))
            if kind == "json_object" and isinstance(fmt.get("schema"), dict):
                schema = fmt["schema"]
        answer = self.answer(body)
        enforced = fmt is not None and fmt.get("type") == "json_object"
        if not enforced and answer.free_text is not None:
            text, logprobs = answer.free_text, None
        else:
            tokens = _tokenise(answer_object(answer, schema), _label_key(schema), llama=True)
            text = tokens.text
            logprobs = None
            if body.get("logprobs"):
                top = int(body.get("top_logprobs") or 0)
                entries = _logprob_entries(tokens, answer, _labels(schema), top, llama=True)
                logprobs = {"content": entries, "refusal": None}
        self._served += 1
        used = len(_LLAMA_PIECES.findall(text))
        prompt = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages", []))
        return {
            "id": f"chatcmpl-{self._served:08d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
            "choices": [
                {
                    "index": 0,
                    "message": {"content": text, "role": "assistant"},
                    "logprobs": logprobs,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": used,
                "total_tokens": prompt + used,
            },
        }

    @staticmethod
    def _validation_error(kind: Any) -> dict[str, Any]:
        """FastAPI's RequestValidationError as llama-cpp-python's route handler renders it:
        ``str(exc)`` in a 500 (what version 0.3.36 sends, read off a running server)."""
        detail = {
            "type": "literal_error",
            "loc": ("body", "response_format", "type"),
            "msg": "Input should be 'text' or 'json_object'",
            "input": kind,
            "ctx": {"expected": "'text' or 'json_object'"},
        }
        message = (
            f'1 validation error:\n  {detail!r}\n\n  File "{_LLAMACPP_APP}", line 376, in '
            "create_chat_completion\n    POST /v1/chat/completions"
        )
        return {
            "error": {
                "message": message,
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }


# -- Anthropic Messages --------------------------------------------------------------------------

_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def _anthropic_error(status: int, message: str, kind: str = "invalid_request_error") -> WireError:
    return WireError(
        status,
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_wire"},
    )


class AnthropicMessagesServer(WireServer):
    """Anthropic's Messages API (see the module docstring). ``thinks``: the thinking
    tokens the model spends (``None``: its whole budget)."""

    path = "/v1/messages"

    def __init__(
        self, answer: Script, *, api_key: str | None = None, thinks: int | None = None
    ) -> None:
        super().__init__(answer, api_key=api_key)
        self.thinks = thinks
        self._served = 0

    @property
    def url(self) -> str:
        """The base URL the Anthropic SDK is given (it appends /v1/messages)."""
        return self.origin

    def authorised(self, headers: Mapping[str, str]) -> bool:
        return self.api_key is None or headers.get("x-api-key") == self.api_key

    def unauthorised(self) -> WireError:
        return _anthropic_error(401, "invalid x-api-key", "authentication_error")

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        cap = body.get("max_tokens")
        if not isinstance(cap, int) or cap < 1:
            raise _anthropic_error(400, "max_tokens: Field required")
        budget = self._thinking_budget(body, cap)
        tool = self._forced_tool(body, thinking=budget is not None)
        schema = self._output_schema(body)
        if tool is not None:
            schema = tool.get("input_schema")
        answer = self.answer(body)
        value = answer_object(answer, schema)
        text = _render(value, spaced=False)
        needed = count_tokens(text)
        thought = (
            0 if budget is None else min(budget, self.thinks if self.thinks is not None else budget)
        )
        content: list[dict[str, Any]] = []
        if budget is not None:
            content.append(
                {
                    "type": "thinking",
                    "thinking": "Let me read the task, then the code, line by line.",
                    "signature": "EqQBCgIYAhIM-wire-server-signature",
                }
            )
        stop = "tool_use" if tool is not None else "end_turn"
        if thought + needed > cap:
            stop = "max_tokens"
            room = max(cap - thought, 0)
            partial = "".join(_OPENAI_PIECES.findall(text)[:room])
            if partial and tool is None:
                content.append({"type": "text", "text": partial})
            output = cap
        else:
            output = thought + needed
            if tool is not None:
                content.append(
                    {
                        "type": "tool_use",
                        "id": f"toolu_wire{self._served}",
                        "name": tool["name"],
                        "input": value,
                    }
                )
            else:
                content.append({"type": "text", "text": text})
        self._served += 1
        prompt = str(body.get("system", "")) + json.dumps(body.get("messages", []))
        return {
            "id": f"msg_wire{self._served}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model", "")),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": count_tokens(prompt), "output_tokens": output},
        }

    @staticmethod
    def _thinking_budget(body: Mapping[str, Any], cap: int) -> int | None:
        thinking = body.get("thinking")
        if thinking is None or thinking.get("type") == "disabled":
            return None
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            raise _anthropic_error(
                400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if budget >= cap:
            raise _anthropic_error(
                400,
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                f"documentation at {_THINKING_DOCS}#max-tokens-and-context-window-size",
            )
        if body.get("temperature", 1) != 1:
            raise _anthropic_error(
                400,
                "`temperature` may only be set to 1 when thinking is enabled. Please consult "
                f"our documentation at {_THINKING_DOCS}#feature-compatibility",
            )
        return budget

    @staticmethod
    def _forced_tool(body: Mapping[str, Any], *, thinking: bool) -> dict[str, Any] | None:
        choice = body.get("tool_choice")
        tools = {t.get("name"): t for t in body.get("tools", []) if isinstance(t, dict)}
        if choice is None or choice.get("type") in ("auto", "none"):
            return None
        if thinking:
            raise _anthropic_error(
                400, "Thinking may not be enabled when tool_choice forces tool use."
            )
        if choice.get("type") == "any":
            return next(iter(tools.values()), None)
        tool = tools.get(choice.get("name"))
        if tool is None:
            raise _anthropic_error(
                400, f"tool_choice: tool {choice.get('name')!r} not found in tools"
            )
        return tool

    @staticmethod
    def _output_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
        config = body.get("output_config") or {}
        fmt = config.get("format")
        if fmt is None:
            return None
        schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
        if not isinstance(schema, dict):
            raise _anthropic_error(400, "output_config.format: a json_schema format needs a schema")
        for where, node in _objects(schema):
            if node.get("additionalProperties") is not False:
                raise _anthropic_error(
                    400,
                    f"output_config.format.schema{where}: For 'object' type, "
                    "'additionalProperties' must be explicitly set to false",
                )
        return schema


def _objects(schema: Mapping[str, Any], where: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    if schema.get("type") == "object":
        yield where, schema
        for key, spec in schema.get("properties", {}).items():
            if isinstance(spec, dict):
                yield from _objects(spec, f"{where}.properties.{key}")
