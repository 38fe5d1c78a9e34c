"""Aligning a panel's critics with people's labels: :func:`align`.

It reads the gold labels, splits the labelled items of a batch into a training part and a
held-out part (:func:`~cross_judge.stats.split_gold`), chooses each critic's examples from
the training part (:func:`~cross_judge.stats.choose_examples`), builds each critic's next
prompt version with them, judges the held-out items with the aligned panel (the only
calls, under ``budget_usd``), and measures before against after on those items
(:func:`~cross_judge.stats.measure_alignment`). Nothing is written: the
:class:`~cross_judge.alignment.AlignmentPlan` it returns does that when asked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import Unpack

from .._extensions import provide
from .._item import Item
from ..batch import RunOptions
from ..budget import Budget
from ..critic import (
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    Critic,
    PromptExample,
    PromptSpec,
    load_prompt,
    next_version,
)
from ..errors import ConfigError
from ..stats import (
    ExampleChoice,
    GoldSplit,
    Prefer,
    choose_examples,
    measure_alignment,
    read_gold,
    split_gold,
)
from ..voting import strategy_name
from ._plan import AlignmentPlan, refusals_of

if TYPE_CHECKING:
    from ..ensemble import Ensemble
    from ..results import BatchResult
    from ..verdict import EnsembleVerdict

__all__ = ["Method", "align", "check_alignment"]

Method = Literal["examples", "instructions", "both"]
"""How critics are aligned: ``"examples"``, few-shot examples from the labelled items;
``"instructions"``, an instruction added to each critic's system prompt, drafted by an
editor critic from the cases that critic got wrong; ``"both"``."""

EDIT_PROMPT = "prompt-edit@1"
"""The packaged prompt the editor drafts instructions with."""

GUIDANCE_HEADER = "Guidance from people's labels:"
"""The line an added instruction follows in the system prompt."""

MAX_INSTRUCTION_CHARS = 600
"""An editor's instruction is cut to this many characters."""

_SLUG = re.compile(r"[^a-z0-9_-]+")


