"""An alignment's record (``alignment.json``) as HTML: the page ``cross-judge report`` writes
and the fragment a notebook shows. Every figure with its gain and interval, gains clearly
above 0 marked, the refusals or the new versions, each critic's examples, every value
escaped, and a record not as ``cross-judge align`` writes it refused with the key named."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cross_judge.alignment import RECORD_KIND, figures_record
from cross_judge.errors import ConfigError
from cross_judge.report import alignment_fragment, alignment_page, is_alignment_record
from cross_judge.stats import AlignmentFigures, Figure

Values = tuple[float | None, float | None, list[float] | None]
"""A figure as the test writes it: before, after, the gain's interval."""

JURY: dict[str, Values] = {
    "consensus_kappa": (0.5954, 0.8623, [0.1157, 0.4114]),
    "consensus_accuracy": (0.7889, 0.9333, [0.0667, 0.2222]),
    "dawid_skene_accuracy": (0.7444, 0.9333, [0.1, 0.2778]),
    "effective_votes": (2.7539, 3.0, [-0.5364, 0.7168]),
}
CRITICS: dict[str, dict[str, Values]] = {
    "a": {"accuracy": (0.7222, 0.8, [0.0, 0.1667]), "kappa": (0.4552, 0.5835, [-0.0146, 0.2871])},
    "b": {
        "accuracy": (0.6889, 0.7889, [0.0333, 0.1667]),
        "kappa": (0.4014, 0.5761, [0.0579, 0.2952]),
    },
}


def figure(before: float | None, after: float | None, ci: list[float] | None) -> dict[str, Any]:
    return {"before": before, "after": after, "gain_ci": ci}


def record(
    *,
    critics: dict[str, dict[str, Values]] = CRITICS,
    refusals: list[str] | None = None,
    examples: dict[str, list[dict[str, str]]] | None = None,
    spend_usd: float | None = 0.0123,
    budget_usd: float | None = 0.5,
) -> dict[str, Any]:
    """A record shaped as ``AlignmentPlan.record()`` returns it (two critics, accepted)."""
    names = list(critics)
    return {
        "kind": RECORD_KIND,
        "method": "examples",
        "k": 2,
        "holdout": 0.3,
        "seed": 7,
        "shared": False,
        "gold_sha256": "4123e0a9c463ad6e25292ee934647e7a6d1af93e2e1cabeb702a5c37251ba846",
        "held_out": ["t-003", "t-007", "t-008"],
        "prompts": {name: f"pass-fail-{name}@4" for name in names},
        "derived_from": dict.fromkeys(names, "pass-fail@3"),
        "examples": examples
        if examples is not None
        else {
            name: [
                {"id": f"{name}-ex1", "label": "PASS", "reason": "critic wrong"},
                {"id": f"{name}-ex2", "label": "FAIL", "reason": "jury wrong"},
            ]
            for name in names
        },
        "spend_usd": spend_usd,
        "budget_usd": budget_usd,
        "instructions": {},
        "notes": [],
        "refusals": refusals or [],
        "figures": {
            "held_out_items": 3,
            "ci": 0.95,
            "resamples": 1000,
            "jury": {key: figure(*values) for key, values in JURY.items()},
            "critics": {
                name: {key: figure(*values) for key, values in rows.items()}
                for name, rows in critics.items()
            },
        },
    }


def row(html: str, title: str) -> str:
    """The before/after table's row whose heading is ``title`` (already escaped)."""
    found = re.search(rf'<tr[^>]*><th scope="row">{re.escape(title)}</th>(.*?)</tr>', html)
    assert found, f"no row {title!r}"
    return found.group(1)


def cells(html: str, title: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row(html, title))]


def test_the_hand_built_figures_are_shaped_as_figures_record_writes_them() -> None:
    def made(values: Values) -> Figure:
        before, after, ci = values
        return Figure(before, after, gain_ci=None if ci is None else (ci[0], ci[1]))

    figures = AlignmentFigures(
        n_items=3,
        critics={n: {k: made(v) for k, v in rows.items()} for n, rows in CRITICS.items()},
        jury={k: made(v) for k, v in JURY.items()},
        resamples=1000,
        ci=0.95,
    )
    assert figures_record(figures) == record()["figures"]


