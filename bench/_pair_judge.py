"""A pairwise judge for the ranking benchmarks, behind an ``httpx.MockTransport``: written
for them, apart from the package's simulator (:mod:`cross_judge.testing`), so the fits are
not measured only on the model the simulator draws from.

It is the tests' scripted judge (``tests/unit/ranking/strength_judge.py``: it reads the two
responses of a ``pairwise`` request and answers in the OpenAI wire format) with its own
draw. Each critic (a model name) answers: the first shown wins with probability
``sigmoid(s_first - s_second + lean)`` (hidden log-strengths ``s``; ``lean``, the critic's
pull to the first-shown answer). Draws are seeded by the run's seed, the model, the pair as
shown and the call's number for that pair, so a run is reproducible and every call is its
own draw.
"""

from __future__ import annotations

import hashlib
import math
import random
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the scripted judge lives with the tests
from tests.unit.ranking.strength_judge import StrengthJudge

from cross_judge import Critic


class PairJudge(StrengthJudge):
    """Hidden strengths by answer text, each critic's lean, and the run's seed."""

    def __init__(
        self, strengths: Mapping[str, float], leans: Mapping[str, float], seed: int = 0
    ) -> None:
        super().__init__(strengths)
        self.leans = dict(leans)
        self.seed = seed
        self._visits: dict[tuple[str, str, str], int] = {}

    def answer(self, model: str, a: str, b: str) -> str:
        key = (model, a, b)
        visit = self._visits.get(key, 0)
        self._visits[key] = visit + 1
        digest = hashlib.sha256(f"{self.seed}|{model}|{a}|{b}|{visit}".encode()).digest()
        gap = self.strengths[a] - self.strengths[b] + self.leans[model]
        return "A" if random.Random(digest).random() < 1.0 / (1.0 + math.exp(-gap)) else "B"

    def critics(self) -> list[Critic]:
        """One critic per lean, each on the ``pairwise@2`` prompt (no response cache: the
        default has none)."""
        return [self.critic(model, prompt="pairwise@2") for model in self.leans]