@provide("align")
async def align(
    results: BatchResult,
    gold: Mapping[str, str] | str | os.PathLike[str],
    panel: Ensemble,
    *,
    items: Mapping[str, str | Item] | Iterable[Item] | None = None,
    critics: Literal["each"] | Sequence[str] = "each",
    method: Method = "examples",
    editor: Critic | None = None,
    cases: int = 8,
    k: int = 4,
    holdout: float = 0.3,
    seed: int = 0,
    shared: bool = False,
    prefer: Prefer = "errors",
    resamples: int = 1000,
    ci: float = 0.95,
    panel_file: str | os.PathLike[str] | None = None,
    done: Iterable[EnsembleVerdict] = (),
    on_result: Callable[[EnsembleVerdict], None] | None = None,
    drafts: Mapping[str, str] | None = None,
    on_drafts: Callable[[dict[str, str]], None] | None = None,
    **run_options: Unpack[RunOptions],
) -> AlignmentPlan:
    """Align ``panel``'s critics with the ``gold`` labels of ``results`` (the panel's own
    batch, judged with the prompts its critics have now) and measure it.

    ``critics``: ``"each"`` aligns every critic, each with its own examples; a list names
    the critics to align (the others keep their prompts but still vote in the jury
    measured). ``k`` examples per critic, chosen from the training part, disjoint across
    critics unless ``shared=True``; ``prefer="random"`` takes any labelled items instead of
    those got wrong (the baseline the choice is measured against). ``holdout``: the share
    of the labelled items held out to measure on (stratified by label, by ``seed``).
    ``items``: the items by id (a mapping of id to text or :class:`~cross_judge.Item`, or
    items with ids); default: the text each result stored (``item_text``), which must be
    whole. ``run_options`` go to the measuring run (``concurrency``, ``progress``,
    ``budget_usd``, ...): ``budget_usd`` caps those calls (the held-out items judged by the
    aligned panel), and a number is first checked against an estimate from the batch's own
    cost per verdict, so a run that cannot fit makes no call. ``panel_file``: the panel
    file the panel was built from, so that :meth:`AlignmentPlan.write` writes one that
    uses the new
    prompts. The same batch, gold, seed and answers give the same plan.

    Resuming: ``done`` holds held-out results an earlier, interrupted alignment made (the
    same split and examples: every verdict's prompt is the aligned critic's new one, else
    that result is judged again); they are kept, not asked again. ``on_result`` is called
    with each new held-out result as it finishes, e.g. to append it to a file. With
    instructions, ``on_drafts`` is called with the editor's drafts (critic -> instruction)
    before any held-out item is judged, and ``drafts`` hands them back on a resumed run,
    so the editor is not asked (nor billed) again and the held-out results kept are those
    of the same prompts.

    Raises:
        ConfigError: a gold label outside the prompts' labels, too few labels for a
            held-out split, a critic to align whose prompt has no ``{examples}`` (or is no
            prompt file), a batch judged with other prompts than the panel's, a cascade,
            items missing or cut, an estimate over ``budget_usd``; each message says the
            fix.
    """
    from ..ensemble import Ensemble

    if not isinstance(panel, Ensemble):
        raise ConfigError(
            f"align needs the Ensemble that judged the batch, got {type(panel).__name__}; "
            "a cascade's tiers are aligned one at a time (align a tier's Ensemble with "
            "that tier's results)"
        )
    with_examples, with_instructions = _method_parts(method, editor)
    names = _critics_to_align(panel, critics)
    batch = results
    _check_batch(batch, panel)
    gold_file = read_gold(gold)
    labels = gold_file.items
    ids = [r.query_id for r in batch.verdicts]
    in_batch = set(ids)
    labelled = {i: label for i, label in labels.items() if i in in_batch}
    specs = {c.name: _prompt_of(c, with_examples) for c in panel.critics if c.name in names}
    _check_vocabulary(labelled, specs)
    split = split_gold(labelled, ids, holdout=holdout, seed=seed)
    chosen = (
        choose_examples(
            batch, labelled, split.train, names, k=k, shared=shared, seed=seed, prefer=prefer
        )
        if with_examples
        else {name: ExampleChoice(name, (), ()) for name in names}
    )
    by_id = _items_by_id(batch, items, [*split.train, *split.held_out])
    estimate = _estimated_cost(batch, panel, len(split.held_out))
    budget_usd = run_options.get("budget_usd")
    cap = budget_usd.limit_usd if isinstance(budget_usd, Budget) else budget_usd
    if cap is not None and estimate is not None and estimate > cap:
        raise ConfigError(
            f"measuring the alignment judges {len(split.held_out)} held-out items with "
            f"{len(panel.critics)} critics, about ${estimate:.4f} at the batch's own cost "
            f"per call, over budget_usd=${cap:.4f}; raise budget_usd or lower holdout"
        )
    drafted = Drafts()
    if with_instructions and drafts is not None:
        drafted = Drafts(text={n: t for n, t in drafts.items() if n in names}, editor="given")
    elif with_instructions:
        assert editor is not None  # _method_parts checked it
        drafted = await _draft_instructions(
            editor, batch, labelled, split.train, names, specs, by_id, cases=cases, seed=seed
        )
        if on_drafts is not None:
            on_drafts(dict(drafted.text))
    fingerprint = _gold_sha256(gold, labels)
    run_specs = {
        name: _aligned_spec(
            specs[name], name, specs, chosen[name], by_id, labelled, drafted.text.get(name), None
        )
        for name in names
    }
    aligned_panel = _with_prompts(panel, run_specs)
    after = await _judge_held_out(
        aligned_panel, [by_id[i] for i in split.held_out], done, on_result, run_options
    )
    jury = [c.name for c in panel.critics]
    figures = measure_alignment(
        labelled, split.held_out, batch, after, jury, resamples=resamples, ci=ci, seed=seed
    )
    provenance = _provenance(method, fingerprint, gold_file.source, split, seed, k, shared, figures)
    final = {
        name: _aligned_spec(
            specs[name],
            name,
            specs,
            chosen[name],
            by_id,
            labelled,
            drafted.text.get(name),
            {**provenance, "critic": name, **drafted.provenance(name)},
        )
        for name in names
    }
    spend = after.cost_usd
    if with_instructions:
        spend = None if spend is None or drafted.spend_usd is None else spend + drafted.spend_usd
    return AlignmentPlan(
        method=method,
        k=k,
        holdout=holdout,
        seed=seed,
        shared=shared,
        gold_sha256=fingerprint,
        split=split,
        examples={name: chosen[name] for name in names} if with_examples else {},
        instructions=dict(drafted.text),
        notes=tuple(drafted.notes),
        base_specs=dict(specs),
        prompts=final,
        figures=figures,
        spend_usd=spend,
        budget_usd=cap,
        estimate_usd=estimate,
        refusals=refusals_of(figures),
        after=after,
        aligned_panel=_with_prompts(panel, final),
        panel_file=None if panel_file is None else str(panel_file),
    )


