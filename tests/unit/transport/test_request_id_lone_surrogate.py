"""Batch mode's ``custom_id`` of an item whose id holds a lone surrogate (valid JSON, not
Unicode): a valid id, where hashing it raised UnicodeEncodeError (issue 25, point 9)."""

from __future__ import annotations

import re

from cross_judge.transport._batch_codecs import request_id


def test_an_item_id_with_a_lone_surrogate_has_a_request_id() -> None:
    ids = {request_id(f"x{chr(code)}y", "critic") for code in (0xD800, 0xDBFF, 0xDC80, 0xDFFF)}
    assert len(ids) == 4
    assert all(re.fullmatch(r"cj-[0-9a-f]{48}", i) for i in ids)


def test_an_ordinary_item_id_keeps_the_request_id_it_had() -> None:
    # The value before this change: a resumed batch job still recognises its results.
    assert request_id("plain", "a") == "cj-5bb26cb47188c185fa4200a216ae937dcdaf88a00d35664a"