def test_every_figure_shows_before_after_gain_and_interval() -> None:
    html = alignment_fragment(record())
    titles = {
        "consensus_kappa": "jury: consensus kappa",
        "consensus_accuracy": "jury: consensus accuracy",
        "dawid_skene_accuracy": "jury: Dawid-Skene accuracy",
        "effective_votes": "jury: effective votes",
    }
    expected = {titles[k]: v for k, v in JURY.items()}
    for critic, rows in CRITICS.items():
        expected.update({f"{critic}: {k}": v for k, v in rows.items()})
    for title, (before, after, ci) in expected.items():
        assert before is not None and after is not None and ci is not None
        shown = cells(html, title)
        assert shown[:4] == [
            f"{before:.3f}",
            f"{after:.3f}",
            f"{after - before:+.3f}",
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}]",
        ], title


def test_a_gain_is_marked_only_when_its_interval_lies_above_zero() -> None:
    html = alignment_fragment(record())
    assert cells(html, "jury: consensus kappa")[4] == "above 0"
    assert cells(html, "b: kappa")[4] == "above 0"
    assert cells(html, "jury: effective votes")[4] == ""  # the interval spans 0
    assert cells(html, "a: accuracy")[4] == ""  # its interval starts at 0 exactly


def test_an_undefined_figure_shows_n_a_and_no_mark() -> None:
    critics: dict[str, dict[str, Values]] = {
        "a": {"accuracy": (0.7, 0.8, [0.01, 0.2]), "kappa": (None, 0.5, None)}
    }
    assert cells(alignment_fragment(record(critics=critics)), "a: kappa") == [
        "n/a",
        "0.500",
        "n/a",
        "n/a",
        "",
    ]


def test_the_summary_says_how_it_was_made_and_what_it_cost() -> None:
    summary = alignment_fragment(record()).split("</p>", 1)[0]
    for part in (
        "method <code>examples</code>",
        "k=2 examples per critic",
        "disjoint examples",
        "3 held-out items",
        "seed 7",
        "gold sha256 <code>4123e0a9c463</code>",
        "$0.0123 of a $0.5000 budget",
    ):
        assert part in summary, part
    assert "ad6e25" not in summary  # the prefix only


def test_an_unknown_spend_and_no_budget_are_said_so() -> None:
    summary = alignment_fragment(record(spend_usd=None, budget_usd=None)).split("</p>", 1)[0]
    assert "cost unknown" in summary and "no budget" in summary


def test_shared_examples_are_named_shared() -> None:
    shared = record()
    shared["shared"] = True
    assert "shared examples" in alignment_fragment(shared)


def test_an_accepted_alignment_lists_each_new_version_and_what_it_derived_from() -> None:
    html = alignment_fragment(record())
    verdict = html.split('id="alignment-verdict"', 1)[1].split("</section>", 1)[0]
    assert "Accepted" in verdict and "Refused" not in verdict
    for name in CRITICS:
        assert re.search(
            rf"<td>{name}</td><td><code>pass-fail-{name}@4</code></td>"
            r"<td><code>pass-fail@3</code></td>",
            verdict,
        )


def test_a_refused_alignment_shows_each_refusal() -> None:
    reasons = ["the jury's consensus kappa gained +0.010", "the effective votes fell"]
    verdict = alignment_fragment(record(refusals=reasons)).split('id="alignment-verdict"', 1)[1]
    assert "Refused" in verdict and "--force" in verdict
    for reason in reasons:
        assert f"<li>{reason.replace(chr(39), '&#x27;')}</li>" in verdict


def test_each_critics_examples_are_listed_with_id_label_and_reason() -> None:
    examples = alignment_fragment(record()).split('id="alignment-examples"', 1)[1]
    for name in CRITICS:
        assert f"<h3>{name}: <code>pass-fail-{name}@4</code></h3>" in examples
        assert re.search(rf"<code>{name}-ex1</code>.*?PASS.*?critic wrong", examples)
        assert re.search(rf"<code>{name}-ex2</code>.*?FAIL.*?jury wrong", examples)


