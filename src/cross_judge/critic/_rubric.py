"""A critic judging with a rubric: the requests per criterion (or for all at once), the
schema and parsing of a ``one_call`` answer, and the critic's verdict over its criteria.

:class:`RubricPath` is the collaborator of :class:`~cross_judge.critic._critic.Critic` that
judges with a rubric, from the critic's frozen configuration, its request builder and the
function that judges one request (the critic's ``judge_request``). A rubric critic's requests
are ordinary requests, sent by the ordinary call path (retries, cache, budget, truncation
retry, structured output, provider batch mode):

* ``per_criterion``: one request per criterion, the template's ``{criterion}`` filled with
  its requirement (``{criterion_id}`` with its id); each answer is an ordinary verdict on
  the rubric's scale.
* ``one_call``: one request, ``{criteria}`` filled with ``- id: requirement`` lines of the
  criteria asked; the answer is ``{"criteria": {id: {"kind": ..., "confidence": ...,
  "reasoning": ...}}}`` (a vendor that takes a schema is sent one with every criterion
  asked required). Each criterion's object is read with the same rules as a whole answer
  (:func:`~cross_judge.critic._parsing.parse_answer`); a criterion missing from an answer
  that holds others is ``PARSE_FAIL`` for that criterion only.

:meth:`RubricPath.verdict` puts a critic's answers together into one
:class:`~cross_judge.verdict.Verdict` whose ``criteria`` holds each, whose ``kind`` is
``PASS``/``FAIL`` by the critic's own weighted total (over the criteria it answered) and
whose usage, cost and attempts are the sum of its calls.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from .._item import Item
from ..budget import Budget
from ..errors import ConfigError, ErrorKind, ItemError, PromptError
from ..rubric.models import Criterion, CriterionVerdict, Rubric, unit_of
from ..rubric.tally import FAIL, PASS
from ..transport import AnswerSchema, ChatRequest
from ..verdict import Verdict, call_totals
from ._config import CriticConfig
from ._item_fields import UnitRef, unit_numbers
from ._parsing import ExampleAnswer, extract_json, parse_answer
from ._request import RequestBuilder, item_fields

if TYPE_CHECKING:
    from ._cache import ResponseCache

__all__ = [
    "JudgesRequest",
    "RubricPath",
    "criteria_text",
    "criteria_verdict",
    "item_rubric",
    "parse_criteria",
    "rubric_schema",
]

RUBRIC_FIELDS = ("criterion", "criterion_id", "criteria")
"""The template fields a rubric fills; an item's context may not set them."""

_MISSING = "parse_fail: the answer gives no verdict for this criterion"


def criteria_text(criteria: Sequence[Criterion]) -> str:
    """The ``{criteria}`` of a ``one_call`` prompt: one ``- id: requirement`` line each."""
    return "\n".join(f"- {c.id}: {c.requirement}" for c in criteria)


