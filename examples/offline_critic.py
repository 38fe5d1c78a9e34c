"""A Critic against the simulated vendor: no API key, no network.

    python examples/offline_critic.py
"""

from __future__ import annotations

import anyio

from cross_judge import Critic
from cross_judge.testing import Persona, Reply, VendorServer


async def main() -> None:
    async with VendorServer(
        [Persona("sim-a", accuracy=0.9, latency=0.05, style="think")],
        gold={"Felines (see also: Cats)": "MERGE"},
    ) as server:
        async with Critic(name="a", model="sim-a", vendor="custom", base_url=server.url) as critic:
            verdict = await critic.judge("Felines (see also: Cats)")
            print(verdict.kind, verdict.confidence, verdict.reasoning)

            # Misbehaviour is scripted per model; it comes back as a Verdict, never raised.
            server.script("sim-a", Reply.status(429, retry_after=0), Reply.html())
            failed = await critic.judge("Felines (see also: Cats)")
            print(failed.kind, failed.error_kind, failed.attempts, failed.error)


if __name__ == "__main__":
    anyio.run(main)