def test_a_drafted_instruction_is_shown_with_its_critics_examples() -> None:
    drafted = record()
    drafted["method"] = "both"
    drafted["instructions"] = {"a": "Refund tickets answered with the policy PASS."}
    examples = alignment_fragment(drafted).split('id="alignment-examples"', 1)[1]
    a_part = examples.split("<h3>a:", 1)[1].split("<h3>b:", 1)[0]
    assert "Refund tickets answered with the policy PASS." in a_part
    assert "<code>a-ex1</code>" in a_part


def test_an_instructions_only_alignment_leaves_k_out_of_the_summary() -> None:
    drafted = record(examples={})
    drafted["method"] = "instructions"
    drafted["instructions"] = {"a": "Mind refunds.", "b": "Mind billing."}
    html = alignment_fragment(drafted)
    assert "examples per critic" not in html.split("</p>", 1)[0]
    assert "Mind refunds." in html and "Mind billing." in html


def test_the_records_notes_are_shown() -> None:
    noted = record()
    noted["notes"] = ["b: no training item it got wrong, so no instruction"]
    summary = alignment_fragment(noted).split('id="alignment-figures"', 1)[0]
    assert "<li>b: no training item it got wrong, so no instruction</li>" in summary


def test_a_record_without_instructions_or_notes_is_shown() -> None:
    older = record()
    del older["instructions"], older["notes"]
    assert "jury: consensus kappa" in alignment_fragment(older)


def test_hostile_names_ids_labels_reasons_and_refusals_are_escaped() -> None:
    evil = "<script>alert(1)</script>"
    critics = {evil: CRITICS["a"]}
    hostile = record(
        critics=critics,
        refusals=[evil],
        examples={evil: [{"id": evil, "label": evil, "reason": evil}]},
    )
    hostile["method"] = evil
    hostile["held_out"] = [evil]
    hostile["gold_sha256"] = '"><img src=x onerror=alert(1)>'
    hostile["derived_from"] = {evil: evil}
    hostile["instructions"] = {evil: evil}
    hostile["notes"] = [evil]
    page = alignment_page(hostile, title=evil)
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;: kappa" in page


def test_a_bidirectional_control_in_a_critic_name_is_shown_as_its_escape() -> None:
    html = alignment_fragment(record(critics={"a\u202eb": CRITICS["a"]}))
    assert "\u202e" not in html and "a\\u202eb: kappa" in html


def test_the_page_is_self_contained_with_no_script() -> None:
    page = alignment_page(record())
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page and "<script" not in page
    assert "--accent:" in page  # report.css, inlined
    assert "<title>cross-judge alignment: examples, k=2, 3 held-out items</title>" in page


def test_the_fragment_has_no_page_shell() -> None:
    html = alignment_fragment(record())
    assert html.startswith('<div class="cj-alignment">') and "<html" not in html


def test_a_missing_key_names_it_and_the_fix() -> None:
    broken = record()
    del broken["figures"]["jury"]["consensus_kappa"]["gain_ci"]
    with pytest.raises(ConfigError) as raised:
        alignment_page(broken, source="aligned/alignment.json")
    message = str(raised.value)
    assert message.startswith("aligned/alignment.json: ")
    assert "`figures.jury.consensus_kappa.gain_ci` is missing" in message
    assert "pass the alignment.json that cross-judge align wrote" in message


def test_a_wrong_type_names_the_key_and_what_it_should_be() -> None:
    broken = record()
    broken["k"] = "four"
    with pytest.raises(ConfigError, match=r"`k` is the string 'four', not an integer; pass"):
        alignment_fragment(broken)


def test_a_malformed_example_names_its_place() -> None:
    broken = record()
    broken["examples"]["a"][1] = {"id": "x", "label": "PASS"}
    with pytest.raises(ConfigError, match=re.escape("`examples.a[1].reason` is missing")):
        alignment_fragment(broken)


def test_a_record_of_another_kind_is_refused() -> None:
    other = record()
    other["kind"] = "cross-judge ranking"
    with pytest.raises(ConfigError, match="`kind` is the string 'cross-judge ranking'"):
        alignment_page(other)


def test_an_alignment_record_is_known_by_its_kind() -> None:
    assert is_alignment_record(record())
    assert is_alignment_record({"kind": RECORD_KIND})  # its keys are checked when shown
    assert not is_alignment_record({**record(), "kind": "cross-judge ranking"})
    assert not is_alignment_record([record()])
    assert not is_alignment_record({"order": [], "ratings": {}})