async def _judge_held_out(
    panel: Ensemble,
    items: Sequence[Item],
    done: Iterable[EnsembleVerdict],
    on_result: Callable[[EnsembleVerdict], None] | None,
    run_options: RunOptions,
) -> BatchResult:
    """The held-out items judged by the aligned ``panel``, in ``items`` order: those in
    ``done`` judged whole (no failed call, :func:`~cross_judge.results.is_incomplete`) by
    exactly this panel's prompts kept, the others judged now (each handed to
    ``on_result`` as it finishes)."""
    from ..results import BatchResult as Batch, is_incomplete

    shas = {c.name: c.prompt_sha256 for c in panel.critics}
    wanted = {item.id for item in items}
    kept = {
        r.query_id: r
        for r in done
        if r.query_id in wanted
        and {v.critic_id: v.prompt_sha256 for v in r.verdicts} == shas
        and not is_incomplete(r)
    }
    todo = [item for item in items if item.id not in kept]
    fresh: dict[str, EnsembleVerdict] = {}
    if todo:
        async with panel.stream(todo, **run_options) as results:
            async for result in results:
                fresh[result.query_id] = result
                if on_result is not None:
                    on_result(result)
    ordered = [kept.get(item.id) or fresh.get(item.id) for item in items]
    return Batch(
        verdicts=[r for r in ordered if r is not None],
        critics=[c.name for c in panel.critics],
        voting=strategy_name(panel.voting),
    )


def check_alignment(
    panel: Ensemble,
    gold: Mapping[str, str],
    item_ids: Sequence[str],
    *,
    critics: Literal["each"] | Sequence[str] = "each",
    method: Method = "examples",
    editor: Critic | None = None,
    holdout: float = 0.3,
    seed: int = 0,
) -> None:
    """The checks :func:`align` makes before any call that need no results: the critics
    to align, their prompts' place for examples, the gold labels against their labels,
    and enough labels among ``item_ids`` for the held-out split. A front end that judges
    the items first (``cross-judge align``) calls it before judging, so bad input costs
    nothing.

    Raises:
        ConfigError: as :func:`align`, for those checks.
    """
    with_examples, _ = _method_parts(method, editor)
    names = _critics_to_align(panel, critics)
    specs = {c.name: _prompt_of(c, with_examples) for c in panel.critics if c.name in names}
    wanted = set(item_ids)
    labelled = {i: label for i, label in gold.items() if i in wanted}
    _check_vocabulary(labelled, specs)
    split_gold(labelled, item_ids, holdout=holdout, seed=seed)


def _critics_to_align(panel: Ensemble, critics: Literal["each"] | Sequence[str]) -> list[str]:
    names = [c.name for c in panel.critics]
    if not names:
        raise ConfigError("the panel has no critics to align")
    if critics == "each":
        return names
    if isinstance(critics, str):
        raise ConfigError(f"critics must be 'each' or a list of critic names, got {critics!r}")
    unknown = [name for name in critics if name not in names]
    if unknown or not critics:
        raise ConfigError(f"critics to align {list(critics)} must name critics of {names}")
    return [name for name in names if name in critics]


def _check_batch(batch: BatchResult, panel: Ensemble) -> None:
    """The batch is this panel's, judged with the prompts its critics have now."""
    if any(r.tiers for r in batch.verdicts):
        raise ConfigError(
            "these results come from a cascade; align one tier's Ensemble with that tier's "
            "results (BatchResult.from_results(r.tiers[i] for r in batch.verdicts ...))"
        )
    missing = [c.name for c in panel.critics if c.name not in batch.critics]
    if missing:
        raise ConfigError(
            f"critics {missing} did not judge the batch (its critics: {batch.critics}); "
            "align the panel whose results these are"
        )
    shown: dict[str, set[str]] = {}  # critic -> the prompts its verdicts name, one pass
    for result in batch.verdicts:
        for verdict in result.verdicts:
            if verdict.prompt_sha256:
                shown.setdefault(verdict.critic_id, set()).add(verdict.prompt_sha256)
    for critic in panel.critics:
        if shown.get(critic.name, {critic.prompt_sha256}) != {critic.prompt_sha256}:
            raise ConfigError(
                f"critic {critic.name!r} judged the batch with another prompt than the one it "
                "has now; the before figures would not be its prompt's: judge the items "
                "again with this panel, or pass the panel that judged them"
            )


