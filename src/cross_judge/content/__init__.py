"""What an item holds beyond text: conversations, agent trajectories and images.

The models (:class:`Turn`, :class:`ToolCall`, :class:`ModelMessage`, :class:`FinalAnswer`,
:class:`Image`) and their readers from plain values live in :mod:`._model`; rendering a
conversation or a trajectory for a judge, within a prompt's limits, in :mod:`._render`;
reading the formats other tools write (OpenAI chat messages, Anthropic content blocks)
in :mod:`._readers`, OpenTelemetry GenAI spans in :mod:`._otlp`, both into a
:class:`Transcript` (:mod:`._transcript`). Base layer: the item and every layer
above use it. See the docs page "Conversations, agents and images".
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports

if TYPE_CHECKING:
    from ._model import (
        IMAGE_MEDIA_TYPES,
        FinalAnswer,
        Image,
        ModelMessage,
        Step,
        ToolCall,
        Turn,
        final_text,
        images_of,
        steps_of,
    )
    from ._otlp import read_otlp_json
    from ._readers import read_anthropic_messages, read_openai_chat, turns_of
    from ._render import (
        DEFAULT_LIMITS,
        RenderCut,
        Rendered,
        RenderLimits,
        compact_json,
        entry_text,
        render_conversation,
        render_entry,
        render_trajectory,
    )
    from ._transcript import ITEM_FORMS, Transcript

__all__ = [
    "DEFAULT_LIMITS",
    "IMAGE_MEDIA_TYPES",
    "ITEM_FORMS",
    "FinalAnswer",
    "Image",
    "ModelMessage",
    "RenderCut",
    "RenderLimits",
    "Rendered",
    "Step",
    "ToolCall",
    "Transcript",
    "Turn",
    "compact_json",
    "entry_text",
    "final_text",
    "images_of",
    "read_anthropic_messages",
    "read_openai_chat",
    "read_otlp_json",
    "render_conversation",
    "render_entry",
    "render_trajectory",
    "steps_of",
    "turns_of",
]

_exports = LazyExports(
    __name__,
    {
        **dict.fromkeys(
            [
                "IMAGE_MEDIA_TYPES",
                "FinalAnswer",
                "Image",
                "ModelMessage",
                "Step",
                "ToolCall",
                "Turn",
                "final_text",
                "images_of",
                "steps_of",
            ],
            "._model",
        ),
        **dict.fromkeys(["read_anthropic_messages", "read_openai_chat", "turns_of"], "._readers"),
        **dict.fromkeys(["ITEM_FORMS", "Transcript"], "._transcript"),
        "read_otlp_json": "._otlp",
        **dict.fromkeys(
            [
                "DEFAULT_LIMITS",
                "RenderCut",
                "RenderLimits",
                "Rendered",
                "compact_json",
                "entry_text",
                "render_conversation",
                "render_entry",
                "render_trajectory",
            ],
            "._render",
        ),
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
