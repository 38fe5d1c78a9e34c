"""A panel file's simulator can do what the Python one can: every ``Persona`` knob under
``persona:``, every ``VendorServer`` knob a run uses under ``simulator:`` (gold labels
from the user's gold file, pairs' better answers, item difficulty, capacity, provider
batch behaviour), relative paths resolved against the panel file's folder, each mistake
reported at its field and line with the fix, and a record of what the simulator knew.

Answers are seeded by the texts, so every outcome here is deterministic; the statistical
bounds allow 4.5 binomial standard errors, so even after a text changes a chance failure
has odds of about 1 in 150,000 per check.
"""

from __future__ import annotations

import gc
import json
import math
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cross_judge import Critic
from cross_judge.batch import BatchResult
from cross_judge.panel_file import PanelError, PanelSpec, load_panel
from cross_judge.testing import Persona, VendorServer

LABELS = ("KEEP", "REJECT", "SPLIT", "MERGE")
TOLERANCE_SE = 4.5


@pytest.fixture(autouse=True)
def _simulators_stop_with_their_test() -> Iterator[None]:
    """A built ensemble owns the simulator it started; collect so none outlives its test."""
    yield
    gc.collect()


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def write_jsonl(folder: Path, name: str, rows: Sequence[dict[str, Any]]) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def load(folder: Path, text: str) -> PanelSpec:
    return load_panel(write(folder, "panel.yaml", text))


def problem(folder: Path, text: str) -> PanelError:
    with pytest.raises(PanelError) as info:
        load(folder, text)
    return info.value