def _method_parts(method: object, editor: Critic | None) -> tuple[bool, bool]:
    """Whether ``method`` adds examples, and instructions (which need ``editor``)."""
    if method not in ("examples", "instructions", "both"):
        raise ConfigError(f"method must be 'examples', 'instructions' or 'both', got {method!r}")
    with_instructions = method != "examples"
    if with_instructions and not isinstance(editor, Critic):
        raise ConfigError(
            f"method={method!r} needs editor=Critic(...): a strong model that drafts each "
            "critic's instruction from the cases it got wrong (its prompt is the packaged "
            f"{EDIT_PROMPT})"
        )
    return method != "instructions", with_instructions


def _prompt_of(critic: Critic, with_examples: bool = True) -> PromptSpec:
    """The critic's prompt, which must have a place for examples when they are added."""
    spec = critic.prompt
    if not isinstance(spec, PromptSpec) or critic.prompt_template != spec.template_text:
        raise ConfigError(
            f"critic {critic.name!r} has no prompt file (an inline template): alignment "
            "writes a new version of a prompt; give the critic a prompt file "
            "(prompt='pass-fail@3' or your own YAML with an {examples} placeholder)"
        )
    if with_examples and not spec.has_examples_place:
        raise ConfigError(
            f"critic {critic.name!r} uses prompt {spec.ref}, whose user_prompt_template has "
            "no {examples} placeholder to show examples in; add one (e.g. on the line before "
            "<item>) in a new version of the prompt, or use a packaged prompt that has one "
            "(pass-fail@3); or align with method='instructions', which needs none"
        )
    return spec


def _check_vocabulary(gold: Mapping[str, str], specs: Mapping[str, PromptSpec]) -> None:
    for name, spec in specs.items():
        if spec.labels is None:
            continue
        off = sorted({label for label in gold.values() if label not in spec.labels})
        if off:
            raise ConfigError(
                f"gold labels {off} are not among the labels of critic {name!r}'s prompt "
                f"{spec.ref} {list(spec.labels)}, so no example could show them; relabel "
                "those items in the prompt's vocabulary, or align with a prompt whose labels "
                "include them"
            )


def _items_by_id(
    batch: BatchResult,
    items: Mapping[str, str | Item] | Iterable[Item] | None,
    wanted: Sequence[str],
) -> dict[str, Item]:
    """The items ``wanted`` by id: from ``items``, else from the results' stored text."""
    found: dict[str, Item] = {}
    if items is None:
        results = {r.query_id: r for r in batch.verdicts}
        for item_id in wanted:
            stored = results[item_id].item
            if stored is None or stored.cut or stored.structured:
                why = (
                    "stored no item text (item_text=False)"
                    if stored is None
                    else f"stored a cut copy ({', '.join(stored.cut)})"
                    if stored.cut
                    else "is a structured item (a conversation, trajectory or images)"
                )
                raise ConfigError(
                    f"item {item_id!r} {why}; pass the items themselves: "
                    "align(..., items={id: text or Item}) or --items items.jsonl"
                )
            found[item_id] = Item(id=item_id, query=stored.query, context=dict(stored.context))
        return found
    pairs: Iterable[tuple[str, str | Item]]
    if isinstance(items, Mapping):
        pairs = items.items()
    else:
        pairs = ((item.id, item) for item in items if isinstance(item, Item) and item.id)
    given = dict(pairs)
    missing = [item_id for item_id in wanted if item_id not in given]
    if missing:
        raise ConfigError(
            f"{len(missing)} labelled items are not among the items given (first: "
            f"{missing[0]!r}); pass every item of the batch that has a gold label"
        )
    for item_id in wanted:
        value = given[item_id]
        item = value if isinstance(value, Item) else Item(id=item_id, query=str(value))
        if item.id != item_id:
            item = dataclasses.replace(item, id=item_id)
        if not item.query:
            raise ConfigError(
                f"item {item_id!r} has no query text; examples are shown as the item's text, "
                "so alignment takes items with a query"
            )
        found[item_id] = item
    return found


