"""What an item holds beyond text: conversations, agent trajectories and images.

The models (:class:`Turn`, :class:`ToolCall`, :class:`ModelMessage`, :class:`FinalAnswer`,
:class:`Image`) and their readers from plain values live in :mod:`._model`; rendering a
conversation or a trajectory for a judge, within a prompt's limits, in :mod:`._render`;
reading the formats other tools write (OpenAI chat messages, Anthropic content blocks,
OpenTelemetry GenAI spans) in :mod:`._readers`. Base layer: the item and every layer
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
        turns_of,
    )
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

__all__ = [
    "DEFAULT_LIMITS",
    "IMAGE_MEDIA_TYPES",
    "FinalAnswer",
    "Image",
    "ModelMessage",
    "RenderCut",
    "RenderLimits",
    "Rendered",
    "Step",
    "ToolCall",
    "Turn",
    "compact_json",
    "entry_text",
    "final_text",
    "images_of",
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
                "turns_of",
            ],
            "._model",
        ),
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
