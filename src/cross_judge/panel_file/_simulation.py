"""What the simulator of a panel file knows: the truths its ``simulator:`` mapping points
at, read into what :class:`~cross_judge.testing.VendorServer` takes, and the record of
them that a run keeps.

A ``simulator:`` mapping names items by id in files (``gold:``, the user's gold file of
``{"id", "label"}`` lines, as ``cross-judge stats --gold`` reads it; ``difficulty:``, lines
of ``{"id", "difficulty"}``), while the simulator sees item texts. :func:`read_truth`
resolves each id through the items file (``items:``) to the text a critic sends: a plain
item's ``query`` gets a gold label and a difficulty; a pair's gold label (``A``, ``B`` or
``TIE``, in the item's own names) becomes that pair's better answer. Relative paths are
read from the panel file's folder. Inline mappings (``gold: {item text: label}``,
``difficulty: {item text: d}``, ``better: {query: text}``) are taken as written.

Rubrics: ``criteria_gold:`` gives each item's truth per criterion, as a file of
``{"id", "criteria": {criterion id: label}}`` lines (with ``items:``) or a mapping
``{item text: {criterion id: label}}``; ``criteria:`` (id -> requirement text) and
``criteria_labels:`` default to the rubric prompt of the simulated critics
(:func:`rubric_settings`), and :func:`rubric_problems` checks them against each other.

Latent strengths: ``strengths:`` maps candidate texts to strengths (log-worths), inline
(``{text: s}``) or as a file of ``{"candidate" | "text": ..., "strength": ...}`` lines
(:func:`read_strengths`); ``tie_rate:`` is Davidson's tie chance between equal strengths.
A candidate's strength is the same in every query.

Every problem is raised as a :class:`~cross_judge.panel_file._problems.FieldProblem` at
the key it belongs to, saying what to change. What it does not do: check the mapping's
types and ranges (the schema does) or start a simulator (the builder does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..batch import Item
from ..errors import ConfigError, ItemError
from ..stats import id_values, load_gold
from ._problems import FieldProblem, yaml_type

if TYPE_CHECKING:
    from ..testing import Persona
    from ._schema import CriticSpec, PanelSpec

__all__ = [
    "PAIR_GOLD_LABELS",
    "SimulatorTruth",
    "gold_mapping",
    "is_criteria_truth",
    "pair_prompt",
    "read_strengths",
    "read_truth",
    "rubric_problems",
    "rubric_settings",
    "simulator_record",
    "strengths_mapping",
]

PAIR_GOLD_LABELS = ("A", "B", "TIE")
"""The gold labels of a pair: candidate ``a`` is better, ``b`` is, neither is."""

_PAIR_FENCES = ("<item>", "<response_a>", "<response_b>")


@dataclass(frozen=True)
class SimulatorTruth:
    """What a panel file's simulator is told, ready for
    :class:`~cross_judge.testing.VendorServer`.

    ``gold``: item text -> label; ``better``: query -> the better answer's text, or
    ``None`` for a tie; ``pair_better``: ``(query, candidate a, candidate b)`` -> the
    better one, or ``None``; ``difficulty``: item text -> difficulty; ``criteria_gold``:
    item text -> {criterion id: label}; ``strengths``: candidate text -> latent strength.
    ``items_file``, ``gold_file``, ``difficulty_file``, ``criteria_gold_file``,
    ``strengths_file``: the files read (absolute paths), ``None`` when not given or given
    inline.
    """

    gold: dict[str, str] = field(default_factory=dict)
    better: dict[str, str | None] = field(default_factory=dict)
    pair_better: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    difficulty: dict[str, float] = field(default_factory=dict)
    items_file: Path | None = None
    gold_file: Path | None = None
    difficulty_file: Path | None = None
    criteria_gold: dict[str, dict[str, str]] = field(default_factory=dict)
    criteria_gold_file: Path | None = None
    strengths: dict[str, float] = field(default_factory=dict)
    strengths_file: Path | None = None

    @property
    def knows_pairs(self) -> bool:
        """Whether any pair's better answer is known, or candidates' strengths (so position
        bias can show)."""
        return bool(self.better or self.pair_better or self.strengths)

    @property
    def has_gold(self) -> bool:
        """Whether the truth of any item or pair is known."""
        return bool(self.gold or self.knows_pairs)


def pair_prompt(template: str | None) -> bool:
    """Whether a user prompt template shows a pair as the simulator reads one: an
    ``<item>`` fence, then ``<response_a>`` and ``<response_b>`` fences (as the packaged
    ``pairwise`` prompt does)."""
    if template is None:
        return False
    positions = [template.rfind(fence) for fence in _PAIR_FENCES]
    return -1 not in positions and positions == sorted(positions)


def gold_mapping(value: object, expected: str) -> dict[str, Any] | None:
    """``value`` when it is an inline mapping, ``None`` for a path (text) or nothing;
    ``ValueError`` (``expected <expected>, got <type>``) for anything else."""
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, dict):
        return value
    raise ValueError(f"expected {expected}, got {yaml_type(value)}")


def read_truth(
    *,
    items: str | None,
    gold: str | Mapping[str, str] | None,
    difficulty: str | Mapping[str, float] | None,
    better: Mapping[str, str | None] | None,
    base_dir: Path,
    criteria_gold: str | Mapping[str, Mapping[str, str]] | None = None,
) -> SimulatorTruth:
    """The truths of a ``simulator:`` mapping whose values the schema checked: paths are
    text, inline mappings hold text labels, numbers in [0, 1] and texts or ``None``.

    Raises:
        FieldProblem: a file that cannot be read or has a bad line (at its key, with the
            path it looked at); a gold or difficulty file without ``items``; ``items``
            with neither; gold ids none of which is an item's; a pair's gold label that
            is not ``A``, ``B`` or ``TIE``.
    """
    gold_is_file, difficulty_is_file = isinstance(gold, str), isinstance(difficulty, str)
    criteria_is_file = isinstance(criteria_gold, str)
    if items is None:
        for name, is_file in (
            ("gold", gold_is_file),
            ("difficulty", difficulty_is_file),
            ("criteria_gold", criteria_is_file),
        ):
            if is_file:
                raise FieldProblem(
                    (name,),
                    f"a {name} file names items by id, and the simulator sees their texts; "
                    "add items: ITEMS.jsonl (the items file you review), whose ids and texts "
                    f"it reads, or give {name} as a mapping {{item text: ...}}",
                )
    elif not (gold_is_file or difficulty_is_file or criteria_is_file):
        raise FieldProblem(
            ("items",),
            "is read only to find the items named by id in a gold or difficulty file; add "
            "gold: GOLD.jsonl (the file you give cross-judge stats --gold), or remove items",
        )
    items_file: Path | None = None
    by_id: dict[str, Item] = {}
    if items is not None:
        items_file = _resolve(items, base_dir)
        by_id = _read_items(items_file, items)
    labels: dict[str, str] = {}
    pair_better: dict[tuple[str, str, str], str | None] = {}
    difficulties: dict[str, float] = {}
    gold_file = difficulty_file = None
    if isinstance(gold, str):
        gold_file = _resolve(gold, base_dir)
        try:
            given = load_gold(gold_file)
        except ConfigError as exc:
            raise FieldProblem(("gold",), _unreadable(str(exc), gold)) from None
        _check_ids(given, by_id, "gold", items_file)
        for item_id, label in given.items():
            item = by_id.get(item_id)
            if item is not None:
                _add_gold(labels, pair_better, item, label)
    elif gold is not None:
        labels = {text.strip(): label for text, label in gold.items()}
    if isinstance(difficulty, str):
        difficulty_file = _resolve(difficulty, base_dir)
        values = _read_difficulty(difficulty_file, difficulty)
        _check_ids(values, by_id, "difficulty", items_file)
        difficulties = {
            by_id[item_id].query.strip(): value
            for item_id, value in values.items()
            if item_id in by_id
        }
    elif difficulty is not None:
        difficulties = {text.strip(): float(d) for text, d in difficulty.items()}
    criteria_truth: dict[str, dict[str, str]] = {}
    criteria_gold_file = None
    if isinstance(criteria_gold, str):
        criteria_gold_file = _resolve(criteria_gold, base_dir)
        rows = _read_criteria_gold(criteria_gold_file, criteria_gold)
        _check_ids(rows, by_id, "criteria_gold", items_file)
        criteria_truth = {
            by_id[item_id].query.strip(): truths
            for item_id, truths in rows.items()
            if item_id in by_id
        }
    elif criteria_gold is not None:
        criteria_truth = {text.strip(): dict(truths) for text, truths in criteria_gold.items()}
    return SimulatorTruth(
        gold=labels,
        better={
            query.strip(): (text.strip() if text is not None else None)
            for query, text in (better or {}).items()
        },
        pair_better=pair_better,
        difficulty=difficulties,
        items_file=items_file,
        gold_file=gold_file,
        difficulty_file=difficulty_file,
        criteria_gold=criteria_truth,
        criteria_gold_file=criteria_gold_file,
    )


_STRENGTHS_EXPECTED = (
    'the path of a file of JSONL lines {"candidate": ..., "strength": 1.2} ("text" also '
    "names the candidate) or a mapping {candidate text: strength}"
)
_STRENGTH_NUMBER = (
    "a finite number (a log-worth: 0 average, 1 about 2.7 times as likely to win as 0)"
)


def strengths_mapping(value: object) -> dict[str, Any] | None:
    """Check a ``strengths:`` value: ``None`` for a path (text) or nothing, the mapping
    when inline. Raises ``ValueError`` (both forms named) for anything else, and a
    :class:`FieldProblem` at the candidate's key for a strength that is not a finite
    number."""
    mapping = gold_mapping(value, _STRENGTHS_EXPECTED)
    for text, number in (mapping or {}).items():
        if not _is_finite_number(number):
            got = repr(number) if isinstance(number, (int, float)) else yaml_type(number)
            raise FieldProblem((str(text),), f"expected {_STRENGTH_NUMBER}, got {got}")
    return mapping


def read_strengths(
    value: str | Mapping[str, float] | None, base_dir: Path
) -> tuple[dict[str, float], Path | None]:
    """The strengths a checked ``strengths:`` value gives, by stripped candidate text, and
    the file read (``None`` when inline or absent).

    Raises:
        FieldProblem: at ``strengths``: the file cannot be read, a line is not
            ``{"candidate" | "text": text, "strength": number}``, a candidate is given two
            different strengths (in the file, or inline under keys that strip alike).
    """
    if value is None:
        return {}, None
    if not isinstance(value, str):
        out: dict[str, float] = {}
        for text, number in value.items():
            _add_strength(out, text, number, "")
        return out, None
    path = _resolve(value, base_dir)
    text = _read_text(path, value, key="strengths", what="the strengths")
    strengths: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        candidate = row.get("candidate", row.get("text")) if isinstance(row, dict) else None
        strength = row.get("strength") if isinstance(row, dict) else None
        if not (isinstance(candidate, str) and _is_finite_number(strength)):
            raise FieldProblem(
                ("strengths",),
                f'{path} line {number}: a strength line is {{"candidate": "...", "strength": '
                f'1.2}} ("text" also names the candidate), the strength {_STRENGTH_NUMBER}',
            )
        _add_strength(strengths, candidate, cast(float, strength), f"{path} line {number}: ")
    return strengths, path


def _add_strength(out: dict[str, float], text: str, number: float, where: str) -> None:
    key, strength = text.strip(), float(number)
    if key in out and out[key] != strength:
        raise FieldProblem(
            ("strengths",),
            f"{where}candidate {key!r} is given both {out[key]!r} and {strength!r}; keep one",
        )
    out[key] = strength


def _is_finite_number(value: object) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_criteria_truth(value: object) -> bool:
    """A mapping ``{criterion id: label}``, every id and label text."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    )


