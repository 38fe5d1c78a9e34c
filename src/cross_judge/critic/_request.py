"""Building a critic's request: the prompt rendered for an item, the chat messages, JSON
mode, and the request of each self-consistency sample.

:class:`RequestBuilder` is the collaborator of :class:`~cross_judge.critic._critic.Critic`
that builds its requests, from the critic's frozen configuration
(:class:`~cross_judge.critic._config.CriticConfig`) alone. Building a request checks the
item's length and never touches the network; sending it is :mod:`._calls`, reading the
answer :mod:`._assembly`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._item import Item
from ..content import Image
from ..errors import ItemTooLongError
from ..transport import (
    AnswerSchema,
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
    StructuredForm,
    TextPart,
    protocol_adapter,
)
from ..vendors import VendorConfig
from ._answer_schema import DEFAULT_OUTPUT, answer_schema
from ._config import CriticConfig
from ._item_fields import UnitRef, item_values
from ._stepdown import learned_form, logprobs_refused

__all__ = ["TOP_LOGPROBS", "RenderedPrompt", "RequestBuilder", "item_fields", "sample_request"]

TOP_LOGPROBS = 10
"""Alternatives asked per token for ``confidence="logprob"``/``"auto"`` (OpenAI allows 20)."""


class RequestBuilder:
    """Builds one critic's requests from its configuration; the critic's
    ``build_request``, ``render_prompt``, ``structured_form``, ... are this object's."""

    __slots__ = ("settings",)

    def __init__(self, settings: CriticConfig) -> None:
        self.settings = settings

    def json_mode_on(self, config: VendorConfig) -> bool:
        """Whether requests to ``config`` ask for a JSON object: ``json_mode`` when it is
        True or False; with ``"auto"``, when the vendor accepts JSON mode and the prompt
        mentions JSON."""
        settings = self.settings
        if settings.json_mode == "auto":
            return bool(config.json_object) and settings.mentions_json
        return bool(settings.json_mode)

    def answer_schema(self) -> AnswerSchema:
        """The JSON schema of the answer: the prompt's ``output`` fields, the label an enum
        of ``labels``, named after the prompt and its version."""
        settings = self.settings
        spec = settings.spec
        return answer_schema(
            labels=settings.labels,
            output=spec.output if spec is not None else DEFAULT_OUTPUT,
            name=settings.schema_name,
            label_keys=settings.label_keys,
        )

    def structured_form(self, config: VendorConfig) -> StructuredForm:
        """The answer shape the next request to ``config`` asks for: ``json_mode``'s with
        ``structured=None``; with ``"auto"`` the strongest form the vendor may take, after
        any step down the endpoint and model made (:mod:`._stepdown`); else as given."""
        settings = self.settings
        mode = settings.structured
        if mode is None:
            return "json" if self.json_mode_on(config) else "off"
        if mode != "auto":
            return mode  # type: ignore[return-value]  # checked at construction
        start: StructuredForm
        if settings.answer_regex is not None:  # a prompt whose answers are not JSON
            start = "off"
        else:
            start = protocol_adapter(config.protocol).auto_form(
                config,
                thinking=settings.thinking_budget is not None,
                json_ok=settings.mentions_json,
            )
        return learned_form(config, settings.model, start)

    def json_allowed(self, config: VendorConfig) -> bool:
        """Whether ``structured="auto"`` may step down to JSON mode on ``config``: the
        vendor is not known to refuse it and the prompt mentions JSON."""
        adapter = protocol_adapter(config.protocol)
        return adapter.json_allowed(config) and self.settings.mentions_json

    def logprobs_asked(self, config: VendorConfig) -> int | None:
        """Alternatives per token to ask ``config`` for (:data:`TOP_LOGPROBS`), or ``None``:
        with ``confidence="logprob"``, and with ``"auto"`` where the vendor may serve them
        and has not refused them."""
        confidence = self.settings.confidence
        if confidence == "stated" or config.logprobs is False:
            return None
        if confidence == "auto" and logprobs_refused(config, self.settings.model):
            return None
        return TOP_LOGPROBS

    def render_prompt(self, query: str | Item, context: Mapping[str, Any] | None = None) -> str:
        """The user message for ``query``: every field filled literally, nothing evaluated.

        Raises:
            PromptError: a field has no value, or ``context`` tries to override ``query``.
            ItemTooLongError: the item is longer than ``max_item_chars``.
            ItemError: the template uses a field the item lacks (``{reference}`` on an
                item without one, ...).
            TypeError: an item and a ``context`` both given.
        """
        return self.rendered(query, context).text

    def rendered(
        self,
        query: str | Item,
        context: Mapping[str, Any] | None = None,
        *,
        extra: Mapping[str, Any] | None = None,
        unit: UnitRef | None = None,
    ) -> RenderedPrompt:
        """The user message for ``query`` with what it sends besides: the images to attach
        and the cuts of the item's renderings. ``extra`` are values a rubric or a unit
        fills (on top of the item's context); ``unit`` the turn or step judged.

        Raises:
            PromptError, ItemTooLongError, ItemError, TypeError: as :meth:`render_prompt`.
        """
        settings = self.settings
        template = settings.template
        wanted = settings.item_fields
        if not isinstance(query, Item) and wanted and not wanted <= set(context or ()):
            query = Item.of(query, context=context)  # say what the item lacks, as for items
            context = None
        if isinstance(query, Item):
            if context is not None:
                item_fields(query, context)  # raises the TypeError
            item = query
            values: dict[str, Any] = dict(item.context)
            cuts: tuple[Mapping[str, Any], ...] = ()
            images: tuple[Image, ...] = ()
            if item.structured or unit is not None or wanted:
                found = item_values(
                    item, template.fields, limits=settings.limits, where=settings.where, unit=unit
                )
                values.update(found.values)
                cuts, images = found.cuts, found.images
            if extra:
                values.update(extra)
            text, fields = item.query, values
        else:
            if extra:
                context = {**(context or {}), **extra}
            text, fields, cuts, images = query, dict(context) if context else {}, (), ()
        limit = settings.max_item_chars
        if limit is not None:
            self._check_item_length(text, fields, limit)
        what = f"{settings.where} template"
        return RenderedPrompt(template.render_item(text, fields or None, what=what), cuts, images)

    def _check_item_length(self, query: str, context: Mapping[str, Any] | None, limit: int) -> None:
        size = len(str(query))
        if context:
            for name in self.settings.template.fields:
                if name != "query" and name in context:
                    size += len(str(context[name]))
        if size > limit:
            raise ItemTooLongError(
                f"{self.settings.where}: the item is {size:,} characters (query plus context "
                "values), over max_item_chars="
                f"{limit:,}; shorten or split it, or raise the critic's max_item_chars (None "
                "removes the limit)"
            )

    def build_messages(
        self, query: str | Item, context: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system message only if non-empty), as
        text (an item's images are not in this form: see :meth:`item_messages`)."""
        user = self.render_prompt(query, context)
        system = self.settings.system_prompt
        if system:
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return [{"role": "user", "content": user}]

    def item_messages(
        self, item: str | Item, context: Mapping[str, Any] | None = None
    ) -> tuple[Message, ...]:
        """The messages about ``item``: the system prompt when there is one, then the
        user's turn: the rendered template as one text part, then the item's images (its
        own, then those of the conversation's turns shown), in order.

        Raises:
            PromptError: as :meth:`render_prompt`.
        """
        return self._messages(self.rendered(item, context))

    def _messages(self, rendered: RenderedPrompt) -> tuple[Message, ...]:
        parts: tuple[ContentPart, ...] = (TextPart(rendered.text),)
        if rendered.images:
            parts += tuple(
                ImagePart(image.media_type, image.sha256, image.data, image.url, image.source)
                for image in rendered.images
            )
        user = Message("user", parts)
        system = self.settings.system_prompt
        if system:
            return (Message("system", (TextPart(system),)), user)
        return (user,)

    def build_request(
        self,
        item: str | Item,
        context: Mapping[str, Any] | None = None,
        *,
        extra: Mapping[str, Any] | None = None,
        unit: UnitRef | None = None,
    ) -> ChatRequest:
        """The wire-neutral request for ``item``: :meth:`item_messages` and the settings
        (``extra`` and ``unit`` as for :meth:`rendered`); what the item's renderings cut
        rides along as :attr:`~cross_judge.transport.ChatRequest.render_cut`.

        Raises:
            PromptError: as :meth:`render_prompt`.
            TypeError: an item and a ``context`` both given (an item carries its own).
        """
        settings = self.settings
        config = settings.endpoint
        form = self.structured_form(config)
        rendered = self.rendered(item, context, extra=extra, unit=unit)
        return ChatRequest(
            model=settings.model,
            system="",
            user="",
            messages=self._messages(rendered),
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            seed=settings.seed,
            structured=form,
            schema=self.answer_schema() if form in ("schema", "tool") else None,
            effort=settings.effort,
            thinking_budget=settings.thinking_budget,
            logprobs=self.logprobs_asked(config),
            render_cut=rendered.cuts,
        )


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A rendered user message: its ``text``, the ``images`` sent after it and the
    ``cuts`` of the item's renderings (empty: nothing cut)."""

    text: str
    cuts: tuple[Mapping[str, Any], ...] = ()
    images: tuple[Image, ...] = ()


def sample_request(request: ChatRequest, k: int) -> ChatRequest:
    """The request of sample ``k`` (0-based) of ``request``, for ``Critic(samples=n)``.

    Sample 0 is ``request`` itself. Sample ``k > 0`` carries ``sample=k``, which gives it
    its own response-cache key (:meth:`~cross_judge.transport.ChatRequest.cache_key`) and
    is not sent; with a ``seed`` it sends ``seed + k``, since one seed would make every
    sample the same draw.
    """
    if k == 0:
        return request
    seed = None if request.seed is None else request.seed + k
    return replace(request, sample=k, seed=seed)


def item_fields(
    item: str | Item, context: Mapping[str, Any] | None
) -> tuple[str, Mapping[str, Any] | None]:
    """The query and context a critic renders for ``item``: an item's own (its context
    ``None`` when empty), or the string and ``context`` given.

    Raises:
        TypeError: an :class:`~cross_judge.batch.Item` and a ``context`` both given.
    """
    if not isinstance(item, Item):
        return item, context
    if context is not None:
        raise TypeError(
            "an Item was given with context=: an item carries its own context; set it on the "
            "item (item.model_copy(update={'context': {...}})), or pass the query as a string"
        )
    return item.query, item.context or None