def rubric_schema(rubric: Rubric, ids: Sequence[str], name: str) -> AnswerSchema:
    """The JSON schema of a ``one_call`` answer on the criteria ``ids``: an object
    ``criteria`` holding, per id, ``reasoning``, ``kind`` (an enum of the scale) and
    ``confidence``; everything required, nothing else allowed."""
    answer = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "description": "Why, briefly."},
            "kind": {
                "type": "string",
                "enum": list(rubric.labels),
                "description": "Your verdict on this criterion: one of "
                + ", ".join(rubric.labels)
                + ".",
            },
            "confidence": {"type": "number", "description": "From 0 to 1."},
        },
        "required": ["reasoning", "kind", "confidence"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "object",
                "properties": dict.fromkeys(ids, answer),
                "required": list(ids),
                "additionalProperties": False,
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return AnswerSchema(name=name, text=text, label_key="kind")


def _answers_object(data: Mapping[str, Any], rubric: Rubric) -> Mapping[str, Any] | None:
    """Where a ``one_call`` answer keeps its criteria: ``criteria`` (an object, or a list
    of objects with an ``id``), else the top level when it names a criterion."""
    nested = next((v for k, v in data.items() if k.lower() == "criteria"), None)
    if isinstance(nested, list):
        found: dict[str, Any] = {}
        for entry in nested:
            if isinstance(entry, Mapping):
                key = entry.get("id", entry.get("criterion"))
                if isinstance(key, str):
                    found[key] = entry
        return found
    if isinstance(nested, Mapping):
        return nested
    if any(cid in data for cid in rubric.ids):
        return data
    return None


def parse_criteria(
    text: str,
    rubric: Rubric,
    *,
    label_keys: Sequence[str],
    reasoning_keys: Sequence[str],
    examples: Sequence[ExampleAnswer] = (),
) -> dict[str, CriterionVerdict] | str:
    """Each criterion's answer in a ``one_call`` reply, or the reason none could be read
    (``"parse_fail: ..."``). Never raises.

    A criterion's value may be an object (read as a whole answer is: label keys, reasoning
    keys, confidence forms, the scale as vocabulary) or a bare label. A criterion missing,
    or whose value holds no usable label, is ``PARSE_FAIL`` with the reason; a reply with
    no criterion object at all fails as a whole.
    """
    try:
        data = extract_json(text)
        if data is None:
            return "parse_fail: no JSON object in the answer"
        answers = _answers_object(data, rubric)
        if answers is None:
            return "parse_fail: the answer has no criteria object"
        by_id = {str(k).strip(): v for k, v in answers.items()}
        out: dict[str, CriterionVerdict] = {}
        for c in rubric.criteria:
            value = by_id.get(c.id)
            if value is None:
                out[c.id] = CriterionVerdict(
                    kind="PARSE_FAIL", error=_MISSING, error_kind=ErrorKind.PARSE
                )
                continue
            if not isinstance(value, Mapping):
                value = {"kind": value}
            parsed = parse_answer(
                json.dumps(value, ensure_ascii=False, default=str),
                labels=rubric.labels,
                label_keys=label_keys,
                reasoning_keys=reasoning_keys,
                examples=examples,
            )
            if not parsed.ok:
                out[c.id] = CriterionVerdict(
                    kind="PARSE_FAIL", error=parsed.error, error_kind=ErrorKind.PARSE
                )
                continue
            score = parsed.score if parsed.score is not None else rubric.score_of(parsed.kind)
            out[c.id] = CriterionVerdict(
                kind=parsed.kind,
                confidence=parsed.confidence,
                reasoning=parsed.reasoning,
                score=score,
                confidence_stated=parsed.confidence_given,
            )
        if all(not v.is_valid for v in out.values()) and all(
            v.error == _MISSING for v in out.values()
        ):
            return "parse_fail: the answer names none of the criteria " + ", ".join(rubric.ids)
        return out
    except Exception as exc:  # the parser's contract: never raises
        return f"parse_fail: internal parser error ({type(exc).__name__})"


def criteria_verdict(
    rubric: Rubric, criteria: Mapping[str, CriterionVerdict], **fields: Any
) -> Verdict:
    """A critic's verdict over its answers per criterion (at least one valid): ``kind``
    ``PASS``/``FAIL`` by its own total over the valid ones (``score``), ``confidence`` the
    mean confidence of those that stated one (none stated: 0.0, ``confidence_stated``
    False, ``confidence_source="none"``), ``reasoning`` a ``criterion: label`` list;
    ``fields`` (usage, provenance, ...) as given."""
    valid = {cid: a for cid, a in criteria.items() if a.is_valid}
    total = rubric.partial_total({cid: a.score for cid, a in valid.items()})
    stated = [a.confidence for a in valid.values() if a.confidence_stated]
    extra: dict[str, Any] = {}
    if not stated:
        extra = {"confidence_stated": False, "confidence_source": "none"}
    return Verdict(
        kind=PASS if total is not None and rubric.passes(total) else FAIL,
        confidence=sum(stated) / len(stated) if stated else 0.0,
        reasoning="; ".join(f"{cid}: {a.kind}" for cid, a in criteria.items())[:1000],
        score=total,
        criteria=dict(criteria),
        **extra,
        **fields,
    )


def _as_answer(verdict: Verdict) -> CriterionVerdict:
    """A ``per_criterion`` call's verdict as the answer on its criterion."""
    return CriterionVerdict(
        kind=verdict.kind,
        confidence=verdict.confidence,
        reasoning=verdict.reasoning,
        score=verdict.score,
        error=verdict.error,
        error_kind=verdict.error_kind,
        raw_response=verdict.raw_response,
        confidence_stated=verdict.confidence_stated,
    )


def _failed_answer(verdict: Verdict) -> CriterionVerdict:
    return CriterionVerdict(kind=verdict.kind, error=verdict.error, error_kind=verdict.error_kind)


class JudgesRequest(Protocol):
    """What judges one of a rubric's requests: a critic's ``judge_request``."""

    def __call__(
        self,
        request: ChatRequest,
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Awaitable[Verdict]: ...


class RubricPath:
    """Judges one critic's items on its prompt's rubric: builds the requests with
    ``builder``, sends each with ``judge_request`` and puts the answers together."""

    __slots__ = ("builder", "judge_request", "settings")

    def __init__(
        self, settings: CriticConfig, builder: RequestBuilder, judge_request: JudgesRequest
    ) -> None:
        self.settings = settings
        self.builder = builder
        self.judge_request = judge_request

    def check_options(self) -> None:
        """Raise for what a rubric critic cannot do.

        Raises:
            ConfigError: ``samples > 1``; ``confidence="logprob"`` with ``one_call``.
        """
        settings = self.settings
        rubric = settings.rubric
        if rubric is None:
            return
        if settings.samples != 1:
            raise ConfigError(
                f"{settings.where}: samples={settings.samples} with a rubric prompt; a rubric "
                "critic answers each criterion once: set samples=1, or use more critics"
            )
        if rubric.mode == "one_call" and settings.confidence == "logprob":
            raise ConfigError(
                f"{settings.where}: confidence='logprob' reads one label's token "
                "probabilities, and a one_call rubric answer holds one label per criterion; "
                "use criteria_mode: per_criterion, or confidence='stated'"
            )

    def _rubric(self) -> Rubric:
        rubric = self.settings.rubric
        if rubric is None:
            raise ConfigError(
                f"{self.settings.where} has no rubric: give it a prompt with criteria"
            )
        return rubric

    def rubric_for(self, item: Item) -> Rubric:
        """The rubric ``item`` is judged on: the prompt's, or for a unit prompt one
        criterion per unit of the item (:meth:`Rubric.for_units
        <cross_judge.rubric.Rubric.for_units>`).

        Raises:
            ConfigError: the critic has no rubric.
            ItemError: a unit prompt and an item without units, or with more than the
                prompt's ``max_units``.
        """
        return item_rubric(self._rubric(), item, self.settings.where, self.settings.unit_limit)

    def requests(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        criteria: Sequence[str] | None = None,
    ) -> list[tuple[tuple[str, ...], ChatRequest]]:
        """The requests that ask about ``criteria`` (default: every criterion), each with
        the criterion ids it answers: one per criterion (``per_criterion``) or one for all
        (``one_call``), in rubric order. A unit prompt asks about each unit on its own:
        one request per unit (and criterion, ``per_criterion``), the unit's turn or step
        rendered into it.

        Raises:
            PromptError: as the builder's, or ``context`` sets a rubric field.
            ConfigError: no rubric, or ``criteria`` is not a selection of its ids.
            ItemError: as :meth:`rubric_for`, or the template uses a field the item lacks.
        """
        if isinstance(query, Item):
            item_fields(query, context)  # an item and a context: the TypeError
            item = query
        else:
            item = Item.of(query, context=context)
        rubric = self.rubric_for(item)
        where = self.settings.where
        try:
            ids = rubric.select(criteria, whose="its rubric")
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        taken = [name for name in RUBRIC_FIELDS if name in item.context]
        if taken:
            raise PromptError(
                f"{where}: context sets {taken}, which a rubric fills itself; "
                "rename those context keys"
            )
        build = self.builder.build_request
        unit = rubric.unit
        if rubric.mode == "per_criterion":
            out: list[tuple[tuple[str, ...], ChatRequest]] = []
            for cid in ids:
                number, c = rubric.base_criterion(cid)
                ref = None if unit is None or number is None else UnitRef(unit, number)
                values = (
                    {}
                    if rubric.per_unit_only
                    else {"criterion": c.requirement, "criterion_id": c.id}
                )
                out.append(((cid,), build(item, extra=values, unit=ref)))
            return out
        groups: dict[int | None, list[str]] = {}
        for cid in ids:
            groups.setdefault(rubric.base_criterion(cid)[0], []).append(cid)
        plan: list[tuple[tuple[str, ...], ChatRequest]] = []
        template = self._rubric()
        for number, group in groups.items():
            asked = [rubric.base_criterion(cid)[1] for cid in group]
            ref = None if unit is None or number is None else UnitRef(unit, number)
            request = build(item, extra={"criteria": criteria_text(asked)}, unit=ref)
            if request.schema is not None:
                schema = rubric_schema(template, [c.id for c in asked], request.schema.name)
                request = replace(request, schema=schema)
            plan.append((tuple(group), request))
        return plan

    async def judge(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        *,
        criteria: Sequence[str] | None = None,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """The verdict on ``criteria`` (default all): :meth:`requests`, sent at once, put
        together by :meth:`verdict`. Never raises for a vendor failure."""
        plan = self.requests(query, context, criteria)
        return await self.judge_requests(plan, budget=budget, cache=cache)

    async def judge_requests(
        self,
        plan: Sequence[tuple[tuple[str, ...], ChatRequest]],
        *,
        budget: Budget | float | None = None,
        cache: ResponseCache | None = None,
    ) -> Verdict:
        """:meth:`judge` for requests already built by :meth:`requests`."""
        results: list[Verdict | None] = [None] * len(plan)
        spending = Budget.of(budget)  # once: a number is one cap for every call

        async def one(index: int) -> None:
            results[index] = await self.judge_request(plan[index][1], budget=spending, cache=cache)

        if len(plan) == 1:
            await one(0)
        else:
            async with anyio.create_task_group() as group:
                for index in range(1, len(plan)):
                    group.start_soon(one, index)
                await one(0)
        parts = [(ids, v) for (ids, _), v in zip(plan, results, strict=True) if v is not None]
        return self.verdict(parts)

    def check_renders(self, query: str | Item, context: Mapping[str, Any] | None = None) -> None:
        """Render every prompt the critic would send for the item, sending nothing.

        Raises:
            PromptError: as the builder's :meth:`~._request.RequestBuilder.render_prompt` /
                :meth:`requests`.
        """
        if self.settings.rubric is None:
            self.builder.render_prompt(query, context)
        else:
            self.requests(query, context)

    def read_criteria(self, text: str) -> dict[str, CriterionVerdict] | str:
        """The criteria of a ``one_call`` answer (:func:`parse_criteria` with the critic's
        answer keys and the prompt's examples).

        Raises:
            ConfigError: the critic has no rubric.
        """
        settings = self.settings
        return parse_criteria(
            text,
            self._rubric(),
            label_keys=settings.label_keys,
            reasoning_keys=settings.reasoning_keys,
            examples=settings.examples,
        )

    def verdict(self, parts: Sequence[tuple[Sequence[str], Verdict]]) -> Verdict:
        """One verdict from the critic's calls on its rubric, each ``(criterion ids, call
        verdict)``: ``PASS``/``FAIL`` by the critic's own total over the criteria it
        answered; with none answered, the first call's failure; usage, cost and attempts
        summed over the calls.

        Raises:
            ConfigError: the critic has no rubric.
        """
        rubric = _answered_rubric(self._rubric(), [cid for ids, _ in parts for cid in ids])
        answers: dict[str, CriterionVerdict] = {}
        for ids, verdict in parts:
            for cid in ids:
                key = rubric.base_criterion(cid)[1].id  # a unit's answer names its criterion
                if rubric.mode == "per_criterion":
                    answers[cid] = _as_answer(verdict)
                elif verdict.criteria is not None and key in verdict.criteria:
                    answers[cid] = verdict.criteria[key]
                elif verdict.error is not None:
                    answers[cid] = _failed_answer(verdict)
                else:
                    answers[cid] = CriterionVerdict(
                        kind="PARSE_FAIL", error=_MISSING, error_kind=ErrorKind.PARSE
                    )
        ordered = {cid: answers[cid] for cid in rubric.ids if cid in answers}
        calls = [v for _, v in parts]
        totals = call_totals(calls)
        if rubric.mode == "one_call" and len(calls) == 1:
            totals["raw_response"] = calls[0].raw_response
        first = calls[0]
        provenance = {
            name: getattr(first, name)
            for name in ("critic_id", "model", "vendor", "prompt_id", "prompt_version")
        }
        provenance["prompt_sha256"] = first.prompt_sha256
        if first.structured is not None:
            provenance["structured"] = first.structured
        valid = {cid: a for cid, a in ordered.items() if a.is_valid}
        if not valid:
            failed = next((v for v in calls if v.error is not None), first)
            return Verdict(
                kind=failed.kind if failed.error is not None else "PARSE_FAIL",
                reasoning=failed.reasoning,
                error=failed.error or _MISSING,
                error_kind=failed.error_kind or ErrorKind.PARSE,
                confidence_source="none",
                criteria=ordered,
                **{**totals, **provenance},
            )
        return criteria_verdict(rubric, ordered, **{**totals, **provenance})


def item_rubric(rubric: Rubric, item: Item, where: str, limit: int) -> Rubric:
    """The rubric ``item`` is judged on: ``rubric``, or for a unit rubric its expansion
    over the item's units (:func:`~._item_fields.unit_numbers`).

    Raises:
        ItemError: a unit rubric and an item without units, or with more than ``limit``.
    """
    if rubric.unit is None:
        return rubric
    numbers = unit_numbers(item, rubric.unit, where=where)
    if len(numbers) > limit:
        raise ItemError(
            f"{where} judges each {rubric.unit} (unit: {rubric.unit}), and item "
            f"{item.id[:80]!r} has {len(numbers):,}, over the prompt's max_units={limit}: "
            f"split the item, or raise max_units in the prompt file (each {rubric.unit} "
            "costs a call per critic)"
        )
    return rubric.for_units(numbers)


def _answered_rubric(rubric: Rubric, ids: Sequence[str]) -> Rubric:
    """The item rubric of a unit rubric's answers on ``ids`` (over the units they name),
    or ``rubric`` itself for a rubric without units."""
    if rubric.unit is None:
        return rubric
    numbers = sorted({found[1] for cid in ids if (found := unit_of(cid)) is not None})
    return rubric.for_units(numbers) if numbers else rubric