def _read_criteria_gold(path: Path, given: str) -> dict[str, dict[str, str]]:
    """``{id: {criterion id: label}}`` from a JSONL file of ``{"id", "criteria"}`` lines."""
    text = _read_text(path, given, key="criteria_gold", what="the per-criterion gold labels")

    def bad_line(number: int) -> FieldProblem:
        return FieldProblem(
            ("criteria_gold",),
            f'{path} line {number}: a per-criterion gold line is {{"id": "...", "criteria": '
            '{"correct": "PASS", "cites": "FAIL"}}: the item\'s id and its label per criterion',
        )

    def conflict(number: int, item: str, known: object, value: object) -> FieldProblem:
        return FieldProblem(
            ("criteria_gold",),
            f"{path} line {number}: id {item!r} is given both {known!r} and {value!r}; keep one",
        )

    return id_values(text, "criteria", is_criteria_truth, bad_line, conflict)


def rubric_settings(panel: PanelSpec) -> dict[str, Any]:
    """The rubric arguments of the :class:`~cross_judge.testing.VendorServer` for
    ``panel``'s simulated critics: ``criteria`` (the ``simulator:`` mapping's, else
    ``{id: requirement}`` of the rubric prompts of its simulated critics),
    ``criteria_labels`` (the mapping's, else the first such rubric's scale) and
    ``criteria_gold``; ``{}`` when there is no rubric."""
    config = panel.simulator_config
    criteria: dict[str, str] = {}
    labels: tuple[str, ...] | None = None
    for spec in panel.all_critics:
        prompt = spec.prompt_spec if spec.simulated else None
        rubric = prompt.rubric if prompt is not None else None
        if rubric is None:
            continue
        for c in rubric.criteria:
            criteria.setdefault(c.id, c.requirement)
        labels = labels or tuple(rubric.labels)
    if config is not None and config.criteria is not None:
        criteria = dict(config.criteria)
    if config is not None and config.criteria_labels is not None:
        labels = tuple(config.criteria_labels)
    out: dict[str, Any] = {}
    if criteria:
        out["criteria"] = criteria
    if labels is not None:
        out["criteria_labels"] = labels
    if config is not None and config.truth.criteria_gold:
        out["criteria_gold"] = config.truth.criteria_gold
    return out


