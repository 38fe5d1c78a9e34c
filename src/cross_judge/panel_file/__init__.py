"""``PANEL.yaml``: a panel of critics and its vote, written down once and reviewed like code.

:func:`load_panel` reads and checks a panel file and returns a :class:`PanelSpec`;
:meth:`PanelSpec.build` turns it into an :class:`~cross_judge.ensemble.Ensemble` (a file
with ``critics:``) or a :class:`~cross_judge.cascade.Cascade` (a file with ``tiers:``). The
``cross-judge review`` command is built on the two. A panel file::

    voting: majority                  # default majority
    voting_kwargs: {priority: [REJECT, SPLIT, MERGE]}
    early_stop: false                 # optional: true (= staged), staged or cancel
    min_valid: 2                      # optional quorum
    deadline: 120                     # optional, seconds per item
    order: both                       # optional, pairs: fixed (default), random, cyclic, both
    on_flip: tie                      # optional, with order both: tie (default) or abstain
    pass_threshold: 0.6               # optional, a rubric panel: the total an item passes at
    concurrency: 16                   # optional, items in flight (the CLI's default)
    critics:
      - name: strict-deepseek
        model: deepseek-flash
        vendor: deepseek              # default deepseek
        api_key_env: DEEPSEEK_API_KEY # optional; default the vendor's own variable
        prompt: taxonomy-review@1     # a packaged id@version, or a path
        weight: 1.0
        temperature: 0.0
        max_tokens: 2000
        labels: [KEEP, REJECT]        # optional; default the prompt's
        base_url: https://...         # optional; required for vendor: custom
        timeout: 60                   # optional, seconds per attempt
        max_retries: 2                # optional
        samples: 1                    # optional: ask n times and vote (needs temperature > 0)
        calibration: {method: temperature, temperature: 1.7, n: 200, bins: 10,
                      ece_before: 0.21, ece_after: 0.04}  # optional, see below
        structured: auto              # optional: auto, schema, tool, json or off; default:
                                      #   follow the vendor's JSON mode, as before
        effort: high                  # optional: low, medium or high (a reasoning model;
                                      #   DeepSeek: high turns thinking on), or
                                      #   thinking_budget: 2048 (Anthropic >= 1024, Qwen)
        confidence: stated            # optional: stated (default), logprob or auto
        retry_truncated: true         # optional: ask once more, with twice max_tokens, when
                                      #   the answer was cut off (default true)
        family: openai                # optional: its model family; a ranking keeps it out of
                                      #   pairs with candidates of that family
        vision: true                  # optional: whether its model sees images (default:
                                      #   its vendor's; false abstains on items with images)

**Cascades.** A file has either ``critics:`` (one ensemble) or ``tiers:`` (a cascade:
cheapest tier first; an item goes on to the next tier only when the escalation rule says
the tier's result does not stand)::

    concurrency: 16
    tiers:
      - voting: majority              # each tier takes the keys of an ensemble above
        early_stop: true
        critics: [...]
      - critics: [...]
    escalate:                         # optional; default: on errors and fallbacks only
      agreement_below: 1.0            # a number in [0, 1] (.inf: always), or one per tier
      confidence_below: [0.8, null]   #   that can escalate (null: none at that tier)
      support_below: 0.6              # the confidence behind the consensus, per critic
      on_error: true                  # a critic failed
      on_fallback: true               # no vote decided (quorum, tie)
      on_dispute: true                # the valid answers disagree (default: rubric tiers
                                      #   only, per criterion); with rubric tiers every
                                      #   threshold may be per criterion id:
                                      #   support_below: {correct: 0.9, cites: 0.6}
    final: decide                     # or abstain: the last tier too may leave an item
                                      #   for a human (consensus ABSTAIN)

The ensemble keys (``voting``, ``voting_kwargs``, ``early_stop``, ``min_valid``,
``deadline``, ``order``, ``on_flip``, ``pass_threshold``) then belong to each tier, and
``escalate`` and ``final`` to cascades only. Critic names are unique across tiers (they
key the results). Fields of a tier are written as ``tiers[1].critics[0].vendor``.

Checked when loaded, before anything is billed: unknown fields (with a did-you-mean),
wrong types, unknown vendors (listing the known ones), unknown or invalid prompts,
duplicate critic names, the voting strategy and its arguments, the escalation thresholds
(one per tier that can escalate when a list). Each problem is reported as
``<file>:<line>: <field>: <what to change>``, with the field written as a path
(``critics[1].vendor``); all problems of a file are reported at once in a
:class:`PanelError` (a field that cannot be read at all hides the checks across fields,
such as duplicate names, until it is fixed).

**No secrets in files.** A field that looks like a literal key (``api_key``, ``token``,
``secret``, ...) is refused, and so is an ``api_key_env`` that is not an environment
variable name (one that looks like ``sk-...``). Neither value is ever repeated in a
message. Keys are read from the environment when the ensemble is built; a missing
variable is a :class:`PanelError` that names it.

**Base URLs** are checked when loaded (:func:`cross_judge.vendors.check_base_url`): a
port outside 1-65535, ``abc``, ``http://[::1``, a missing or unsupported scheme is
reported at ``critics[i].base_url`` with its line, never at call time. Credentials
(``user:password@``) are refused in a panel file.

**Answer settings.** ``structured``, ``effort``, ``thinking_budget``, ``confidence`` and
``retry_truncated`` are those of :class:`~cross_judge.core.Critic`: the answer shape asked
of the vendor (a schema it enforces, a forced tool, JSON, or nothing; ``auto`` the strongest
the endpoint takes), a reasoning model's effort or thinking budget, and where a verdict's
confidence comes from (``logprob`` needs ``labels`` and a vendor that serves token
probabilities). A bare ``off`` (which YAML reads as false) means ``off``. A value that is
not one of these, and one the critic's vendor cannot take (``structured: tool`` on an
OpenAI-compatible vendor, ``effort`` on a vendor with no known reasoning fields,
``confidence: logprob`` on Anthropic, a thinking budget below Anthropic's 1024), is
reported at its field and line with the fix; for two that conflict (a forced tool while
Anthropic thinks), at the later one.

**Calibrated confidence.** A critic's optional ``calibration:`` is the ``to_dict()``
mapping of a :class:`~cross_judge.reliability.ConfidenceCalibration` (``method``,
``temperature`` or ``breakpoints`` and ``values``, ``n``, ``bins``, ``ece_before``,
``ece_after``), as ``cross-judge stats OUT.jsonl --gold GOLD.jsonl --fit-confidence
temperature`` prints it; it becomes ``Critic(calibration=...)``, so each verdict that
states a confidence gets the calibrated one. Unknown keys (with a did-you-mean), missing
keys and values that break the fit's invariants are reported at the key's line.

**Simulated critics.** ``vendor: simulated`` critics are answered by a local
:class:`cross_judge.testing.VendorServer` (seeded random answers, not a language model),
for dry runs and the shipped examples. An optional ``persona:`` mapping shapes each one
with every field of :class:`~cross_judge.testing.Persona` but its model (``accuracy``,
``labels``, ``bias``, ``confidence: [low, high]``, ``latency``, ``jitter``, ``style``,
``seed``, ``fault_rate``, ``position_bias``, ``resample``); its model name (default
``sim-<name>``) selects it on the server, so simulated critics need distinct models
(across tiers too). ``resample`` defaults to ``samples`` > 1, so a critic's samples are
independent draws, not one answer repeated. ``position_bias`` is refused on a prompt that
shows no pair, and when the simulator knows no pair's better answer (it would show
nowhere). An optional top-level ``simulator:`` mapping configures that server::

    simulator:
      error_correlation: 0.5          # in [0, 1): above 0 the personas err together on
      difficulty_seed: 0              #   hard items, as real judges do
      items: items.jsonl              # ids -> item texts, for the files below
      gold: gold.jsonl                # {"id", "label"} lines (the file stats --gold
                                      #   reads), or {item text: label}; a pair's label
                                      #   (A, B or TIE) is its better answer
      difficulty: difficulty.jsonl    # {"id", "difficulty"} lines, or {item text: d}
      better: {"Query?": "Answer."}   # a query's better answer (null: a tie)
      capacity: 4                     # 429s beyond 4 concurrent calls
      batch_polls: 1                  # provider batches (--mode batch --batch-vendors
      batch_failure_rate: 0.0         #   custom): polls to end, failed and expired
      batch_expiry_rate: 0.0          #   request shares

Paths are relative to the panel file's folder and read when it is loaded; a file that
cannot be read, a bad line, gold ids none of which is an item's, or a gold label a
simulated critic does not answer is reported at its key. Without gold the simulator's
truth is a hash of each item's text, so simulated critics score at chance against the
user's labels: :meth:`PanelSpec.simulator_record` (which ``cross-judge review`` writes to
the run manifest as ``options.simulator``) says ``gold: false`` then.
``load_panel(path).build()`` starts one server for the simulated critics of every tier,
which lives as long as the ensemble or cascade (stopped when it is garbage collected, or
at exit). To control its lifetime, start it yourself::

    spec = load_panel("panel.yaml")
    with spec.simulator() as server:          # personas of every simulated critic
        ensemble = spec.build(simulator_url=server.url)

This package does not call any model, read items or write results. Its modules: the
schema and its checks (:mod:`~cross_judge.panel_file._schema`), reading a file
(:mod:`~cross_judge.panel_file._loader`), building what it describes
(:mod:`~cross_judge.panel_file._builder`), and the problems reported
(:mod:`~cross_judge.panel_file._problems`); import from ``cross_judge.panel_file``.
"""

