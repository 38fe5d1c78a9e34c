"""The simulated vendor's server: :class:`VendorServer`, its lifecycle (a daemon thread
running its own asyncio loop) and its routes.

It owns the configuration checks, the state shared with the server thread
(:class:`~._state.VendorState`) and the provider batches
(:class:`~._batch_endpoints.BatchEndpoints`), and routes each request: chat and Messages
to :mod:`._chat_endpoints`, batches and files to :mod:`._batch_endpoints`, the models and
stats endpoints here. How a persona answers is :mod:`._answers` and :mod:`._decisions`;
this module decides nothing itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio.to_thread
from aiohttp import web

from ._batch_endpoints import BatchEndpoints
from ._batches import batch_route
from ._chat_endpoints import serve_chat
from ._decisions import (
    check_difficulty,
    checked_better,
    checked_pair_better,
    extract_item,
    item_key,
)
from ._features import checked_refuses
from ._personas import Persona
from ._protocol import (
    api_error_response,
    error_response,
    is_authorized,
    json_response,
    unauthorized,
)
from ._replies import Reply
from ._rubrics import (
    CRITERIA_LABELS,
    checked_criteria,
    checked_criteria_gold,
    checked_criteria_labels,
)
from ._state import VendorState
from ._strengths import checked_strengths, checked_tie_rate, tie_parameter

__all__ = ["VendorServer"]

_START_TIMEOUT_S = 10.0
_JOIN_TIMEOUT_S = 5.0
# Handlers are cancelled before the runner shuts down, so this is only a backstop.
_SHUTDOWN_TIMEOUT_S = 1.0
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MESSAGES_PATHS = frozenset({"/v1/messages", "/messages"})
_RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})


_MAX_BODY_BYTES = 300 * 1024 * 1024
"""The largest request body the simulator reads: above both vendors' batch limits."""