def rubric_problems(
    panel: PanelSpec, critic_paths: Iterable[tuple[tuple[str | int, ...], CriticSpec]]
) -> list[FieldProblem]:
    """What does not fit in a simulated rubric: per-criterion gold or a persona's
    ``criteria_accuracy`` naming a criterion the simulator does not know, or a gold label
    off the scale; per-criterion gold with no criteria at all. ``critic_paths``: each
    critic with the path of its key in the file."""
    settings = rubric_settings(panel)
    criteria = settings.get("criteria", {})
    labels = settings.get("criteria_labels", ("PASS", "FAIL"))
    gold: dict[str, dict[str, str]] = settings.get("criteria_gold", {})
    problems: list[FieldProblem] = []
    fix = (
        "give the simulated critics a rubric prompt (criteria: [...]) or simulator: "
        "{criteria: {ID: REQUIREMENT TEXT}}"
    )
    if gold and not criteria:
        problems.append(
            FieldProblem(
                ("simulator", "criteria_gold"),
                f"gives truths per criterion, and the simulator knows no criterion; {fix}",
            )
        )
        return problems
    for item, truths in gold.items():
        unknown = sorted(set(truths) - set(criteria))
        off_scale = sorted(set(truths.values()) - set(labels))
        if unknown:
            problems.append(
                FieldProblem(
                    ("simulator", "criteria_gold"),
                    f"item {item[:60]!r} names criteria {unknown}, not among "
                    f"{sorted(criteria)}; fix the ids, or add them to the rubric",
                )
            )
        if off_scale:
            problems.append(
                FieldProblem(
                    ("simulator", "criteria_gold"),
                    f"item {item[:60]!r} has labels {off_scale}, not on the rubric's scale "
                    f"{list(labels)}; fix the labels, or set simulator: {{criteria_labels: "
                    "[...]}",
                )
            )
        if unknown or off_scale:
            break  # one item says what to fix; the rest are likely the same
    for path, spec in critic_paths:
        accuracy = spec.persona.criteria_accuracy if spec.persona is not None else None
        if not (spec.simulated and accuracy):
            continue
        unknown = sorted(set(accuracy) - set(criteria))
        if unknown:
            problems.append(
                FieldProblem(
                    (*path, "persona", "criteria_accuracy"),
                    f"names criteria {unknown}, not among the simulator's "
                    f"{sorted(criteria)}; fix the ids, or {fix}",
                )
            )
    return problems


