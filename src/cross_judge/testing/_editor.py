"""The simulated prompt editor: what a persona answers to a request that shows a judge's
mistakes (``<case>`` blocks, the packaged ``prompt-edit`` prompt's format) and asks for an
instruction to correct them.

A case reads::

    <case>
    Item: refund: the customer asks for a refund ...
    Judge said: FAIL (The item is consistent with FAIL.)
    People said: PASS
    </case>

The editor generalises the way an LLM editor is hoped to: it finds the topic (the first
word, as :func:`~._policy.topic_of` reads it) most of the cases share and the label people
gave most on them, and writes an instruction naming both, as the reasoning of an answer
labelled :data:`EDIT_LABEL`. It never sees a persona's hidden
policy; it reads the cases only. This module decides nothing else.
"""

from __future__ import annotations

import re
from collections import Counter

from ._policy import topic_of

__all__ = ["EDIT_LABEL", "edit_instruction"]

EDIT_LABEL = "EDIT"
"""The label of every edit answer, whatever the persona's vocabulary (the ``prompt-edit``
prompt's only label)."""

_CASE = re.compile(r"<case>(.*?)</case>", re.DOTALL)


def edit_instruction(item_text: str) -> str | None:
    """The instruction the simulated editor writes for the cases in ``item_text``;
    ``None`` when it shows no case (not an edit request)."""
    topics: Counter[str] = Counter()
    labels: dict[str, Counter[str]] = {}
    for block in _CASE.findall(item_text):
        fields = {
            key.strip().lower(): value.strip()
            for key, _, value in (line.partition(":") for line in block.strip().splitlines())
            if value
        }
        item, people = fields.get("item", ""), fields.get("people said", "")
        topic = topic_of(item)
        if topic and people:
            topics[topic] += 1
            labels.setdefault(topic, Counter())[people.split()[0]] += 1
    if not topics:
        return None
    topic, _ = min(topics.items(), key=lambda pair: (-pair[1], pair[0]))
    label, _ = min(labels[topic].items(), key=lambda pair: (-pair[1], pair[0]))
    return (
        f"Judge {topic} items on what the agent did, like any other item: people labelled "
        f"most of the {topic} items you got wrong {label}, so the topic alone decides nothing."
    )
