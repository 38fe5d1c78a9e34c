"""A provider batch's limits and the split of a round's requests by count and by bytes
(:func:`cross_judge.batch._provider_jobs.batch_limits`, :func:`cross_judge.transport.split`)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, strategies as st

from cross_judge.batch._provider_jobs import BATCH_ENVELOPE_BYTES, batch_limits
from cross_judge.transport import split
from cross_judge.transport._batch_codecs import ANTHROPIC_LIMITS, OPENAI_LIMITS, BatchRequest
from cross_judge.vendors import get_vendor

OPENAI = get_vendor("openai")


def test_the_apis_documented_limits_are_read_in_decimal_megabytes() -> None:
    assert (OPENAI_LIMITS.max_requests, OPENAI_LIMITS.max_bytes) == (50_000, 200_000_000)
    assert (ANTHROPIC_LIMITS.max_requests, ANTHROPIC_LIMITS.max_bytes) == (100_000, 256_000_000)


def test_a_batch_keeps_room_for_its_envelope_under_the_apis_limit() -> None:
    limits = batch_limits(OPENAI_LIMITS, OPENAI)
    assert limits.max_bytes == 200_000_000 - BATCH_ENVELOPE_BYTES
    assert limits.max_requests == 50_000


def test_a_vendors_max_batch_bytes_lowers_the_batch_size() -> None:
    config = dataclasses.replace(OPENAI, max_batch_bytes=1_000_000)
    assert batch_limits(OPENAI_LIMITS, config).max_bytes == 1_000_000 - BATCH_ENVELOPE_BYTES


def test_a_max_batch_bytes_above_the_apis_limit_does_not_raise_it() -> None:
    config = dataclasses.replace(OPENAI, max_batch_bytes=10**12)
    assert batch_limits(ANTHROPIC_LIMITS, config).max_bytes == 256_000_000 - BATCH_ENVELOPE_BYTES


def requests_of(sizes: list[int]) -> list[BatchRequest]:
    return [BatchRequest(f"cj-{n}", "m", {}, size) for n, size in enumerate(sizes)]


def test_large_image_requests_go_out_as_several_batches() -> None:
    config = dataclasses.replace(OPENAI, max_batch_bytes=10_000_000 + BATCH_ENVELOPE_BYTES)
    limits = batch_limits(OPENAI_LIMITS, config)
    batches = split(requests_of([4_000_000] * 7), limits, one_model=True)
    assert [len(b) for b in batches] == [2, 2, 2, 1]


@given(st.lists(st.integers(1, 1_000), max_size=60), st.integers(1, 8), st.integers(1_000, 5_000))
def test_every_batch_is_within_both_limits_and_keeps_the_order(
    sizes: list[int], max_requests: int, max_bytes: int
) -> None:
    limits = dataclasses.replace(OPENAI_LIMITS, max_requests=max_requests, max_bytes=max_bytes)
    requests = requests_of(sizes)
    batches = split(requests, limits, one_model=False)
    assert [r for b in batches for r in b] == requests
    assert all(0 < len(b) <= max_requests for b in batches)
    assert all(sum(r.size for r in b) <= max_bytes for b in batches)