def _resolve(value: str, base_dir: Path) -> Path:
    """A path from the panel file: ``~`` expanded, relative ones under ``base_dir``."""
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # "~someone/..." for an unknown user: taken as written
        path = Path(value)
    return path if path.is_absolute() else (base_dir / path).resolve()


def _unreadable(message: str, given: str) -> str:
    if Path(given).is_absolute():
        return message
    return f"{message}; relative paths are read from the panel file's folder"


def _read_text(path: Path, given: str, *, key: str, what: str) -> str:
    """The text of the file a panel file's ``key`` names (``given``, as written there).

    Raises:
        FieldProblem: at ``key``, the file cannot be read or is not UTF-8.
    """
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        message = f"{path}: cannot read {what} ({reason})"
        raise FieldProblem((key,), _unreadable(message, given)) from None


def _read_items(path: Path, given: str) -> dict[str, Item]:
    """The items of an items file by id (the id ``review`` gives each); lines that are
    not items are passed over (``review`` reports them), a repeated id keeps its first."""
    text = _read_text(path, given, key="items", what="the items")
    by_id: dict[str, Item] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = Item.from_value(json.loads(line), base_dir=path.parent)
        except (ValueError, ItemError):
            continue
        by_id.setdefault(item.id, item)
    return by_id


def _check_ids(
    named: Mapping[str, object], by_id: Mapping[str, Item], key: str, items_file: Path | None
) -> None:
    """Refuse a file none of whose ids is an item's: the wrong file, or ids of another
    form. Some unknown ids are fine (a gold file may label more items than one run)."""
    if not named or any(item_id in by_id for item_id in named):
        return
    example = next(iter(named))
    like = f"; the items' ids are like {next(iter(by_id))!r}" if by_id else ""
    raise FieldProblem(
        (key,),
        f"none of its {len(named)} ids is the id of an item in {items_file} (e.g. "
        f"{example!r}{like}); give the items file these ids come from",
    )