def _aligned_id(spec: PromptSpec, critic: str, specs: Mapping[str, PromptSpec]) -> str:
    """The new version's id: the prompt's, unless other critics to align share it (then
    each gets its own, ``<id>-<critic>``)."""
    sharing = [name for name, other in specs.items() if other.id == spec.id]
    if len(sharing) == 1:
        return spec.id
    return f"{spec.id}-{_SLUG.sub('-', critic.lower()).strip('-') or 'critic'}"


def _aligned_spec(
    spec: PromptSpec,
    critic: str,
    specs: Mapping[str, PromptSpec],
    choice: ExampleChoice,
    items: Mapping[str, Item],
    gold: Mapping[str, str],
    instruction: str | None,
    provenance: dict[str, Any] | None,
) -> PromptSpec:
    """The critic's next prompt version: its prompt with ``choice``'s examples (added to
    those it had) and ``instruction`` added to its system prompt."""
    fields = spec.model_dump(exclude={"source", "examples", "provenance"}, exclude_none=True)
    if instruction is not None:
        fields["system_prompt"] = with_instruction(spec.system_prompt, instruction)
    examples = [
        PromptExample(id=item_id, text=items[item_id].query, label=gold[item_id])
        for item_id in choice.ids
    ]
    kept = [e for e in spec.examples if e.id not in choice.ids]
    examples = kept + examples
    fields.update(
        id=_aligned_id(spec, critic, specs),
        version=next_version(spec.version),
        examples=examples,
        source=f"aligned from {spec.ref}",
    )
    if provenance is not None:
        fields["provenance"] = {
            "derived_from": spec.ref,
            "derived_from_sha256": spec.sha256,
            **provenance,
            "examples": list(choice.ids),
            "reasons": list(choice.reasons),
        }
    return PromptSpec(**fields)


def with_instruction(system_prompt: str, instruction: str) -> str:
    """``system_prompt`` with ``instruction`` added under :data:`GUIDANCE_HEADER` (after
    the instructions an earlier alignment added there)."""
    text = system_prompt.rstrip("\n")
    line = f"- {instruction}"
    if GUIDANCE_HEADER in text:
        return f"{text}\n{line}\n"
    return f"{text}\n\n{GUIDANCE_HEADER}\n{line}\n" if text else f"{GUIDANCE_HEADER}\n{line}\n"


@dataclasses.dataclass
class Drafts:
    """The editor's instructions by critic, the cases each came from, what they cost
    (``None``: a price unknown) and notes on critics left without one."""

    text: dict[str, str] = dataclasses.field(default_factory=dict)
    cases: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    editor: str | None = None
    spend_usd: float | None = 0.0
    notes: list[str] = dataclasses.field(default_factory=list)

    def provenance(self, critic: str) -> dict[str, Any]:
        """What a critic's new version records of its instruction."""
        if critic not in self.text:
            return {}
        return {
            "instruction": self.text[critic],
            "editor": self.editor,
            "cases": list(self.cases.get(critic, ())),
        }


def _shown_prompt(spec: PromptSpec) -> str:
    """The critic's prompt as the editor is shown it, its item fences renamed so they
    cannot be taken for the editor's own."""
    text = f"{spec.system_prompt.strip()}\n---\n{spec.user_prompt_template.strip()}"
    return text.replace("<item>", "[item]").replace("</item>", "[/item]")