from typing import TYPE_CHECKING

from .._lazy import LazyExports
from ..errors import PanelError
from ._loader import load_panel, parse_panel
from ._problems import PanelProblem
from ._schema import (
    SIMULATED_VENDOR,
    CriticSpec,
    EscalateSpec,
    PanelSpec,
    PersonaSpec,
    PolicySpec,
    SimulatorSpec,
    TierSpec,
)

__all__ = [
    "PLACEHOLDER_URL",
    "SIMULATED_VENDOR",
    "CriticSpec",
    "EscalateSpec",
    "PanelError",
    "PanelProblem",
    "PanelSpec",
    "PersonaSpec",
    "PolicySpec",
    "SimulatorSpec",
    "TierSpec",
    "load_panel",
    "parse_panel",
]

# Shown and pickled at this, their documented path. (PanelError keeps cross_judge.errors,
# where it is defined and documented.)
for _public in (
    CriticSpec,
    EscalateSpec,
    PanelProblem,
    PanelSpec,
    PersonaSpec,
    PolicySpec,
    SimulatorSpec,
    TierSpec,
    load_panel,
    parse_panel,
):
    _public.__module__ = __name__
del _public

# The names the layers above use from this package's modules, imported on first use.
if TYPE_CHECKING:
    from ._builder import PLACEHOLDER_URL

_exports = LazyExports(
    __name__,
    {
        "PLACEHOLDER_URL": "._builder",
    },
)


def __getattr__(name: str) -> object:
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names(globals())