class _CountingServer(web.Server):
    """aiohttp's low-level server, counting the TCP connections it accepts."""

    def __init__(self, *args: Any, on_connection: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_connection = on_connection

    def connection_made(self, handler: web.RequestHandler, transport: asyncio.Transport) -> None:
        self._on_connection()
        super().connection_made(handler, transport)

    def _make_request(
        self,
        message: Any,
        payload: Any,
        protocol: Any,
        writer: Any,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        # aiohttp caps a body at 1 MiB; a batch upload may be 200 MB (OpenAI) or 256 MB
        # (Anthropic), and the vendors' own limits are checked by the handlers.
        return web.BaseRequest(
            message, payload, protocol, writer, task, self._loop, client_max_size=_MAX_BODY_BYTES
        )


def _check_persona_criteria(persona: Persona, criteria: Mapping[str, str]) -> None:
    """``ValueError`` when ``persona.criteria_accuracy`` names a criterion not in
    ``criteria`` (a typo would silently answer at ``accuracy``); nothing when the server
    has no criteria (the persona is never asked about one)."""
    if not criteria or not persona.criteria_accuracy:
        return
    unknown = sorted(set(persona.criteria_accuracy) - set(criteria))
    if unknown:
        raise ValueError(
            f"Persona {persona.model!r} has criteria_accuracy for {unknown}, not among the "
            f"server's criteria {sorted(criteria)}; fix the ids or add them to criteria"
        )


class _Run:
    """State of one start()..stop() cycle, so a restart never sees stale objects."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.stop_requested = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_event: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.port = 0
        self.thread: threading.Thread | None = None
        # Handler tasks, touched only on the server loop; cancelled by stop().
        self.tasks: set[asyncio.Task[Any]] = set()


class VendorServer:
    """A simulated LLM vendor on a loopback address, served from a thread.

    Endpoints: ``POST /v1/chat/completions`` (and ``/chat/completions``), the OpenAI
    protocol; ``POST /v1/messages`` (and ``/messages``), the Anthropic Messages API;
    ``POST /v1/responses`` (and ``/responses``), OpenAI's Responses API
    (:mod:`~cross_judge.testing._responses`);
    ``GET /v1/models``, ``GET /stats``, ``POST /stats/reset``; and the provider batch
    endpoints described below. With ``api_key`` set, the
    first three require it (else 401): chat completions and models as
    ``Authorization: Bearer <api_key>``, messages as ``x-api-key: <api_key>`` (or, as the
    Anthropic API also accepts, the bearer header). The stats endpoints never do.

    Both protocols share the personas, scripts, counters and item counts; every answer
    and error is written in the protocol of its request. A Messages request also needs
    an integer ``max_tokens`` >= 1 (else 400, before step 1), and one sent with
    ``anthropic-version: 2026-10-21`` or later gets a 400 for any of ``temperature``,
    ``top_p`` or ``top_k``, as the Anthropic API answers. Its answer is a ``message``
    with one text block, ``stop_reason`` ``"end_turn"`` and ``usage.input_tokens`` /
    ``output_tokens``; the system prompt (``system``) counts as prompt.

    How a chat or Messages request is answered, first match wins:

    1. a reply queued by :meth:`script` for its model, then one queued for ``"*"``;
    2. the :meth:`always` reply for its model, then the one for ``"*"``;
    3. the persona with that model name, else ``default_persona`` (which then seeds its
       RNG with the *requested* model name, so each unknown model is an independent
       critic);
    4. else 404 ``model_not_found``.

    A body that is not a JSON object, or lacks ``model``, gets 400 (before step 1), and
    so does a persona request without a ``messages`` list.

    The item is the text in the last ``<item>...</item>`` fence of the last user message,
    else that whole message (both stripped). Its truth is its gold label (an exact key,
    or, while the gold map has at most 256 entries, the first key in insertion order
    that occurs in the user message), else a label picked from the persona's labels by
    sha256 of the item text, so personas sharing a vocabulary agree on a latent truth.

    Correlated errors: with ``error_correlation`` rho in (0, 1) an item's difficulty d
    (set by ``difficulty`` or :meth:`set_difficulty`, else uniform in (0, 1) from sha256
    of ``difficulty_seed`` and the item; see :meth:`difficulty_of`) moves every persona
    the same way: with ``D = Phi^-1(d)`` and ``c = Phi^-1(1 - accuracy)``, a persona is
    right with probability ``Phi((-c - sqrt(rho) D) / sqrt(1 - rho))``, which averages
    to ``accuracy`` over uniform difficulties (a Gaussian threshold model: two personas'
    latent scores correlate by rho). A wrong persona then answers the item's distractor
    (a wrong label picked by sha256 of ``difficulty_seed`` and the item, shared by
    personas with the same vocabulary) with probability rho, else its usual wrong label.
    Accuracy 0 or 1 stays always wrong or always right. With rho 0 (the default)
    difficulty is unused and every persona errs independently.

    Pairwise requests (position bias): a last user message holding an ``<item>`` fence,
    then ``<response_a>`` and ``<response_b>`` fences, as the packaged ``pairwise``
    prompt renders them, is judged by content when its query (the ``<item>`` text,
    stripped) has an entry in ``better`` (or :meth:`set_better`): the better candidate's
    text, or ``None`` for a tie; or when the pair itself has one in ``pair_better`` (for
    a query shared by several pairs: one entry per pair, winning over the query's).
    Candidate texts are stripped before comparing. The truth in the order shown is
    ``"A"`` when the better text is in ``<response_a>``, ``"B"`` when in
    ``<response_b>``, ``"TIE"`` for a tie or two identical candidates; the persona
    answers it with probability ``accuracy`` and is otherwise unsure, answering ``"A"``
    with probability ``Persona.position_bias``, else a label other than the truth,
    uniformly (see :func:`pairwise_rates`). The draws are seeded with ``(seed, model,
    sha256 of the query and the candidates in the order shown)``, so the two orders of a
    pair are independent and a repeated request gets the same answer. Error correlation,
    difficulty, gold labels, ``Persona.labels`` and ``bias`` do not apply to them;
    faults, latency, confidence and styles do. A pairwise request with no entry in
    ``pair_better`` whose query has no ``better`` entry, or whose candidates both differ
    from the better text, is answered like any other request (its item is the
    ``<item>`` text, truth by gold or by sha256): as before position bias existed, which
    gives both orders the same label, so such a simulation cannot tell a position-biased
    judge from a fair one.

    Latent strengths (ranking many candidates): with ``strengths`` (candidate text ->
    strength ``s``, a log-worth) a pairwise request with no ``pair_better`` or ``better``
    entry whose two candidate texts (stripped) both have a strength is judged by
    Bradley-Terry noise. With ``p = e^s`` and Davidson's tie parameter
    ``nu = 2 tie_rate / (1 - tie_rate)`` (so ``tie_rate`` is the chance of a tie between
    equal strengths; 0 gives plain Bradley-Terry, no ties), the candidate shown first is
    better with probability ``p_first / D``, the second with ``p_second / D`` and they tie
    with ``nu sqrt(p_first p_second) / D``, ``D = p_first + p_second + nu sqrt(p_first
    p_second)`` (:func:`~._strengths.bradley_terry_probabilities`); two identical texts
    always tie. That draw is the pair's truth in the order shown, and the persona answers
    it as above: the truth with probability ``accuracy``, else unsure (``"A"`` with
    probability ``position_bias``, else a label other than the drawn truth, uniformly;
    :func:`~._strengths.strength_rates` gives the resulting rates). The latent draw has its
    own stream, seeded with ``("strength", seed, model, sha256 of the query and the
    candidates in the order shown)`` plus the resample draw, so each persona, pair, order
    and resample draw is an independent, reproducible Bradley-Terry observation.
    Strengths are keyed by text alone: a candidate has the same strength in every query
    (the arena case: one model's answers to many queries are different texts, each given
    that model's strength). A pair with a candidate without strength is answered as
    before strengths existed.

    Rubrics: with ``criteria`` (criterion id -> requirement text), a request whose last
    user message holds ``- <id>: <requirement>`` lines of configured criteria is a
    ``one_call`` rubric request about those criteria (in the order shown); else one that
    holds a configured requirement text is a ``per_criterion`` request about it (the
    longest requirement found). Each (item, criterion) is its own draw, seeded with
    ``(seed, model, sha256 of the item and the criterion id)``, so a criterion gets the
    same answer in either mode. Its truth is its label in ``criteria_gold`` (the item
    found as for ``gold``), else a label of ``criteria_labels`` picked by that digest,
    shared by personas; the persona is right with ``Persona.accuracy_for(id)`` and,
    when wrong, answers a label of ``criteria_labels`` other than the truth, uniformly
    (``bias`` does not apply; on an ordinal scale a near miss is as likely as a far one).
    With ``error_correlation`` rho > 0 each (item, criterion) has its own difficulty and
    distractor (seeded by ``difficulty_seed``, the item and the id; ``difficulty`` and
    :meth:`set_difficulty` apply to whole-item verdicts only), so personas are wrong
    together on the hard criteria of an item. A ``per_criterion`` request is answered as
    any verdict is (style, schema, tool, logprobs over the scale); a ``one_call`` one
    ``{"criteria": {id: {"kind", "confidence", "reasoning"}}}`` for exactly the criteria
    asked, in the persona's style, or shaped by an enforced schema or a forced tool's
    (:func:`~._rubrics.criteria_object`). Faults, latency, ``resample`` (counted per
    request: per criterion, or per set asked) and ``thinking_tokens`` apply per request.
    A pairwise request judged by content is never a rubric request.

    Content: a persona's content rules (``Persona.forbidden_tools``,
    ``fail_unhandled_errors``, ``needs_context``, ``vision``) read the last user message
    as cross-judge renders a conversation or trajectory, and the request's images, and
    set the truth of a whole-item verdict from what they show (see :class:`Persona`).
    Image parts are read in each protocol: chat ``{"type": "image_url", "image_url":
    {"url": "data:..."}}``, Messages ``{"type": "image", "source": {"type": "base64" |
    "url", ...}}``, Responses ``{"type": "input_image", "image_url": "data:..."}``; a URL
    image is never fetched (it carries no truth). A persona with ``vision="refuses"`` is a
    text-only model: a request holding an image part gets a 400 (chat: ``Invalid content
    type. image_url is only supported by certain models.`` with ``param`` the part's
    ``type``; Responses the same naming ``input_image``; Messages an
    ``invalid_request_error`` naming the block), after scripted replies and before the
    persona answers, live and in batches. With ``max_request_bytes`` a live request whose
    body is larger is refused before it is read or recorded: Messages with 413
    ``request_too_large`` (as Anthropic's front end answers above 32 MB), chat and
    Responses with a 400 ``invalid_request_error`` (code ``request_too_large``).

    Determinism: a persona's answer, confidence, reasoning and jitter come from
    ``random.Random`` seeded with ``(seed, model, sha256(item))``: the same request gets
    the same answer every time (unless its persona has ``resample=True``: then the
    ``k``-th answer for an item at temperature > 0 adds ``k`` to the seed); with
    ``error_correlation`` 0 the draws are those of versions without it, so answers are
    unchanged. The fault decision of ``fault_rate``
    uses a separate stream seeded with ``(seed, model, sha256(item), n)`` where ``n``
    counts that model's requests for that item (never reset; for a pairwise request the
    pair's digest stands for ``sha256(item)``), so a retry of a faulted request may
    succeed and a rerun against a fresh server faults on the same attempts.

    Request features (after the 400s above and before step 1): an enforced answer
    schema (chat ``response_format`` ``json_schema`` or llama.cpp's ``json_object`` +
    ``schema``; Messages ``output_config.format``) gets strict JSON with exactly the
    schema's properties whatever the persona's style, and a forced tool (Messages
    ``tool_choice: {"type": "tool", "name"}``) a ``tool_use`` block with
    ``stop_reason: "tool_use"`` (:mod:`._structured`); ``logprobs: true`` gets
    ``choices[0].logprobs`` with a known calibration (``Persona.logprob_temperature``);
    reasoning fields get reasoning text and tokens (``Persona.thinking_tokens``), and an
    output cap below reasoning plus answer cuts a reasoning reply with finish reason ``length``
    / stop reason ``max_tokens``. ``refuses`` makes the server refuse features as real
    servers do (:func:`~._features.refused_feature`). ``docs/testing.md`` shows every
    shape.

    Provider batches (half-price, asynchronous): OpenAI's Files and Batch API
    (``POST /v1/files`` with ``purpose=batch`` and a JSONL ``file``; ``POST /v1/batches``;
    ``GET /v1/batches/{id}``; ``POST /v1/batches/{id}/cancel``; ``GET /v1/files/{id}``
    and ``/content``) and Anthropic's Message Batches (``POST /v1/messages/batches``;
    ``GET /v1/messages/batches/{id}``; ``POST .../{id}/cancel``; ``GET .../{id}/results``),
    each also without ``/v1``, with the same auth as the live endpoints. Each request in a
    batch is answered exactly as the live endpoint answers the same body (same persona
    draw, text and usage, an error status included: an unknown model is a 404, a Messages
    body without ``max_tokens`` a 400), except that scripted replies (:meth:`script`,
    :meth:`always`), ``Persona.fault_rate`` faults (a vendor retries those inside a
    batch; the fault attempt counters do not move), latency and ``capacity`` do not
    apply. They count in :meth:`item_requests` and use up ``resample`` draws like live
    requests.

    Timing is counted in polls, never in seconds: a batch ends on its ``batch_polls``-th
    status poll (``GET`` of the batch) after creation, at once with 0 (the create
    response shows it ended); :meth:`complete_batches` ends all now. Answers are computed
    when it ends. An OpenAI batch reads ``"validating"`` until its first poll, then
    ``"in_progress"``, then ``"completed"``: answered requests in the output file
    (``{"id", "custom_id", "response": {"status_code": 200, "request_id", "body"},
    "error": null}``), the others in the error file (a non-200 ``response`` whose body is
    the error, or ``"response": null`` with ``"error": {"code": "batch_expired" |
    "batch_cancelled", "message"}``); a file id is ``null`` when it would be empty. A
    batch whose input file is invalid (see :func:`openai_batch_errors`: one model per
    file, unique ``custom_id``...) is created, then ``"failed"`` on its first poll with
    ``errors.data`` of ``{"code", "message", "param", "line"}``, as the API reports it.
    An Anthropic batch reads ``"in_progress"`` then ``"ended"`` with a ``results_url``;
    a create request with a bad or duplicate ``custom_id`` gets a 400.

    Failures: ``batch_failure_rate`` / ``batch_expiry_rate`` fail (HTTP 500) or expire
    each request with a draw seeded by (batch id, ``custom_id``), batch ids being
    counters per server; :meth:`fail_batch_request` and :meth:`expire_batch_request`
    script the next request with a ``custom_id``; :meth:`expire_batch` expires a whole
    batch. An OpenAI batch holding an expired request ends ``"expired"`` (expiry is a
    batch event there); an Anthropic one ends ``"ended"`` with ``expired`` results.
    Cancelling makes it ``"cancelling"``/``"canceling"``; the next poll ends it with every
    request cancelled. Cancelling an ended batch, or reading an Anthropic batch's results
    before it ends, gets a 400; downloading an uploaded (``purpose=batch``) file gets a
    400, as the API refuses it.

    Every mutator is thread-safe. The server is started by :meth:`start`, ``with`` or
    ``async with``, and must be stopped (the context managers do it).
    """

    def __init__(
        self,
        personas: Iterable[Persona] = (),
        *,
        gold: Mapping[Any, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        default_persona: Persona | None = None,
        capacity: int | None = None,
        count_items: bool = False,
        error_correlation: float = 0.0,
        difficulty: Mapping[Any, float] | None = None,
        difficulty_seed: int = 0,
        better: Mapping[str, str | None] | None = None,
        pair_better: Mapping[tuple[str, str, str], str | None] | None = None,
        batch_polls: int = 1,
        batch_failure_rate: float = 0.0,
        batch_expiry_rate: float = 0.0,
        refuses: Iterable[str] = (),
        criteria: Mapping[str, str] | None = None,
        criteria_gold: Mapping[str, Mapping[str, str]] | None = None,
        criteria_labels: Sequence[str] = CRITERIA_LABELS,
        strengths: Mapping[str, float] | None = None,
        tie_rate: float = 0.0,
        max_request_bytes: int | None = None,
    ) -> None:
        """Configure the server; nothing listens until :meth:`start`.

        ``host`` must be a loopback address (``127.x.x.x``, ``::1`` or ``"localhost"``,
        which binds ``127.0.0.1``); ``port=0`` picks a free port. Duplicate persona
        model names raise ``ValueError``. Gold keys are stripped, like item text; a key of
        ``gold`` or ``difficulty`` may be a :class:`cross_judge.Item` instead of its text (its
        query is the key).

        ``capacity`` simulates a vendor's concurrency limit the way DeepSeek enforces it:
        a chat request arriving while ``capacity`` requests are already being answered gets
        an immediate 429 with an error body and no ``Retry-After`` or rate-limit headers
        (counted in ``stats()["rate_limited"]``). ``count_items`` keeps a count of chat
        requests per item text, read with :meth:`item_requests` (memory grows with the
        number of distinct items, so it is off by default).

        ``error_correlation`` (in [0, 1), else ``ValueError``) makes personas' errors
        correlated through per-item difficulty (see the class docstring); ``difficulty``
        maps item texts (stripped) to difficulties in [0, 1] (else ``ValueError``), and
        ``difficulty_seed`` picks the difficulties and distractors of the other items.

        ``better`` maps pairwise queries to the better candidate's text, or ``None`` for a
        tie (see the class docstring); keys and texts are stripped, and a value that is
        neither a string nor ``None`` raises ``ValueError``. ``pair_better`` does the same
        for one pair, for a query shared by several pairs: it maps ``(query, candidate,
        candidate)`` (the candidates in either order) to the better candidate's text, or
        ``None`` for a tie, and wins over ``better`` for that pair; a better text that is
        neither candidate raises ``ValueError``.

        ``batch_polls`` (an int >= 0) is how many status polls a provider batch takes to
        end; ``batch_failure_rate`` and ``batch_expiry_rate`` (probabilities summing to at
        most 1) make requests in a batch fail or expire (see "Provider batches" in the
        class docstring). ``refuses`` names request features the server refuses as real
        servers do (see "Request features" in the class docstring): ``"json_schema"``,
        ``"json_schema_500"``, ``"json_object"``, ``"logprobs"`` (chat), ``"tools"``,
        ``"output_format"`` (Messages). Invalid values raise ``ValueError``.

        ``criteria`` (criterion id -> requirement text, as the rubric prompt shows it),
        ``criteria_gold`` (item text -> {criterion id: true label}) and
        ``criteria_labels`` (the rubric's scale, default ``("PASS", "FAIL")``) make it
        answer rubric requests (see "Rubrics" in the class docstring). An empty id or
        requirement, two criteria sharing a requirement, fewer than two labels,
        ``criteria_gold`` without ``criteria``, naming an unknown criterion or a label off
        the scale, and a persona's ``criteria_accuracy`` naming an unknown criterion raise
        ``ValueError``.

        ``strengths`` maps candidate texts (stripped) to latent strengths (finite numbers,
        log-worths) and ``tie_rate`` (in [0, 1)) is the chance of a tie between equally
        strong candidates: pairs whose candidates both have one are judged by Davidson's
        Bradley-Terry model (see "Latent strengths" in the class docstring). A strength that
        is not a finite number, two keys stripping to one text with different strengths, a
        ``tie_rate`` outside [0, 1) or above 0 with no strengths raise ``ValueError``.

        ``max_request_bytes`` (an int >= 1, or ``None``: no limit) is the vendor's request
        size limit: a live chat, Messages or Responses request whose body is larger gets
        the vendor's error before it is read (see "Content" in the class docstring).
        """
        refused = checked_refuses(refuses)
        latent_strengths = checked_strengths(strengths)
        checked_ties = checked_tie_rate(tie_rate, bool(latent_strengths))
        rubric_criteria = checked_criteria(criteria)
        rubric_labels = checked_criteria_labels(criteria_labels)
        rubric_gold = checked_criteria_gold(criteria_gold, rubric_criteria, rubric_labels)
        if max_request_bytes is not None and (
            isinstance(max_request_bytes, bool)
            or not isinstance(max_request_bytes, int)
            or max_request_bytes < 1
        ):
            raise ValueError(
                "max_request_bytes must be an int >= 1 (the vendor's request size limit, e.g. "
                f"32_000_000 for Anthropic's 32 MB) or None, got {max_request_bytes!r}"
            )
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be >= 1 or None, got {capacity!r}")
        if not (isinstance(error_correlation, (int, float)) and 0.0 <= error_correlation < 1.0):
            raise ValueError(
                f"error_correlation must be a number in [0, 1), got {error_correlation!r}; "
                "0 makes personas err independently, values near 1 make them err together"
            )
        if isinstance(batch_polls, bool) or not isinstance(batch_polls, int) or batch_polls < 0:
            raise ValueError(f"batch_polls must be an int >= 0, got {batch_polls!r}")
        for name, rate in (
            ("batch_failure_rate", batch_failure_rate),
            ("batch_expiry_rate", batch_expiry_rate),
        ):
            if not (isinstance(rate, (int, float)) and 0.0 <= rate <= 1.0):
                raise ValueError(f"{name} must be a probability in [0, 1], got {rate!r}")
        if batch_failure_rate + batch_expiry_rate > 1.0:
            raise ValueError(
                "batch_failure_rate + batch_expiry_rate must be at most 1, got "
                f"{batch_failure_rate!r} + {batch_expiry_rate!r}"
            )
        if host == "localhost":
            host = "127.0.0.1"
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"VendorServer only listens on a loopback address, got host={host!r}; "
                "use '127.0.0.1', '::1' or 'localhost'"
            )
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535 (0 picks a free port), got {port!r}")
        self._host = host
        self._requested_port = port
        self._lifecycle = threading.Lock()  # serialises start() / stop()
        personas_by_model: dict[str, Persona] = {}
        for persona in personas:
            if persona.model in personas_by_model:
                raise ValueError(
                    f"two personas share model {persona.model!r}; give each a distinct model"
                )
            personas_by_model[persona.model] = persona
        for persona in [
            *personas_by_model.values(),
            *([default_persona] if default_persona else []),
        ]:
            _check_persona_criteria(persona, rubric_criteria)
        gold_labels = {item_key(item): label for item, label in (gold or {}).items()}
        difficulties: dict[str, float] = {}
        for item, value in (difficulty or {}).items():
            key = item_key(item)
            check_difficulty(key, value)
            difficulties[key] = float(value)
        better_texts = {
            query.strip(): checked_better(query, text) for query, text in (better or {}).items()
        }
        pair_texts = dict(
            checked_pair_better(key, text) for key, text in (pair_better or {}).items()
        )
        self._state = VendorState(
            personas=personas_by_model,
            default_persona=default_persona,
            gold=gold_labels,
            difficulty=difficulties,
            difficulty_seed=difficulty_seed,
            error_correlation=float(error_correlation),
            better=better_texts,
            pair_better=pair_texts,
            api_key=api_key,
            capacity=capacity,
            count_items=count_items,
            refuses=refused,
            criteria=rubric_criteria,
            criteria_gold=rubric_gold,
            criteria_labels=rubric_labels,
            strengths=latent_strengths,
            tie_parameter=tie_parameter(checked_ties),
            max_request_bytes=max_request_bytes,
        )
        self._batch_endpoints = BatchEndpoints(
            self._state,
            polls=batch_polls,
            failure_rate=float(batch_failure_rate),
            expiry_rate=float(batch_expiry_rate),
        )
        self._run: _Run | None = None
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> VendorServer:
        """Start serving in a daemon thread and return once listening; returns ``self``.

        Idempotent while running; a stopped server can be started again (with
        ``port=0`` it may get a different port). Raises ``RuntimeError`` if it is not
        listening within 10 s or cannot bind (the cause is chained).
        """
        with self._lifecycle:
            if self._run is not None and self._run.thread and self._run.thread.is_alive():
                return self
            run = _Run()
            thread = threading.Thread(
                target=self._thread_main,
                args=(run,),
                name=f"cross-judge-vendor-server-{id(self):x}",
                daemon=True,
            )
            run.thread = thread
            thread.start()
            if not run.ready.wait(_START_TIMEOUT_S):
                self._request_stop(run)
                thread.join(_JOIN_TIMEOUT_S)
                raise RuntimeError(
                    f"VendorServer did not start listening within {_START_TIMEOUT_S:g} s"
                )
            if run.error is not None:
                thread.join(_JOIN_TIMEOUT_S)
                raise RuntimeError(
                    f"VendorServer could not listen on {self._host}:{self._requested_port}: "
                    f"{run.error}"
                ) from run.error
            self._run = run
            self._port = run.port
        return self

    def stop(self) -> None:
        """Stop serving; idempotent.

        Open requests (hanging or sleeping) are cancelled at once and their clients see
        the connection close; then the socket is closed and the thread joined (at most
        5 s; the thread is a daemon either way).
        """
        with self._lifecycle:
            run, self._run = self._run, None
            if run is None or run.thread is None:
                return
            self._request_stop(run)
            if run.thread is not threading.current_thread():
                run.thread.join(_JOIN_TIMEOUT_S)

    def _request_stop(self, run: _Run) -> None:
        # Under self._state.lock, like the publication in _serve, so a stop that races the
        # startup is never lost.
        with self._state.lock:
            run.stop_requested = True
            loop, event = run.loop, run.stop_event
        if loop is not None and event is not None:
            # RuntimeError: the loop already closed, so there is nothing left to stop.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def _thread_main(self, run: _Run) -> None:
        try:
            asyncio.run(self._serve(run))
        except BaseException as exc:  # reported to start(); a thread must not raise
            run.error = exc
        finally:
            run.ready.set()

    async def _serve(self, run: _Run) -> None:
        loop = asyncio.get_running_loop()
        stop_event = asyncio.Event()
        server = _CountingServer(
            functools.partial(self._handle, run),
            on_connection=self._count_connection,
            # Cancel a handler when its client goes away, so hangs and sleeps do not
            # pile up and in_flight stays true.
            handler_cancellation=True,
            access_log=None,  # logging every request would dominate benchmark overhead
        )
        runner = web.ServerRunner(server, shutdown_timeout=_SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._requested_port, backlog=2048)
            await site.start()
            run.port = int(runner.addresses[0][1])
            with self._state.lock:
                run.loop, run.stop_event = loop, stop_event
                if run.stop_requested:
                    stop_event.set()
            run.ready.set()
            await stop_event.wait()
            for task in list(run.tasks):
                task.cancel()
        finally:
            await runner.cleanup()

    def __enter__(self) -> VendorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> VendorServer:
        # In a worker thread: start() blocks until the server thread is listening.
        await anyio.to_thread.run_sync(self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await anyio.to_thread.run_sync(self.stop)

    @property
    def port(self) -> int:
        """The port it is (or was last) listening on; ``RuntimeError`` before start()."""
        if self._port is None:
            raise RuntimeError("VendorServer has not been started; call start() or use `with`")
        return self._port

    @property
    def url(self) -> str:
        """The base URL for an OpenAI-compatible client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.anthropic_url}/v1"

    @property
    def anthropic_url(self) -> str:
        """The base URL for an Anthropic client, e.g. ``http://127.0.0.1:PORT``: the
        ``anthropic`` SDK, and a cross-judge critic with ``vendor="anthropic"``, append
        ``/v1/messages`` to it."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}"

    # -- configuration -----------------------------------------------------------------

    def add_persona(self, persona: Persona) -> None:
        """Serve ``persona`` under its model name, replacing any persona with that name;
        ``ValueError`` when its ``criteria_accuracy`` names a criterion the server lacks."""
        _check_persona_criteria(persona, self._state.criteria)
        with self._state.lock:
            self._state.personas[persona.model] = persona

    def set_gold(self, item_text: Any, label: str) -> None:
        """Set the truth of an item: its text (stripped, like extracted item text) or a
        :class:`cross_judge.Item` (its query)."""
        with self._state.lock:
            self._state.gold[item_key(item_text)] = label

    def set_better(
        self,
        query_text: str,
        better_text: str | None,
        *,
        candidates: tuple[str, str] | None = None,
    ) -> None:
        """Set which candidate is better for a pairwise query: its text, or ``None`` for
        a tie (see the class docstring). Both texts are stripped, like extracted ones; a
        ``better_text`` that is neither a string nor ``None`` raises ``ValueError``.

        With ``candidates`` (the pair's two texts, in either order) it is set for that
        pair only, as ``pair_better`` does, and ``better_text`` must be one of them (or
        ``None``), else ``ValueError``."""
        if candidates is not None:
            key, text = checked_pair_better((query_text, *candidates), better_text)
            with self._state.lock:
                self._state.pair_better[key] = text
            return
        text = checked_better(query_text, better_text)
        with self._state.lock:
            self._state.better[query_text.strip()] = text

    def strength_of(self, candidate_text: str) -> float | None:
        """The latent strength of a candidate (its text stripped, as requests are read),
        ``None`` when it has none; the same for every query it answers."""
        return self._state.strengths.get(candidate_text.strip())

    def set_difficulty(self, item_text: str, difficulty: float) -> None:
        """Set the difficulty of an item, in [0, 1] (else ``ValueError``); its text is
        stripped, like extracted item text. It matters only with ``error_correlation`` > 0."""
        check_difficulty(item_text, difficulty)
        with self._state.lock:
            self._state.difficulty[item_text.strip()] = float(difficulty)

    def difficulty_of(self, item_text: str) -> float:
        """The difficulty a request whose last user message is ``item_text`` gets.

        The item is found as for a request (the last ``<item>`` fence, else the whole
        text, stripped); its difficulty is the one set for it (an exact key, or, while at
        most 256 are set, the first key in insertion order that occurs in ``item_text``),
        else a number uniform in (0, 1) from sha256 of ``difficulty_seed`` and the item.
        Set values are returned as set, 0 and 1 included.
        """
        with self._state.lock:
            return self._state.difficulty_locked(extract_item(item_text), item_text)

    def script(self, model: str, *replies: Reply) -> None:
        """Queue one-shot replies for ``model`` (``"*"``: any model), consumed FIFO.

        Queued replies come before :meth:`always` and before the persona; a model's own
        queue is consumed before the ``"*"`` queue. The model needs no persona.
        """
        with self._state.lock:
            self._state.scripts.setdefault(model, deque()).extend(replies)

    def always(self, model: str, reply: Reply | None) -> None:
        """Answer every request for ``model`` (``"*"``: any) with ``reply``; ``None`` clears."""
        with self._state.lock:
            if reply is None:
                self._state.always.pop(model, None)
            else:
                self._state.always[model] = reply

    # -- provider batches --------------------------------------------------------------

    def complete_batches(self) -> list[str]:
        """End every batch that has not ended, now, as its next due poll would; returns
        their ids in creation order.

        A pending batch completes (OpenAI ``"completed"``, or ``"expired"`` when any of
        its requests expired; ``"failed"`` when its input file is invalid; Anthropic
        ``"ended"``), a cancelling one is cancelled.
        """
        return self._batch_endpoints.complete_all()

    def expire_batch(self, batch_id: str) -> None:
        """End batch ``batch_id`` now with every request expired, as when its 24 h window
        passes: OpenAI status ``"expired"`` with each request in the error file
        (``batch_expired``), Anthropic ``"ended"`` with each result ``expired``.

        Raises ``KeyError`` for an unknown id and ``ValueError`` for a batch that ended.
        """
        self._batch_endpoints.expire(batch_id)

    def fail_batch_request(
        self, custom_id: str, *, status: int = 500, message: str | None = None
    ) -> None:
        """Make the next batch request with ``custom_id`` (either protocol) fail with HTTP
        ``status`` (400-599) instead of being answered; one-shot, queued FIFO with
        :meth:`expire_batch_request`.

        OpenAI: an error-file line whose ``response`` has that status and an error body;
        Anthropic: an ``errored`` result whose error type follows the status (500
        ``api_error``, 529 ``overloaded_error``, 400 ``invalid_request_error``, ...).
        """
        if not 400 <= status <= 599:
            raise ValueError(f"status must be in 400..599, got {status!r}")
        with self._state.lock:
            self._state.scripted_batch.setdefault(custom_id, deque()).append(
                ("failed", status, message)
            )

    def expire_batch_request(self, custom_id: str) -> None:
        """Make the next batch request with ``custom_id`` expire unanswered; one-shot. An
        OpenAI batch holding an expired request ends ``"expired"``."""
        with self._state.lock:
            self._state.scripted_batch.setdefault(custom_id, deque()).append(("expired", 0, None))

    # -- observation -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counters since start or :meth:`reset_stats` (a snapshot copy).

        ``requests`` and ``by_model`` count chat-completion and Messages requests
        (including rejected ones), ``connections`` the TCP connections accepted, ``faults``
        the random faults injected by ``Persona.fault_rate`` (not scripted errors) and
        ``faults_by_kind`` the same per kind (``"429"``, ``"500"``, ``"503"``,
        ``"malformed"``: a truncated 200),
        ``rate_limited`` the 429s sent because ``capacity`` was full, ``refusals`` the
        requests refused for a feature named in ``refuses`` and ``refusals_by_feature``
        the same per name, and ``max_in_flight``
        the most requests being answered at once (those refused by ``capacity`` never count
        as being answered).

        Provider batches are counted apart (none of their calls is in ``requests``,
        ``by_model`` or ``max_in_flight``): ``files_uploaded`` the files accepted by
        ``POST /v1/files``, ``batches`` and ``batch_requests`` the batches created and the
        requests they hold, each as ``{"openai": n, "anthropic": n}``, and
        ``batch_polls`` the status polls (``GET`` of a batch, either protocol).

        Content: ``images`` the image parts of live requests (answered or refused),
        ``images_refused`` the requests (live or in a batch) a text-only persona
        (``vision="refuses"``) refused for holding one, ``too_large`` the live requests
        refused for exceeding ``max_request_bytes``.
        """
        with self._state.lock:
            return {
                "requests": self._state.requests,
                "by_model": dict(self._state.by_model),
                "in_flight": self._state.in_flight,
                "max_in_flight": self._state.max_in_flight,
                "connections": self._state.connections,
                "faults": self._state.faults,
                "faults_by_kind": dict(self._state.fault_kinds),
                "rate_limited": self._state.rate_limited,
                "refusals": sum(self._state.refusals.values()),
                "refusals_by_feature": dict(self._state.refusals),
                "files_uploaded": self._state.files_uploaded,
                "batches": {p: self._state.batches_created[p] for p in ("openai", "anthropic")},
                "batch_requests": {
                    p: self._state.batch_requests[p] for p in ("openai", "anthropic")
                },
                "batch_polls": self._state.batch_status_polls,
                "images": self._state.images_seen,
                "images_refused": self._state.images_refused,
                "too_large": self._state.too_large,
            }

    def item_requests(self) -> dict[str, int]:
        """Chat and Messages requests answered by a persona, per item text (the fenced item,
        as personas see it), since start or :meth:`reset_stats`; retries count. Needs
        ``count_items=True``; ``RuntimeError`` otherwise."""
        with self._state.lock:
            if self._state.item_counts is None:
                raise RuntimeError("construct VendorServer(count_items=True) to count items")
            return dict(self._state.item_counts)

    def reset_stats(self) -> None:
        """Zero the counters and forget :attr:`recent_requests`.

        ``in_flight`` is live and kept; ``max_in_flight`` restarts from it. Scripts,
        ``always`` replies and the fault attempt counters are untouched.
        """
        with self._state.lock:
            self._state.requests = 0
            self._state.by_model.clear()
            self._state.max_in_flight = self._state.in_flight
            self._state.connections = 0
            self._state.faults = 0
            self._state.fault_kinds.clear()
            self._state.rate_limited = 0
            self._state.refusals.clear()
            self._state.files_uploaded = 0
            self._state.batches_created.clear()
            self._state.batch_requests.clear()
            self._state.batch_status_polls = 0
            self._state.images_seen = 0
            self._state.images_refused = 0
            self._state.too_large = 0
            self._state.recent.clear()
            if self._state.item_counts is not None:
                self._state.item_counts.clear()

    @property
    def recent_requests(self) -> list[dict[str, Any]]:
        """The last 100 chat-completion and Messages requests, oldest first (``path``
        tells them apart).

        Each is ``{"model", "body", "headers", "path", "reasoning"}``: ``body`` is the
        parsed JSON (``None`` if it was not JSON), ``model`` its ``model`` field (or
        ``None``), ``reasoning`` the reasoning fields it sent, as sent (``{}``: none; chat
        ``reasoning_effort``, ``thinking``, ``enable_thinking``, ``thinking_budget``,
        ``reasoning``; Messages ``thinking``, ``output_config``);
        ``Authorization`` reads ``"Bearer ***"`` and ``x-api-key``/``api-key`` ``"***"``.
        """
        with self._state.lock:
            return [dict(entry) for entry in self._state.recent]

    def _count_connection(self) -> None:
        with self._state.lock:
            self._state.connections += 1

    # -- request handling (server thread) ----------------------------------------------

    async def _handle(self, run: _Run, request: web.BaseRequest) -> web.StreamResponse:
        path, method = request.path, request.method
        if path in _CHAT_PATHS:
            if method != "POST":
                return error_response(405, f"Use POST for {path}")
            return await serve_chat(self._state, run.tasks, request, "chat")
        if path in _RESPONSES_PATHS:
            if method != "POST":
                return error_response(405, f"Use POST for {path}")
            return await serve_chat(self._state, run.tasks, request, "chat", responses=True)
        if path in _MESSAGES_PATHS:
            if method != "POST":
                return api_error_response("messages", 405, f"Use POST for {path}")
            return await serve_chat(self._state, run.tasks, request, "messages")
        if path in _MODELS_PATHS:
            if method != "GET":
                return error_response(405, f"Use GET for {path}")
            if not is_authorized(request, self._state.api_key, "chat"):
                return unauthorized("chat")
            with self._state.lock:
                models = list(self._state.personas)
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "cross-judge-testing"}
                for m in models
            ]
            return json_response({"object": "list", "data": data})
        route = batch_route(path)
        if route is not None:
            return await self._batch_endpoints.handle(request, route)
        if path == "/stats" and method == "GET":
            return json_response(self.stats())
        if path == "/stats/reset" and method == "POST":
            self.reset_stats()
            return json_response(self.stats())
        return error_response(404, f"Unknown endpoint: {method} {path}")