def items_and_gold(folder: Path, n: int) -> list[dict[str, str]]:
    """``n`` items (ids ``i0``...) in ``folder/data/items.jsonl`` and their gold labels, in
    the format ``cross-judge stats --gold`` reads, in ``folder/data/gold.jsonl``."""
    items = [{"id": f"i{k}", "query": f"Candidate category number {k}"} for k in range(n)]
    write_jsonl(folder, "data/items.jsonl", items)
    gold = [{"id": f"i{k}", "label": LABELS[(k * 7 + k // 5) % 4]} for k in range(n)]
    write_jsonl(folder, "data/gold.jsonl", gold)
    return items


def gold_of(folder: Path) -> dict[str, str]:
    """The gold labels :func:`items_and_gold` wrote, by id."""
    lines = (folder / "data/gold.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r["label"] for r in map(json.loads, lines)}


def sure_critic(
    server: VendorServer, model: str = "sim-a", prompt: str = "taxonomy-review@1"
) -> Critic:
    return Critic(
        name="judge", model=model, prompt=prompt, vendor="custom", base_url=server.url,
        api_key="unused", max_retries=0,
    )  # fmt: skip


ONE_CRITIC = """\
critics:
  - name: a
    vendor: simulated
    prompt: taxonomy-review@1
    persona: {accuracy: 1.0}
"""

PAIR_CRITIC = """\
critics:
  - name: a
    vendor: simulated
    prompt: pairwise
    persona: {accuracy: 1.0}
"""


# -- persona: every knob of Persona --------------------------------------------------------------


def test_every_persona_knob_reaches_the_persona(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """\
        simulator: {better: {"Q?": "x"}}
        critics:
          - name: a
            vendor: simulated
            model: sim-a
            prompt: pairwise
            temperature: 1.0
            persona:
              accuracy: 0.6
              labels: [A, B, TIE]
              bias: {TIE: 2.0}
              confidence: [0.5, 0.7]
              latency: 0.01
              jitter: 0.02
              style: fenced
              seed: 9
              fault_rate: 0.1
              position_bias: 0.4
              resample: true
        """,
    )
    assert spec.personas() == [
        Persona(
            "sim-a", accuracy=0.6, labels=("A", "B", "TIE"), bias={"TIE": 2.0},
            confidence=(0.5, 0.7), latency=0.01, jitter=0.02, style="fenced", seed=9,
            fault_rate=0.1, position_bias=0.4, resample=True,
        )
    ]  # fmt: skip


def test_resample_follows_samples_unless_the_persona_sets_it(tmp_path: Path) -> None:
    critic = "  - {name: a, vendor: simulated, temperature: 1, samples: 3"
    assert load(tmp_path, f"critics:\n{critic}}}\n").personas()[0].resample is True
    given = f"critics:\n{critic}, persona: {{resample: false}}}}\n"
    assert load(tmp_path, given).personas()[0].resample is False


@pytest.mark.parametrize(
    ("value", "got"),
    [("[0.9, 0.5]", "got [0.9, 0.5]"), ("[0.5]", "got [0.5]"), ("0.8", "got a number")],
)
def test_a_confidence_that_is_not_low_then_high_is_refused_with_the_fix(
    tmp_path: Path, value: str, got: str
) -> None:
    error = problem(
        tmp_path, f"critics:\n  - name: a\n    vendor: simulated\n    persona:\n"
        f"      confidence: {value}\n",
    )  # fmt: skip
    assert ":5: critics[0].persona.confidence: expected [low, high] with 0 <= low <= high <= 1" in (
        str(error)
    )
    assert "e.g. [0.6, 0.95]" in str(error) and got in str(error)


def test_position_bias_on_a_prompt_that_shows_no_pair_is_refused(tmp_path: Path) -> None:
    error = problem(
        tmp_path,
        "simulator: {better: {Q: x}}\ncritics:\n  - name: a\n    vendor: simulated\n"
        "    prompt: taxonomy-review@1\n    persona: {position_bias: 0.5}\n",
    )
    message = str(error)
    assert ":6: critics[0].persona.position_bias:" in message
    assert "taxonomy-review@1 shows no pair" in message
    assert "use prompt: pairwise, or remove position_bias" in message


def test_position_bias_without_any_better_answer_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, PAIR_CRITIC.replace("{accuracy: 1.0}", "{position_bias: 0.5}"))
    message = str(error)
    assert ":5: critics[0].persona.position_bias:" in message
    assert "knows no pair's better answer" in message
    assert "simulator: {items: ITEMS.jsonl, gold: GOLD.jsonl}" in message
    assert "simulator: {better: {QUERY: BETTER ANSWER}}" in message


# -- simulator: gold labels ----------------------------------------------------------------------


def test_a_gold_file_gives_the_simulator_each_items_label_by_id(tmp_path: Path) -> None:
    items = items_and_gold(tmp_path, 8)
    spec = load(
        tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n"
    )
    gold = gold_of(tmp_path)
    with spec.simulator() as server:
        critic = sure_critic(server)
        assert [critic.judge_sync(i["query"]).kind for i in items] == [gold[i["id"]] for i in items]


def test_gold_paths_are_relative_to_the_panel_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items_and_gold(tmp_path / "project", 3)
    write(tmp_path / "project", "panel.yaml",
          ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)  # not the panel's folder
    record = load_panel("project/panel.yaml").simulator_record()
    assert record is not None
    assert record["gold_file"] == str((tmp_path / "project/data/gold.jsonl").resolve())


def test_a_gold_mapping_gives_labels_by_item_text(tmp_path: Path) -> None:
    spec = load(tmp_path, ONE_CRITIC + "simulator:\n  gold: {Felines: MERGE, Dogs: KEEP}\n")
    with spec.simulator() as server:
        critic = sure_critic(server)
        assert [critic.judge_sync(t).kind for t in ("Felines", "Dogs")] == ["MERGE", "KEEP"]


def test_a_persona_scores_its_accuracy_against_the_users_gold(tmp_path: Path) -> None:
    items = items_and_gold(tmp_path, 200)
    spec = load(
        tmp_path,
        "critics:\n  - {name: a, vendor: simulated, prompt: taxonomy-review@1, "
        "persona: {accuracy: 0.9, seed: 1}}\n"
        "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n",
    )
    batch = spec.build().judge_many_sync(items, concurrency=8)
    accuracy = batch.against(tmp_path / "data/gold.jsonl")["a"].accuracy
    assert accuracy is not None
    assert abs(accuracy - 0.9) <= TOLERANCE_SE * math.sqrt(0.9 * 0.1 / 200)  # 0.095


def test_a_gold_file_without_the_items_file_is_refused(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    error = problem(tmp_path, ONE_CRITIC + "simulator:\n  gold: data/gold.jsonl\n")
    message = str(error)
    assert ":7: simulator.gold: a gold file names items by id" in message
    assert "add items: ITEMS.jsonl (the items file you review)" in message


def test_a_missing_gold_file_is_reported_with_the_path_it_looked_at(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    error = problem(
        tmp_path, ONE_CRITIC + "simulator:\n  items: data/items.jsonl\n  gold: data/nope.jsonl\n"
    )
    message = str(error)
    assert ":8: simulator.gold:" in message
    assert f"{tmp_path / 'data/nope.jsonl'}: cannot read the gold labels" in message
    assert "relative paths are read from the panel file's folder" in message


def test_a_missing_items_file_is_reported_at_items(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    error = problem(
        tmp_path, ONE_CRITIC + "simulator:\n  items: nope.jsonl\n  gold: data/gold.jsonl\n"
    )
    assert ":7: simulator.items:" in str(error) and "cannot read the items" in str(error)


def test_a_gold_line_that_is_not_id_and_label_is_reported_with_its_number(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    write(tmp_path, "data/gold.jsonl", '{"id": "i0", "label": "KEEP"}\n{"id": "i1"}\n')
    error = problem(
        tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n"
    )
    assert 'gold.jsonl line 2: a gold line is {"id": "...", "label": "..."}' in str(error)


def test_a_gold_file_naming_no_item_of_the_items_file_is_refused(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    write_jsonl(tmp_path, "data/gold.jsonl", [{"id": "x1", "label": "KEEP"}])
    error = problem(
        tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n"
    )
    message = str(error)
    assert "simulator.gold: none of its 1 ids is the id of an item in" in message
    assert "(e.g. 'x1'; the items' ids are like 'i0')" in message


def test_a_gold_label_the_critics_do_not_answer_is_refused(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    write_jsonl(tmp_path, "data/gold.jsonl", [{"id": "i0", "label": "MAYBE"}])
    error = problem(
        tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n"
    )
    message = str(error)
    assert ":6: simulator.gold: gold label 'MAYBE' is not a label of simulated critic 'a'" in (
        message
    )
    assert "(KEEP, REJECT, SPLIT, MERGE, UNCLEAR)" in message


def test_gold_given_as_something_else_is_refused_with_both_forms(tmp_path: Path) -> None:
    error = problem(tmp_path, ONE_CRITIC + "simulator: {gold: 3}\n")
    assert "simulator.gold: expected the path of a gold file" in str(error)
    assert "or a mapping {item text: label}, got a number" in str(error)


# -- simulator: pairs' better answers ------------------------------------------------------------


def pairs_and_gold(folder: Path) -> None:
    """Two pairs sharing one query, and their gold labels (``A``: candidate ``a``)."""
    pairs = [
        {"id": "p1", "query": "Q?", "a": "good", "b": "bad"},
        {"id": "p2", "query": "Q?", "a": "worse", "b": "best"},
        {"id": "p3", "query": "R?", "a": "same", "b": "alike"},
    ]
    write_jsonl(folder, "items.jsonl", pairs)
    gold = [{"id": "p1", "label": "A"}, {"id": "p2", "label": "B"}, {"id": "p3", "label": "TIE"}]
    write_jsonl(folder, "gold.jsonl", gold)


def test_the_gold_labels_of_pairs_are_their_better_answers(tmp_path: Path) -> None:
    pairs_and_gold(tmp_path)
    spec = load(tmp_path, PAIR_CRITIC + "simulator: {items: items.jsonl, gold: gold.jsonl}\n")
    with spec.simulator() as server:
        critic = sure_critic(server, prompt="pairwise")

        def kinds(query: str, a: str, b: str) -> list[str]:
            return [
                critic.judge_sync(query, context={"response_a": x, "response_b": y}).kind
                for x, y in ((a, b), (b, a))
            ]

        assert kinds("Q?", "good", "bad") == ["A", "B"]
        assert kinds("Q?", "worse", "best") == ["B", "A"]
        assert kinds("R?", "same", "alike") == ["TIE", "TIE"]


def test_a_pairs_gold_label_other_than_a_b_or_tie_is_refused(tmp_path: Path) -> None:
    pairs_and_gold(tmp_path)
    write_jsonl(tmp_path, "gold.jsonl", [{"id": "p1", "label": "KEEP"}])
    error = problem(tmp_path, PAIR_CRITIC + "simulator: {items: items.jsonl, gold: gold.jsonl}\n")
    assert "simulator.gold: item 'p1' is a pair, and its gold label is 'KEEP'" in str(error)
    assert "A (candidate a is better), B or TIE" in str(error)


def test_a_better_mapping_names_each_querys_better_answer(tmp_path: Path) -> None:
    spec = load(tmp_path, PAIR_CRITIC + 'simulator:\n  better: {"Q?": good, "R?": null}\n')
    with spec.simulator() as server:
        critic = sure_critic(server, prompt="pairwise")
        shown = [("Q?", "bad", "good"), ("R?", "one", "two")]
        assert [
            critic.judge_sync(q, context={"response_a": a, "response_b": b}).kind
            for q, a, b in shown
        ] == ["B", "TIE"]


def test_a_better_answer_that_is_not_text_or_null_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, PAIR_CRITIC + "simulator:\n  better: {Q: 3}\n")
    assert ":7: simulator.better: expected a mapping {query: the better answer's text" in str(error)


# -- simulator: difficulty, capacity, provider batches -------------------------------------------


def test_difficulty_by_id_from_a_file_and_by_text_from_a_mapping(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    write_jsonl(tmp_path, "difficulty.jsonl", [{"id": "i0", "difficulty": 0.9}])
    spec = load(
        tmp_path,
        ONE_CRITIC + "simulator:\n  error_correlation: 0.5\n  items: data/items.jsonl\n"
        "  difficulty: difficulty.jsonl\n",
    )
    assert spec.simulator().difficulty_of("Candidate category number 0") == 0.9
    inline = load(
        tmp_path, ONE_CRITIC + "simulator: {error_correlation: 0.5, difficulty: {Dogs: 0.1}}\n"
    )
    assert inline.simulator().difficulty_of("Dogs") == 0.1


def test_a_difficulty_outside_0_to_1_is_reported_with_its_line(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    write(
        tmp_path,
        "difficulty.jsonl",
        '{"id": "i0", "difficulty": 0.2}\n{"id": "i1", "difficulty": 2}\n',
    )
    error = problem(
        tmp_path,
        ONE_CRITIC + "simulator:\n  error_correlation: 0.5\n  items: data/items.jsonl\n"
        "  difficulty: difficulty.jsonl\n",
    )
    assert "difficulty.jsonl line 2: a difficulty line is" in str(error)
    assert '{"id": "...", "difficulty": 0.7}, a number in [0, 1]' in str(error)


def test_difficulty_without_error_correlation_is_refused(tmp_path: Path) -> None:
    error = problem(tmp_path, ONE_CRITIC + "simulator:\n  difficulty: {Dogs: 0.1}\n")
    assert ":7: simulator.difficulty: matters only with error_correlation above 0" in str(error)


def test_item_difficulty_changes_how_much_simulated_critics_err_together(tmp_path: Path) -> None:
    """Two critics of accuracy 0.7, errors correlated at 0.6: with every item of middling
    difficulty they err independently; with easy and hard items they err together."""
    items = items_and_gold(tmp_path, 200)
    gold = gold_of(tmp_path)

    def error_phi(difficulty: dict[str, float]) -> float:
        rows = [{"id": i, "difficulty": d} for i, d in difficulty.items()]
        write_jsonl(tmp_path, "difficulty.jsonl", rows)
        spec = load(
            tmp_path,
            "critics:\n"
            + "".join(
                f"  - {{name: {n}, vendor: simulated, prompt: taxonomy-review@1, "
                f"persona: {{accuracy: 0.7, seed: {s}}}}}\n"
                for n, s in (("a", 1), ("b", 2))
            )
            + "simulator: {error_correlation: 0.6, items: data/items.jsonl, "
            "gold: data/gold.jsonl, difficulty: difficulty.jsonl}\n",
        )
        return phi(spec.build().judge_many_sync(items, concurrency=8), gold)

    middling = error_phi({i["id"]: 0.5 for i in items})
    spread = error_phi({i["id"]: (0.02 if k % 2 else 0.98) for k, i in enumerate(items)})
    assert abs(middling) < 0.2
    assert spread > 0.6


def phi(batch: BatchResult, gold: dict[str, str]) -> float:
    """The phi coefficient of the two critics' errors against ``gold``."""
    wrong = [[v.kind != gold[r.query_id] for v in r.verdicts] for r in batch.verdicts]
    n = len(wrong)
    p_a = sum(w[0] for w in wrong) / n
    p_b = sum(w[1] for w in wrong) / n
    both = sum(w[0] and w[1] for w in wrong) / n
    return (both - p_a * p_b) / math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))


def test_capacity_and_provider_batch_settings_reach_the_simulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cross_judge.testing

    seen: dict[str, Any] = {}

    def recorder(personas: Sequence[Persona], **kwargs: Any) -> VendorServer:
        seen.update(kwargs)
        return VendorServer(personas, **kwargs)

    monkeypatch.setattr(cross_judge.testing, "VendorServer", recorder)
    spec = load(
        tmp_path,
        ONE_CRITIC + "simulator: {capacity: 2, batch_polls: 3, batch_failure_rate: 0.1, "
        "batch_expiry_rate: 0.05}\n",
    )
    spec.simulator()
    assert {k: seen[k] for k in ("capacity", "batch_polls", "batch_failure_rate")} == {
        "capacity": 2,
        "batch_polls": 3,
        "batch_failure_rate": 0.1,
    }
    assert seen["batch_expiry_rate"] == 0.05


def test_batch_failure_and_expiry_rates_above_1_together_are_refused(tmp_path: Path) -> None:
    error = problem(
        tmp_path, ONE_CRITIC + "simulator: {batch_failure_rate: 0.7, batch_expiry_rate: 0.5}\n"
    )
    assert (
        "simulator.batch_expiry_rate: batch_failure_rate + batch_expiry_rate must be at most 1"
        in (str(error))
    )


def test_an_items_file_with_no_file_that_needs_it_is_refused(tmp_path: Path) -> None:
    items_and_gold(tmp_path, 2)
    error = problem(tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl}\n")
    assert "simulator.items: is read only to find the items named by id" in str(error)


# -- the record of what the simulator knew -------------------------------------------------------


def test_the_record_says_when_simulated_critics_had_no_gold(tmp_path: Path) -> None:
    record = load(tmp_path, ONE_CRITIC).simulator_record()
    assert record is not None
    assert record["gold"] is False and record["gold_items"] == 0
    assert record["critics"] == ["a"] and record["personas"]["a"]["accuracy"] == 1.0


def test_the_record_counts_the_items_and_pairs_whose_truth_the_simulator_knew(
    tmp_path: Path,
) -> None:
    items_and_gold(tmp_path, 5)
    spec = load(
        tmp_path, ONE_CRITIC + "simulator: {items: data/items.jsonl, gold: data/gold.jsonl}\n"
    )
    record = spec.simulator_record()
    assert record is not None
    assert (record["gold"], record["gold_items"], record["better_answers"]) == (True, 5, 0)
    pairs_and_gold(tmp_path)
    pairs = load(tmp_path, PAIR_CRITIC + "simulator: {items: items.jsonl, gold: gold.jsonl}\n")
    record = pairs.simulator_record()
    assert record is not None
    assert (record["gold"], record["gold_items"], record["better_answers"]) == (True, 0, 3)


def test_a_panel_of_real_critics_has_no_simulator_record(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        "critics:\n  - {name: a, model: m, vendor: custom, base_url: 'http://127.0.0.1:1/v1'}\n",
    )
    assert spec.simulator_record() is None


def test_a_gold_keyword_argument_replaces_the_files_gold(tmp_path: Path) -> None:
    spec = load(tmp_path, ONE_CRITIC + "simulator:\n  gold: {Felines: MERGE}\n")
    with spec.simulator(gold={"Felines": "KEEP"}) as server:
        assert sure_critic(server).judge_sync("Felines").kind == "KEEP"
