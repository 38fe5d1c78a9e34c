"""cross-judge 0.1 code, unchanged: a JudgePanel of Reviewers, run offline.

``JudgePanel`` and ``Reviewer`` keep 0.1's synchronous API; under them the new core asks
the reviewers concurrently. The simulated vendor stands in for real models here.

    python examples/legacy_panel.py
"""

from __future__ import annotations

from cross_judge import JudgePanel, Reviewer
from cross_judge.testing import Persona, VendorServer

ITEM = "Felines (see also: Cats)"
PROMPT = (
    "Review this candidate category and answer with JSON "
    '{"verdict": "KEEP|REJECT|SPLIT|MERGE", "confidence": 0-1, "rationale": "..."}.\n'
    f"<item>\n{ITEM}\n</item>"
)


def main() -> None:
    personas = [Persona(f"sim-{i}", accuracy=0.9, seed=i) for i in range(3)]
    with VendorServer(personas, gold={ITEM: "MERGE"}) as server:
        panel = JudgePanel(
            reviewers=[
                Reviewer(reviewer_id=p.model, model=p.model, vendor="custom", base_url=server.url)
                for p in personas
            ],
            strategy="majority",
        )
        result = panel.ask("felines", PROMPT)
    print(f"{result.item_id}: {result.consensus} (disagreement={result.disagreement})")
    for v in result.verdicts:
        print(f"  {v.reviewer_id}: {v.verdict} {v.confidence:.2f} {v.rationale}")


if __name__ == "__main__":
    main()
