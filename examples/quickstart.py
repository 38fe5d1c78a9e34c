"""Quick start: a three-critic panel judging one item, offline.

The critics are simulated by ``cross_judge.testing.VendorServer`` on 127.0.0.1, so this
runs with no API key and no network. To use real models, drop the server and give each
Critic a real vendor, e.g. ``Critic(name="ds", model="deepseek-flash", vendor="deepseek",
prompt="taxonomy-review@1")`` with ``DEEPSEEK_API_KEY`` set.

    python examples/quickstart.py
"""

from __future__ import annotations

import anyio

from cross_judge import Critic, Ensemble
from cross_judge.testing import Persona, VendorServer

ITEM = "Felines (see also: Cats)"


async def main() -> None:
    personas = [
        Persona("sim-careful", accuracy=0.95, latency=0.05, seed=1),
        Persona("sim-hasty", accuracy=0.7, latency=0.02, style="messy", seed=2),
        Persona("sim-thinker", accuracy=0.9, latency=0.1, style="think", seed=3),
    ]
    async with VendorServer(personas, gold={ITEM: "MERGE"}) as server:
        critics = [
            Critic(
                name=p.model,
                model=p.model,
                vendor="custom",
                base_url=server.url,
                prompt="taxonomy-review@1",
            )
            for p in personas
        ]
        async with Ensemble(critics, voting="majority") as panel:
            result = await panel.judge(ITEM)

    print(f"item:       {ITEM}")
    for v in result.verdicts:
        print(f"  {v.critic_id:12} {v.kind:8} confidence={v.confidence:.2f}  {v.reasoning}")
    print(f"consensus:  {result.consensus} (agreement {result.agreement_pct:.0%})")
    print(f"prompt:     {result.verdicts[0].prompt_id}@{result.verdicts[0].prompt_version}")
    print(f"elapsed:    {result.elapsed_s:.2f} s for {len(critics)} critics at once")


if __name__ == "__main__":
    anyio.run(main)
