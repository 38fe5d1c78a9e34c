"""Building a critic's request: the prompt rendered for an item, the chat messages, JSON
mode, and the request of each self-consistency sample.

:class:`RequestBuilder` is one of the parts :class:`~cross_judge.critic.critic.Critic` is
made of: its methods are the critic's (``critic.build_request(query)``), written here
beside the other request-building code. Building a request checks the template and the
item's length and never touches the network; sending it is :mod:`.calls`, reading the
answer :mod:`.assembly`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ItemTooLongError, PromptError
from ..transport import ChatRequest
from ..vendors import VendorConfig
from .template import Template

__all__ = ["RequestBuilder", "sample_request"]


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
        _template: Template

        def endpoint(self) -> VendorConfig: ...

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
            return config.json_object and self._mentions_json()
        return bool(self.json_mode)

    def render_prompt(self, query: str, context: Mapping[str, Any] | None = None) -> str:
        """The user message for ``query``: every field filled literally, nothing evaluated.

        Raises:
            PromptError: a field has no value, or ``context`` tries to override ``query``.
            ItemTooLongError: the query plus the context values the template uses are
                longer than ``max_item_chars``.
        """
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
        self, query: str, context: Mapping[str, Any] | None = None
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``query`` (system message only if non-empty)."""
        user = self.render_prompt(query, context)
        if self.system_prompt:
            return [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": user},
            ]
        return [{"role": "user", "content": user}]

    def build_request(self, query: str, context: Mapping[str, Any] | None = None) -> ChatRequest:
        """The wire-neutral request sent for ``query`` (see :meth:`build_messages`).

        Raises:
            PromptError: as :meth:`render_prompt`.
        """
        config = self.endpoint()
        return ChatRequest(
            model=self.model,
            system=self.system_prompt,
            user=self.render_prompt(query, context),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_mode=self.json_mode_on(config),
            seed=self.seed,
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
