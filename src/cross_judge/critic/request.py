"""Building a critic's request: the prompt rendered for an item, the chat messages, JSON
mode, and the request of each self-consistency sample.

:class:`RequestBuilder` is one of the parts :class:`~cross_judge.critic.critic.Critic` is
made of: its methods are the critic's (``critic.build_request(query)``), written here
beside the other request-building code. Building a request checks the template and the
item's length and never touches the network; sending it is :mod:`.calls`, reading the
answer :mod:`.assembly`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from .._item import Item
from ..errors import ItemTooLongError, PromptError
from ..transport import (
    AnswerSchema,
    ChatRequest,
    Message,
    StructuredForm,
    TextPart,
    protocol_adapter,
)
from ..vendors import VendorConfig
from .answer_schema import DEFAULT_OUTPUT, answer_schema, schema_name
from .stepdown import learned_form, logprobs_refused
from .template import Template

if TYPE_CHECKING:
    from .prompts import PromptSpec

__all__ = ["TOP_LOGPROBS", "RequestBuilder", "item_fields", "sample_request"]

TOP_LOGPROBS = 10
"""Alternatives asked per token for ``confidence="logprob"``/``"auto"`` (OpenAI allows 20)."""


class RequestBuilder:
    """The request-building methods of :class:`~cross_judge.critic.critic.Critic`."""

    if TYPE_CHECKING:  # what these methods use of the critic (defined in .critic)
        name: str
        model: str
        prompt_template: str
        system_prompt: str
        temperature: float
        max_tokens: int
        seed: int | None
        json_mode: bool | Literal["auto"]
        max_item_chars: int | None
        labels: Sequence[str] | None
        structured: str | None
        effort: str | None
        thinking_budget: int | None
        confidence: str
        _template: Template
        _label_keys: tuple[str, ...]

        def endpoint(self) -> VendorConfig: ...
        def _spec_in_use(self) -> PromptSpec | None: ...
        def _answer_regex(self) -> re.Pattern[str] | None: ...

    def _compile(self) -> Template:
        template = Template.compile(self.prompt_template, what=f"Critic {self.name!r} template")
        if "query" not in template.fields:
            raise PromptError(
                f"Critic {self.name!r} template has no {{query}} placeholder, so the item would "
                "never reach the model; add {query} where the item belongs"
            )
        return template

    def _mentions_json(self) -> bool:
        return "json" in (self.system_prompt + self.prompt_template).lower()

    def json_mode_on(self, config: VendorConfig) -> bool:
        """Whether this critic's requests to ``config`` ask for a JSON object
        (``response_format={"type": "json_object"}``): ``json_mode`` itself when it is
        True or False; with ``"auto"``, when the vendor accepts JSON mode and the prompt
        mentions JSON."""
        if self.json_mode == "auto":
            return bool(config.json_object) and self._mentions_json()
        return bool(self.json_mode)

    def answer_schema(self) -> AnswerSchema:
        """The JSON schema of this critic's answer (:func:`.answer_schema.answer_schema`):
        its prompt's ``output`` fields (``kind``, ``confidence``, ``reasoning`` without a
        prompt file) with the label an enum of ``labels``, named after the prompt and its
        version. Sent with ``structured="schema"``/``"tool"``/``"auto"``."""
        spec = self._spec_in_use()
        output = spec.output if spec is not None else DEFAULT_OUTPUT
        name = schema_name(spec.id, spec.version) if spec is not None else "verdict"
        labels = tuple(self.labels) if self.labels is not None else None
        return answer_schema(labels=labels, output=output, name=name, label_keys=self._label_keys)

    def structured_form(self, config: VendorConfig) -> StructuredForm:
        """The answer shape this critic's next request to ``config`` asks for.

        ``structured=None`` follows ``json_mode`` (``"json"`` or ``"off"``, see
        :meth:`json_mode_on`). ``"auto"`` starts at the strongest form the vendor may take
        (:meth:`~cross_judge.transport.WireAdapter.auto_form`; Anthropic: a forced tool, or
        its JSON output format while thinking; OpenAI protocol: a schema unless the vendor
        is known to refuse one, then JSON mode when it takes it and the prompt mentions
        JSON, else nothing; the Responses API: a schema), then keeps any step down the
        endpoint and model made (:mod:`.stepdown`). Other values are sent as given.
        """
        mode = self.structured
        if mode is None:
            return "json" if self.json_mode_on(config) else "off"
        if mode != "auto":
            return mode  # type: ignore[return-value]  # checked at construction
        start: StructuredForm
        if self._answer_regex() is not None:  # a prompt whose answers are not JSON
            start = "off"
        else:
            start = protocol_adapter(config.protocol).auto_form(
                config, thinking=self.thinking_budget is not None, json_ok=self._mentions_json()
            )
        return learned_form(config, self.model, start)

    def json_allowed(self, config: VendorConfig) -> bool:
        """Whether ``structured="auto"`` may step down to JSON mode on ``config``: the
        vendor is not known to refuse it and the prompt mentions JSON (vendors refuse a
        ``json_object`` request whose messages do not)."""
        return protocol_adapter(config.protocol).json_allowed(config) and self._mentions_json()

    def logprobs_asked(self, config: VendorConfig) -> int | None:
        """How many alternatives per token this critic asks ``config`` for
        (:data:`TOP_LOGPROBS`), or ``None``: with ``confidence="logprob"``, and with
        ``"auto"`` where the vendor may serve them and has not refused them."""
        if self.confidence == "stated" or config.logprobs is False:
            return None
        if self.confidence == "auto" and logprobs_refused(config, self.model):
            return None
        return TOP_LOGPROBS

    def render_prompt(self, query: str | Item, context: Mapping[str, Any] | None = None) -> str:
        """The user message for ``query`` (a string with ``context``, or an
        :class:`~cross_judge.batch.Item`): every field filled literally, nothing evaluated.

        Raises:
            PromptError: a field has no value, or ``context`` tries to override ``query``.
            ItemTooLongError: the query plus the context values the template uses are
                longer than ``max_item_chars``.
        """
        query, context = item_fields(query, context)
        if self._template.source != self.prompt_template:  # the attribute was reassigned
            self._template = self._compile()
        limit = self.max_item_chars
        if limit is not None:
            self._check_item_length(query, context, limit)
        return self._template.render_item(query, context, what=f"Critic {self.name!r} template")

    def _check_item_length(self, query: str, context: Mapping[str, Any] | None, limit: int) -> None:
        size = len(str(query))
        if context:
            for name in self._template.fields:
                if name != "query" and name in context:
                    size += len(str(context[name]))
        if size > limit:
            raise ItemTooLongError(
                f"Critic {self.name!r}: the item is {size:,} characters (query plus context "
                f"values), over max_item_chars={limit:,}; shorten or split it, or raise the "
                "critic's max_item_chars (None removes the limit)"
            )

    def build_messages(
        self, query: str | Item, context: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system message only if non-empty)."""
        user = self.render_prompt(query, context)
        if self.system_prompt:
            return [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": user},
            ]
        return [{"role": "user", "content": user}]

    def item_messages(
        self, item: str | Item, context: Mapping[str, Any] | None = None
    ) -> tuple[Message, ...]:
        """The messages that ask this critic about ``item`` (an
        :class:`~cross_judge.batch.Item`, or its query with ``context``): the system
        prompt when there is one, then the user's turn, the rendered template as one text
        part. The wire protocol's adapter sends them in its own form; what an item holds
        beyond text becomes more parts and turns here.

        Raises:
            PromptError: as :meth:`render_prompt`.
        """
        user = Message("user", (TextPart(self.render_prompt(item, context)),))
        if self.system_prompt:
            return (Message("system", (TextPart(self.system_prompt),)), user)
        return (user,)

    def build_request(
        self, item: str | Item, context: Mapping[str, Any] | None = None
    ) -> ChatRequest:
        """The wire-neutral request sent for ``item`` (an :class:`~cross_judge.batch.Item`,
        or its query as a string with ``context``): :meth:`item_messages` and this
        critic's settings.

        Raises:
            PromptError: as :meth:`render_prompt`.
            TypeError: an item and a ``context`` both given (an item carries its own).
        """
        config = self.endpoint()
        form = self.structured_form(config)
        return ChatRequest(
            model=self.model,
            system="",
            user="",
            messages=self.item_messages(item, context),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            structured=form,
            schema=self.answer_schema() if form in ("schema", "tool") else None,
            effort=self.effort,
            thinking_budget=self.thinking_budget,
            logprobs=self.logprobs_asked(config),
        )


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