def _add_gold(
    labels: dict[str, str],
    pair_better: dict[tuple[str, str, str], str | None],
    item: Item,
    label: str,
) -> None:
    """A plain item's gold label into ``labels`` by its text; a pair's into
    ``pair_better`` as its better answer."""
    first, second = item.context.get("response_a"), item.context.get("response_b")
    if not (isinstance(first, str) and isinstance(second, str)):
        labels[item.query.strip()] = label
        return
    if label not in PAIR_GOLD_LABELS:
        raise FieldProblem(
            ("gold",),
            f"item {item.id!r} is a pair, and its gold label is {label!r}; a pair's gold label "
            "is A (candidate a is better), B or TIE",
        )
    better = {"A": first, "B": second, "TIE": None}[label]
    pair_better[(item.query, first, second)] = better


def _read_difficulty(path: Path, given: str) -> dict[str, float]:
    """``{id: difficulty}`` from a JSONL file of ``{"id", "difficulty"}`` lines."""
    text = _read_text(path, given, key="difficulty", what="the difficulties")

    def bad_line(number: int) -> FieldProblem:
        return FieldProblem(
            ("difficulty",),
            f'{path} line {number}: a difficulty line is {{"id": "...", "difficulty": '
            "0.7}, a number in [0, 1] (0 easiest, 1 hardest)",
        )

    def conflict(number: int, item: str, known: object, value: object) -> FieldProblem:
        return FieldProblem(
            ("difficulty",),
            f"{path} line {number}: id {item!r} is given both {float(cast(float, known))!r} "
            f"and {value!r}; keep one",
        )

    values = id_values(text, "difficulty", _is_difficulty, bad_line, conflict)
    return {item: float(value) for item, value in values.items()}


