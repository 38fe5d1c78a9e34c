"""`Item`: the one value a judgement travels as. Built from a string or keywords, it reaches
the critic's request unchanged, and a string keeps working wherever an item does."""

from __future__ import annotations

import pickle

import pytest

from cross_judge import Critic, Item
from cross_judge.batch import Item as BatchItem
from cross_judge.verdict import default_query_id


def critic(**kwargs: object) -> Critic:
    return Critic(
        name="c",
        model="m",
        vendor="custom",
        base_url="http://127.0.0.1:9/v1",
        prompt_template="Judge <item>{query}</item> against {rule}. JSON: kind, confidence.",
        **kwargs,  # type: ignore[arg-type]
    )


def test_an_item_made_from_its_query_alone_gets_the_default_id_and_empty_fields() -> None:
    item = Item(query="a short query")
    assert (item.id, item.context, item.meta) == ("a short query", {}, {})


def test_a_long_query_gets_the_hashed_default_id() -> None:
    query = "x" * 200
    assert Item(query=query).id == default_query_id(query) != query


def test_the_item_is_one_class_under_both_public_paths_and_pickles_by_the_batch_path() -> None:
    item = Item(query="q", context={"rule": "r"}, meta={"gold": "KEEP"})
    assert Item is BatchItem
    assert b"cross_judge.batch" in pickle.dumps(item)
    assert pickle.loads(pickle.dumps(item)) == item


def test_item_of_a_string_takes_the_keywords_as_its_fields() -> None:
    item = Item.of("q", query_id="id-1", context={"rule": "r"}, meta={"m": 1})
    assert item == Item(id="id-1", query="q", context={"rule": "r"}, meta={"m": 1})


def test_item_of_an_item_is_that_item() -> None:
    item = Item(query="q")
    assert Item.of(item) is item


@pytest.mark.parametrize("keyword", ["query_id", "context", "meta"])
def test_item_of_an_item_with_one_of_its_own_fields_again_raises_saying_the_fix(
    keyword: str,
) -> None:
    with pytest.raises(TypeError, match=rf"given an Item and {keyword}=.*model_copy"):
        Item.of(Item(query="q"), **{keyword: {} if keyword != "query_id" else "x"})


def test_a_request_built_from_an_item_is_the_request_built_from_its_query_and_context() -> None:
    judge = critic()
    from_item = judge.build_request(Item(query="q", context={"rule": "be kind"}))
    from_text = judge.build_request("q", {"rule": "be kind"})
    assert from_item == from_text
    assert "Judge <item>q</item> against be kind." in from_item.user


def test_an_item_and_a_context_both_given_to_a_critic_raise_saying_the_fix() -> None:
    with pytest.raises(TypeError, match="an item carries its own context"):
        critic().build_request(Item(query="q", context={"rule": "r"}), {"rule": "other"})


def test_a_critic_checks_an_items_prompt_as_it_checks_its_text() -> None:
    judge = critic()
    judge.check_renders(Item(query="q", context={"rule": "r"}))
    with pytest.raises(Exception, match="rule"):
        judge.check_renders(Item(query="q"))


def test_from_value_still_refuses_an_empty_query_that_the_keyword_form_lets_through() -> None:
    from cross_judge import ItemError

    with pytest.raises(ItemError, match="'query' is empty"):
        Item.from_value({"query": "  "})
    assert Item.of("  ").query == "  "  # a panel's judge() behaves as before items existed


def test_an_item_keys_a_mapping_though_its_context_is_a_dict() -> None:
    item = Item(query="q", context={"rule": "r"})
    same = Item(query="q", context={"rule": "r"})
    assert {item: "KEEP"}[same] == "KEEP"
    assert len({item, same, Item(query="q", context={"rule": "other"})}) == 2


def test_a_critics_request_is_made_of_its_system_turn_and_the_items_user_turn() -> None:
    from cross_judge.transport import Message, TextPart

    judge = critic(system_prompt="Be strict.")
    request = judge.build_request(Item(query="q", context={"rule": "r"}))
    assert request.messages == (
        Message("system", (TextPart("Be strict."),)),
        Message("user", (TextPart(judge.render_prompt("q", {"rule": "r"})),)),
    )
    assert (request.system, request.user) == ("Be strict.", request.messages[1].text())


def test_a_critic_without_a_system_prompt_sends_the_user_turn_alone() -> None:
    request = critic(system_prompt="").build_request(Item(query="q", context={"rule": "r"}))
    assert [m.role for m in request.messages] == ["user"]