async def _draft_instructions(
    editor: Critic,
    batch: BatchResult,
    gold: Mapping[str, str],
    train: Sequence[str],
    names: Sequence[str],
    specs: Mapping[str, PromptSpec],
    items: Mapping[str, Item],
    *,
    cases: int,
    seed: int,
) -> Drafts:
    """One instruction per critic, drafted by ``editor`` (on the packaged
    :data:`EDIT_PROMPT`) from up to ``cases`` training items that critic got wrong, each
    shown with the critic's label and reasoning beside the person's label. A critic with no
    such case, or whose draft is not a usable answer, keeps its system prompt (a note
    says so)."""
    if isinstance(cases, bool) or not isinstance(cases, int) or cases < 1:
        raise ConfigError(f"cases must be a whole number >= 1, got {cases!r}")
    drafting = dataclasses.replace(
        editor,
        prompt=load_prompt(EDIT_PROMPT),
        prompt_template=DEFAULT_PROMPT_TEMPLATE,
        system_prompt=DEFAULT_SYSTEM_PROMPT,
        labels=None,
    )
    said = {
        (r.query_id, v.critic_id): v for r in batch.verdicts for v in r.verdicts if v.error is None
    }
    drafts = Drafts(editor=f"{editor.vendor}:{editor.model}")
    for name in names:
        choice = choose_examples(batch, gold, train, [name], k=cases, seed=seed)[name]
        wrong = [
            i for i, why in zip(choice.ids, choice.reasons, strict=True) if why == "critic wrong"
        ]
        if not wrong:
            drafts.notes.append(f"{name}: no training item it got wrong, so no instruction")
            continue
        shown = "\n\n".join(
            f"<case>\nItem: {items[i].query.strip()}\n"
            f"Judge said: {said[i, name].kind} ({said[i, name].reasoning.strip() or 'no reason'})"
            f"\nPeople said: {gold[i]}\n</case>"
            for i in wrong
        )
        request = (
            f"The judge's prompt:\n<prompt>\n{_shown_prompt(specs[name])}\n</prompt>\n\n"
            f"Cases where the judge's label differed from people's:\n\n{shown}"
        )
        verdict = await drafting.judge(Item(id=f"edit-{name}", query=request))
        if drafts.spend_usd is not None:
            drafts.spend_usd = (
                None if verdict.cost_usd is None else drafts.spend_usd + verdict.cost_usd
            )
        instruction = " ".join(verdict.reasoning.split())[:MAX_INSTRUCTION_CHARS]
        if verdict.error is not None or not instruction:
            why = verdict.error or "an empty instruction"
            drafts.notes.append(f"{name}: the editor's draft was not usable ({why})")
            continue
        drafts.text[name] = instruction
        drafts.cases[name] = tuple(wrong)
    await drafting.aclose()
    return drafts


def _with_prompts(panel: Ensemble, specs: Mapping[str, PromptSpec]) -> Ensemble:
    """``panel`` with each named critic judging with its new prompt."""
    critics = [
        dataclasses.replace(
            c,
            prompt=specs[c.name],
            prompt_template=DEFAULT_PROMPT_TEMPLATE,
            system_prompt=DEFAULT_SYSTEM_PROMPT,
        )
        if c.name in specs
        else c
        for c in panel.critics
    ]
    return dataclasses.replace(panel, critics=critics)


def _estimated_cost(batch: BatchResult, panel: Ensemble, n_items: int) -> float | None:
    """What judging ``n_items`` with the panel costs at each critic's mean cost per
    verdict in the batch; ``None`` when some critic's cost is unknown."""
    costs: dict[str, list[float]] = {}  # critic -> its verdicts' known costs, one pass
    for result in batch.verdicts:
        for verdict in result.verdicts:
            if verdict.cost_usd is not None:
                costs.setdefault(verdict.critic_id, []).append(verdict.cost_usd)
    total = 0.0
    for critic in panel.critics:
        known = costs.get(critic.name)
        if not known:
            return None
        total += n_items * sum(known) / len(known)
    return total


def _gold_sha256(
    gold: Mapping[str, str] | str | os.PathLike[str], labels: Mapping[str, str]
) -> str:
    """sha256 of the gold file's bytes, or of a mapping's labels as sorted JSON."""
    if isinstance(gold, (str, os.PathLike)):
        return hashlib.sha256(Path(gold).read_bytes()).hexdigest()
    blob = json.dumps(sorted(labels.items()), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _provenance(
    method: str,
    gold_sha256: str,
    gold_source: str | None,
    split: GoldSplit,
    seed: int,
    k: int,
    shared: bool,
    figures: Any,
) -> dict[str, Any]:
    """What an aligned prompt version records about how it was made."""
    from ._plan import figures_record

    return {
        "method": method,
        "gold_sha256": gold_sha256,
        **({"gold_file": Path(gold_source).name} if gold_source else {}),
        "seed": seed,
        "k": k,
        "shared_examples": shared,
        "held_out": len(split.held_out),
        "figures": figures_record(figures),
    }