def _is_difficulty(value: object) -> bool:
    """A number in [0, 1] (not a bool, not NaN)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def simulator_record(panel: PanelSpec) -> dict[str, Any] | None:
    """What the simulator of ``panel``'s simulated critics knows, for a run's manifest;
    ``None`` for a panel without simulated critics. JSON-ready:

    * ``critics``: the simulated critics' names;
    * ``gold``: ``True`` when it was told the truth of any item (``gold:``), pair
      (a pair's gold label, or ``better:``) or rubric criterion (``criteria_gold:``).
      ``False`` means each item's truth was a
      label drawn from a hash of its text, so the critics' accuracy against the user's
      gold labels measures nothing (chance agreement);
    * ``gold_items``: plain items whose gold label it knew; ``better_answers``: pairs
      (and queries, from ``better:``) whose better answer it knew;
    * ``items_file``, ``gold_file``, ``difficulty_file``: the files read (absolute), or
      ``None``;
    * ``error_correlation``, ``difficulty_seed``, ``difficulties`` (items given one);
    * ``personas``: each simulated critic's persona settings, by critic name (with
      ``criteria_accuracy`` when set, and the content rules when on: ``forbidden_tools``,
      ``fail_unhandled_errors``, ``needs_context`` with ``fail_label``, ``vision``);
    * with a rubric only: ``criteria`` (the ids), ``criteria_gold_items`` (items whose
      per-criterion truth it knew), ``criteria_gold_file``;
    * with latent strengths only: ``strengths`` (how many candidates had one),
      ``strengths_file`` and ``tie_rate``;
    * with a size limit only: ``max_request_bytes``.
    """
    if not panel.simulated_critics:
        return None
    config = panel.simulator_config
    truth = config.truth if config is not None else SimulatorTruth()
    personas = {
        spec.name: _persona_record(spec.to_persona())
        for spec in panel.all_critics
        if spec.simulated
    }
    return {
        "critics": list(panel.simulated_critics),
        # A rubric's truth is per criterion: told it, the critics' accuracy is measured.
        "gold": truth.has_gold or bool(truth.criteria_gold),
        "gold_items": len(truth.gold),
        "better_answers": len(truth.pair_better) + len(truth.better),
        "items_file": _shown_path(truth.items_file),
        "gold_file": _shown_path(truth.gold_file),
        "difficulty_file": _shown_path(truth.difficulty_file),
        "error_correlation": config.error_correlation if config is not None else 0.0,
        "difficulty_seed": config.difficulty_seed if config is not None else 0,
        "difficulties": len(truth.difficulty),
        "personas": personas,
        **_rubric_record(panel, truth),
        **(
            {
                "strengths": len(truth.strengths),
                "strengths_file": _shown_path(truth.strengths_file),
                "tie_rate": config.tie_rate if config is not None else 0.0,
            }
            if truth.strengths
            else {}
        ),
        **(
            {"max_request_bytes": config.max_request_bytes}
            if config is not None and config.max_request_bytes is not None
            else {}
        ),
    }


def _rubric_record(panel: PanelSpec, truth: SimulatorTruth) -> dict[str, Any]:
    """``criteria`` (ids), ``criteria_gold_items`` and ``criteria_gold_file`` when the
    simulator grades a rubric; nothing otherwise (records of other panels unchanged)."""
    criteria = rubric_settings(panel).get("criteria")
    if not criteria:
        return {}
    return {
        "criteria": list(criteria),
        "criteria_gold_items": len(truth.criteria_gold),
        "criteria_gold_file": _shown_path(truth.criteria_gold_file),
    }


def _shown_path(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _persona_record(persona: Persona) -> dict[str, Any]:
    return {
        "model": persona.model,
        "accuracy": persona.accuracy,
        "labels": list(persona.labels),
        "bias": dict(persona.bias) if persona.bias is not None else None,
        "confidence": list(persona.confidence),
        "latency": persona.latency,
        "jitter": persona.jitter,
        "style": persona.style,
        "seed": persona.seed,
        "fault_rate": persona.fault_rate,
        "position_bias": persona.position_bias,
        "resample": persona.resample,
        **(
            {"criteria_accuracy": dict(persona.criteria_accuracy)}
            if persona.criteria_accuracy
            else {}
        ),
        **_content_record(persona),
    }


def _content_record(persona: Persona) -> dict[str, Any]:
    """A persona's content rules, when any is on (records of other personas unchanged)."""
    out: dict[str, Any] = {}
    if persona.forbidden_tools:
        out["forbidden_tools"] = list(persona.forbidden_tools)
    if persona.fail_unhandled_errors:
        out["fail_unhandled_errors"] = True
    if persona.needs_context:
        out["needs_context"] = True
    if out:
        out["fail_label"] = persona.fail_label
    if persona.vision != "ignores":
        out["vision"] = persona.vision
    return out
