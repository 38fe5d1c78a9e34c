"""Results of structured items for the views' tests: an agent run judged per step (one
step the critics split on, one failed tool call), a conversation judged per turn, and an
answer with a reference, built directly as the batch would store them."""

from __future__ import annotations

from cross_judge.batch import BatchResult, Item
from cross_judge.batch._items import item_text
from cross_judge.content import FinalAnswer, Image, ModelMessage, ToolCall, Turn
from cross_judge.rubric import CriterionConsensus, CriterionVerdict
from cross_judge.verdict import EnsembleVerdict, Verdict

HOSTILE = "<script>alert(1)</script>"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
CRITICS = ("a", "b", "c")


def agent_item() -> Item:
    return Item(
        id="run-1",
        trajectory=[
            ToolCall(name="search", arguments={"q": "weather " + HOSTILE}, result={"temp": 21}),
            ToolCall(name="rm", arguments={"path": "/"}, error="permission denied"),
            ModelMessage(text="Let me answer."),
            FinalAnswer(text="It is 21 degrees."),
        ],
        reference="21 degrees",
    )


def chat_item() -> Item:
    return Item(
        id="chat-1",
        messages=[
            Turn(role="user", content="Plan my trip?"),
            Turn(role="assistant", content="Where to?"),
            Turn(
                role="user",
                content="Oslo, see the map",
                images=(Image.from_bytes(PNG),),
            ),
            Turn(role="assistant", content="Yes: here is a plan for Oslo."),
        ],
    )


def unit_result(
    query_id: str, labels: dict[str, tuple[str, str, str]], item: Item | None
) -> EnsembleVerdict:
    """A result whose criteria are ``labels`` (criterion id -> the three critics' labels),
    each voted by majority; the item's text stored when ``item`` is given."""
    verdicts = [
        Verdict(
            kind="PASS",
            confidence=0.8,
            critic_id=name,
            criteria={
                cid: CriterionVerdict(kind=kinds[i], confidence=0.8, reasoning=f"{name} on {cid}")
                for cid, kinds in labels.items()
            },
        )
        for i, name in enumerate(CRITICS)
    ]
    criteria = {}
    for cid, kinds in labels.items():
        top = max(set(kinds), key=kinds.count)
        agree = kinds.count(top)
        criteria[cid] = CriterionConsensus(
            consensus=top,
            agreement_pct=agree / 3,
            disputed=agree < 3,
            n_valid=3,
            dissenters=[CRITICS[i] for i, k in enumerate(kinds) if k != top],
        )
    return EnsembleVerdict(
        query_id=query_id,
        verdicts=verdicts,
        consensus="FAIL",
        voting="majority",
        agreement_pct=2 / 3,
        disagreement=True,
        n_valid=3,
        dissenters=["c"],
        criteria=criteria,
        item=None if item is None else item_text(item),
    )


def agent_result(*, stored: bool = True) -> EnsembleVerdict:
    """run-1 judged per step: the critics split on step 2 (the failed rm call)."""
    return unit_result(
        "run-1",
        {
            "step-1": ("PASS", "PASS", "PASS"),
            "step-2": ("FAIL", "FAIL", "PASS"),
            "step-3": ("PASS", "PASS", "PASS"),
            "step-4": ("PASS", "PASS", "PASS"),
        },
        agent_item() if stored else None,
    )


def chat_result() -> EnsembleVerdict:
    """chat-1 judged per turn with two criteria: split on turn 4's consistency."""
    return unit_result(
        "chat-1",
        {
            "turn-2.answers": ("PASS", "PASS", "PASS"),
            "turn-4.answers": ("PASS", "PASS", "PASS"),
            "turn-4.consistent": ("PASS", "FAIL", "FAIL"),
        },
        chat_item(),
    )


def structured_batch() -> BatchResult:
    return BatchResult.from_results([agent_result(), chat_result()])
