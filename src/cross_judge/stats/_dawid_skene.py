"""Dawid-Skene EM: learn each critic's confusion matrix and the true labels without gold.

:func:`fit_votes` takes the votes as parallel sequences (item index, critic index, label), so
a crowd of hundreds of sparse annotators costs only its votes; :func:`dawid_skene` takes an
items x critics matrix of labels (``None`` where a critic gave no valid vote: missing, ERROR,
PARSE_FAIL, SKIPPED) and hands its votes to the same fit. Both fit the Dawid & Skene (1979)
latent class model by expectation-maximisation: class priors, one confusion matrix per critic
(true class x answered class) and, per item, the posterior probability of each class. With
``one_coin=True`` each critic has a single accuracy and spreads its errors evenly over the
other classes (Zhang et al. 2016), which needs less data per critic.

Each critic's confusion matrix is shrunk by ``shrinkage`` pseudo-votes per true class toward
a matrix with the critic's own accuracy (itself shrunk toward the panel's) on the diagonal and
the panel's errors elsewhere (empirical Bayes). Without it (the textbook
maximum-likelihood fit, crowd-kit's too) an annotator with a few dozen votes gets a matrix
fitted to its own handful of items, often near-perfect on some class, and the EM lets these
overconfident matrices drag the labels: on sparse crowds the converged fit fell below the
plain majority vote. A critic with thousands of votes is unaffected.

Items with the same votes have the same posterior, so with few critics the EM runs once per
distinct vote pattern, weighted by how many items share it; with many critics, once per item.
Either way each EM round costs time linear in the number of votes, and :func:`fit_votes` builds
no items x critics array. The E and M steps are vectorised with numpy when it is importable
(the ``cross-judge[stats]`` extra); a pure-Python path gives the same numbers (to rounding)
without it. A fit that estimates a critic clearly below chance warns
(:class:`StatisticsWarning`): the labels may be flipped. The module deliberately does not take
gold labels or initial confusion matrices, model item difficulty (GLAD), or know about
``BatchResult``: callers pass plain data. With ``errors="correlated"`` it fits the extension in
:mod:`cross_judge.stats._dawid_skene_correlated` (shared difficulty and a shared tempting
answer; numpy only), started from this fit.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError, StatisticsWarning
from ._em import EMEstimate, VoteUnits, iterate_em

if TYPE_CHECKING:
    from ._dawid_skene_correlated import Correlation

__all__ = [
    "Backend",
    "DawidSkeneFit",
    "Errors",
    "below_chance_critics",
    "dawid_skene",
    "fit_votes",
    "numpy_available",
]

Backend = Literal["auto", "python", "numpy"]
"""Which implementation runs the EM: ``"auto"`` uses numpy when it is importable."""

Errors = Literal["independent", "correlated"]
"""How critics' errors relate given the true label: independently (classic Dawid-Skene), or
correlated through item difficulty and a shared tempting answer."""

# Posteriors closer than this to the largest count as tied: the label then goes to the first
# class in order, whichever backend's rounding put it a hair ahead.
_TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class DawidSkeneFit:
    """The fitted Dawid-Skene model and what it says about each item and critic.

    Critics are numbered by their column in the labels matrix (their index in
    :func:`fit_votes`); items by their row (their index).

    - ``classes``: the label vocabulary, in the order used for ``posteriors`` and ties.
    - ``priors``: class -> estimated share of items with that true class.
    - ``confusion``: critic index -> true class -> answered class -> probability; each inner
      mapping sums to 1 and has no zeros (smoothing). A critic with no valid vote keeps the
      prior matrix (the panel's accuracy on the diagonal, its errors elsewhere; uniform
      without shrinkage), which has no effect on any posterior.
    - ``accuracy``: per critic, ``sum_k priors[k] * confusion[k][k]``, the estimated chance
      its vote is right; ``None`` for a critic with no valid vote (nothing to estimate from).
    - ``votes``: per critic, how many valid votes it gave.
    - ``posteriors``: per item, the probability of each class (aligned with ``classes``,
      summing to 1). An item with no valid vote gets the priors.
    - ``labels``: per item, the most probable class; ties (within 1e-9) go to the earliest
      class in ``classes``, so an item with no vote gets the priors' argmax.
    - ``iterations``: EM rounds run after the majority-vote start (0 when there is no vote).
    - ``log_likelihood``: natural-log marginal likelihood of all observed votes under the
      fitted parameters (0.0 when there is no vote).
    - ``converged``: the last round improved the EM objective (the log-likelihood plus the
      pseudo-votes' log-prior) per vote by less than ``tol``; also true when there was nothing
      to fit; false when ``max_iter`` stopped it.
    - ``one_coin``: whether the one-coin model was fitted.
    - ``errors``: ``"independent"`` (classic) or ``"correlated"``.
    - ``correlation``: with ``errors="correlated"``, the difficulty levels, each critic's
      accuracy at each level and the share of its errors on the shared tempting answer (see
      :class:`cross_judge.stats._dawid_skene_correlated.Correlation`); ``None`` otherwise. With
      it, ``confusion`` is each critic's confusion matrix averaged over difficulty and
      tempting answers, so ``accuracy`` still reads off its diagonal. Also ``None`` when
      there was nothing to correlate (no vote, or a single class).
    """

    classes: tuple[str, ...]
    priors: Mapping[str, float]
    confusion: Mapping[int, Mapping[str, Mapping[str, float]]]
    accuracy: tuple[float | None, ...]
    votes: tuple[int, ...]
    posteriors: tuple[tuple[float, ...], ...]
    labels: tuple[str, ...]
    iterations: int
    log_likelihood: float
    converged: bool
    one_coin: bool
    errors: Errors = "independent"
    correlation: Correlation | None = None


def dawid_skene(
    labels: Sequence[Sequence[str | None]],
    *,
    classes: Sequence[str] | None = None,
    one_coin: bool = False,
    errors: Errors = "independent",
    max_iter: int | None = None,
    tol: float = 1e-6,
    smoothing: float = 0.01,
    shrinkage: float = 8.0,
    backend: Backend = "auto",
    weights: Sequence[int] | None = None,
) -> DawidSkeneFit:
    """Fit the Dawid-Skene model to an items x critics label matrix by EM.

    ``labels[i][j]`` is critic ``j``'s label for item ``i``, or ``None`` when it gave no valid
    vote; a missing vote contributes nothing. Every row must have one entry per critic.
    ``classes`` is the vocabulary (default: the sorted labels seen); it fixes the order of
    the posteriors and breaks ties, and may hold classes nobody voted for. The matrix is read
    once into sparse votes and fitted by :func:`fit_votes`, which takes them directly (use it
    for many critics that each label a few items: it never builds this matrix).

    The EM starts from the soft majority vote (each item's vote shares), then alternates an
    M-step (priors and confusion matrices from the current posteriors) and an E-step
    (posteriors from Bayes' rule), and stops when the objective improves by less than ``tol``
    per observed vote or after ``max_iter`` rounds (``max_iter=0`` returns the majority
    start's first M and E steps).

    The M-step adds pseudo-votes to each critic's counts, so that no probability is ever 0
    and a critic with few votes does not look like an oracle: ``smoothing`` to every cell of
    every row (and of the priors), and ``shrinkage`` pseudo-votes to each row (true class)
    spread like a prior matrix ``m[j]``, recomputed each round from the current counts::

        confusion[j][t][a] = (n[j][t][a] + smoothing + shrinkage * m[j][t][a])
                             / (n[j][t] + K * smoothing + shrinkage)
        m[j][t][t] = acc[j] = (right[j] + shrinkage * pooled) / (votes[j] + shrinkage)
        m[j][t][a] = (1 - acc[j]) * errors[t][a]                  (a != t)

    ``pooled`` is the accuracy of all critics together and ``errors[t]`` how all critics'
    errors on true class ``t`` spread over the other classes (counts summed, plus
    ``smoothing``). So a row the critic has little data on falls back to the critic's own
    overall accuracy, itself shrunk toward the panel's when the critic has few votes. This
    is the MAP form of EM under Dirichlet priors set from the data (empirical Bayes); its
    objective is the log-likelihood plus each pseudo-count times the log of its
    probability. The default 8 pseudo-votes per row is negligible for a critic with hundreds
    of votes. ``shrinkage=0`` is the textbook fit (``smoothing`` only), which overfits
    sparse annotators (see the module docstring).

    With ``one_coin=True`` critic ``j``'s matrix is ``p_j`` on the diagonal and
    ``(1 - p_j) / (K - 1)`` elsewhere, ``p_j = (right + smoothing + shrinkage * pooled) /
    (votes + K * smoothing + shrinkage)``.

    With ``errors="correlated"`` the classic fit is the start of a second EM, for critics
    that err together (same hard items, same tempting wrong answer; see
    :mod:`cross_judge.stats._dawid_skene_correlated`); ``one_coin`` then makes each critic's
    errors off the tempting answer uniform. It needs numpy (``backend="python"`` is a
    ConfigError, and so is ``"auto"`` without numpy). ``max_iter`` bounds each EM: by default
    100 rounds for the classic fit and 1,000 for the correlated one, whose likelihood is
    flatter (difficulty levels trade off against accuracies).

    ``backend``: ``"numpy"`` (vectorised; raises ConfigError if numpy is not installed),
    ``"python"`` (standard library only) or ``"auto"`` (numpy when importable). Both give the
    same numbers to rounding.

    ``weights[i]`` (an integer >= 1 per row; default 1 each) is how many items row ``i``
    stands for: the fit is the one of the matrix with each row repeated that many times, and
    ``posteriors``/``labels`` stay one per row. A caller that has counted each distinct vote
    pattern (a streamed results file) fits in memory that does not grow with the items.

    Warns :class:`~cross_judge.errors.StatisticsWarning` when a critic's estimated accuracy
    is clearly below chance (see :func:`below_chance_critics`): the labels may be flipped.

    Edge cases: no items gives empty ``posteriors``/``labels`` with uniform priors; items
    with no vote get the priors; a critic with no valid vote gets ``accuracy`` ``None``; no
    vote at all gives uniform priors, zero iterations and ``converged=True``; a single class
    gives posteriors of ``(1.0,)``.

    Raises ConfigError for a label outside ``classes``, ragged rows, a string where a row
    was due, no label seen and no ``classes``, duplicate or empty ``classes``, or
    ``max_iter < 0``, ``tol < 0``, ``smoothing <= 0``, ``shrinkage < 0``, an unknown
    ``backend`` or ``errors``, ``errors="correlated"`` without numpy, or ``weights`` that
    are not one integer >= 1 per row.
    """
    vocabulary = _vocabulary(labels, classes)
    row_weights = _checked_weights(weights, len(labels))
    items, critics, codes, n_critics = _matrix_votes(labels, vocabulary)
    return _fit(
        items,
        critics,
        codes,
        n_items=len(labels),
        n_critics=n_critics,
        vocabulary=vocabulary,
        settings=_Settings(one_coin, errors, max_iter, tol, smoothing, shrinkage, backend),
        critic_names=None,
        distinct_pairs=True,
        item_weights=row_weights,
    )


def _checked_weights(weights: Sequence[int] | None, n_rows: int) -> list[int] | None:
    """``weights`` as a list, checked: one integer >= 1 per row (``None``: all 1)."""
    if weights is None:
        return None
    if isinstance(weights, (str, bytes)) or len(weights) != n_rows:
        raise ConfigError(
            f"weights must give one count per row of labels ({n_rows}), got {weights!r:.80}"
        )
    checked: list[object] = list(weights)
    for row, weight in enumerate(checked):
        if isinstance(weight, bool) or not isinstance(weight, numbers.Integral) or weight < 1:
            raise ConfigError(
                f"weights[{row}] is {weight!r}: each row stands for a whole number of "
                "items, at least 1"
            )
    return [int(weight) for weight in weights]


def fit_votes(
    items: Sequence[int],
    critics: Sequence[int],
    labels: Sequence[str | None],
    *,
    n_items: int,
    n_critics: int,
    classes: Sequence[str] | None = None,
    one_coin: bool = False,
    errors: Errors = "independent",
    max_iter: int | None = None,
    tol: float = 1e-6,
    smoothing: float = 0.01,
    shrinkage: float = 8.0,
    backend: Backend = "auto",
    critic_names: Sequence[str] | None = None,
) -> DawidSkeneFit:
    """Fit the Dawid-Skene model to sparse votes: vote ``v`` is critic ``critics[v]``'s label
    ``labels[v]`` for item ``items[v]``.

    The same model, settings and result as :func:`dawid_skene` (items numbered
    ``0 .. n_items - 1``, critics ``0 .. n_critics - 1``), in time and memory linear in the
    number of votes whatever the number of critics: about 1 s per 100,000 votes at most
    with numpy, even for 1,000 critics that each label a few hundred of 100,000 items. A
    ``None`` label is no vote and is skipped; a critic that votes twice on an item casts two
    votes. ``critic_names`` (one per critic) name the critics in the below-chance warning
    (default ``critic 3`` and so on).

    Raises ConfigError for sequences of different lengths, an index out of range, a label
    outside ``classes``, ``critic_names`` of the wrong length, and what :func:`dawid_skene`
    refuses.
    """
    if not len(items) == len(critics) == len(labels):
        raise ConfigError(
            f"items, critics and labels must be parallel (one entry per vote), got lengths "
            f"{len(items)}, {len(critics)} and {len(labels)}"
        )
    for name, value in (("n_items", n_items), ("n_critics", n_critics)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name} must be an integer >= 0, got {value!r}")
    if critic_names is not None and len(critic_names) != n_critics:
        raise ConfigError(
            f"critic_names has {len(critic_names)} names for {n_critics} critics: give one each"
        )
    vocabulary = _vocabulary([labels], classes)
    code: dict[str | None, int] = {label: index for index, label in enumerate(vocabulary)}
    code[None] = -1
    try:
        codes = list(map(code.__getitem__, labels))
    except (KeyError, TypeError):
        vote, bad = next((v, x) for v, x in enumerate(labels) if not _known(code, x))
        raise ConfigError(
            f"label {bad!r} (vote {vote}) is not one of the classes {list(vocabulary)!r}: "
            "add it to classes= or leave the vote out"
        ) from None
    kept_items, kept_critics, kept_codes = _checked_votes(
        items, critics, codes, n_items=n_items, n_critics=n_critics
    )
    return _fit(
        kept_items,
        kept_critics,
        kept_codes,
        n_items=n_items,
        n_critics=n_critics,
        vocabulary=vocabulary,
        settings=_Settings(one_coin, errors, max_iter, tol, smoothing, shrinkage, backend),
        critic_names=critic_names,
        distinct_pairs=False,
    )


def below_chance_critics(fit: DawidSkeneFit) -> tuple[int, ...]:
    """Critics whose estimated accuracy is clearly below chance, by index.

    A critic's chance accuracy is that of a critic answering at random with the same answer
    frequencies, ``sum_k priors[k] * P(answers k)`` (1/K for a uniform guess; a critic that
    always gives the same label is at chance, not below it). Clearly below: more than ``z``
    standard errors, ``z * sqrt(chance * (1 - chance) / votes)``, under it, ``z`` the
    one-sided normal quantile at 5% / (critics with a vote), so that a panel of J critics all
    exactly at chance is flagged in fewer than 5% of fits (``z`` = 2.3 for 5 critics, 3.9
    for 825). Such a critic
    is either adversarial or, more often, a sign that the fit has swapped the classes:
    when most critics are worse than chance, EM takes their answers for the truth. Empty for
    fewer than two classes.
    """
    k = len(fit.classes)
    if k < 2:
        return ()
    priors = [fit.priors[c] for c in fit.classes]
    scored = sum(n > 0 for n in fit.votes)
    # Bonferroni: a panel of critics all at chance warns in fewer than 5% of fits.
    z = NormalDist().inv_cdf(1.0 - 0.05 / max(scored, 1))
    flagged = []
    for j, (accuracy, n) in enumerate(zip(fit.accuracy, fit.votes, strict=True)):
        if accuracy is None or n == 0:
            continue
        matrix = fit.confusion[j]
        answers = [
            sum(p * matrix[t][a] for p, t in zip(priors, fit.classes, strict=True))
            for a in fit.classes
        ]
        chance = sum(p * q for p, q in zip(priors, answers, strict=True))
        if accuracy < chance - z * math.sqrt(chance * (1.0 - chance) / n):
            flagged.append(j)
    return tuple(flagged)


@dataclass(frozen=True)
class _Settings:
    one_coin: bool
    errors: Errors
    max_iter: int | None
    tol: float
    smoothing: float
    shrinkage: float
    backend: Backend


def _fit(
    items: Any,
    critics: Any,
    codes: Any,
    *,
    n_items: int,
    n_critics: int,
    vocabulary: tuple[str, ...],
    settings: _Settings,
    critic_names: Sequence[str] | None,
    distinct_pairs: bool,
    item_weights: list[int] | None = None,
) -> DawidSkeneFit:
    """The fit both entry points share, from checked votes (class indices, no -1);
    ``distinct_pairs``: no critic votes twice on an item (true of a matrix);
    ``item_weights``: how many items each item stands for (``None``: 1 each)."""
    errors = settings.errors
    if errors not in ("independent", "correlated"):
        raise ConfigError(f"errors must be 'independent' or 'correlated', got {errors!r}")
    correlated = errors == "correlated"
    rounds = settings.max_iter if settings.max_iter is not None else (1000 if correlated else 100)
    _check_settings(rounds, settings.tol, settings.smoothing, settings.backend)
    if not (settings.shrinkage >= 0 and math.isfinite(settings.shrinkage)):
        raise ConfigError(
            "shrinkage must be a finite number >= 0 (pseudo-votes per true class toward the "
            f"pooled confusion matrix), got {settings.shrinkage!r}"
        )
    if correlated and (settings.backend == "python" or not numpy_available()):
        raise ConfigError(
            "errors='correlated' needs numpy: pip install 'cross-judge[stats]'"
            + (", and leave backend='auto'" if settings.backend == "python" else "")
            + " (or fit the classic model, errors='independent')"
        )
    use_numpy = _resolve_backend(settings.backend)
    k = len(vocabulary)
    first_rounds = min(rounds, 100) if correlated else rounds
    prior = (settings.smoothing, settings.shrinkage)
    if use_numpy:
        units = _units_numpy(
            items,
            critics,
            codes,
            n_items,
            n_critics,
            k,
            distinct=distinct_pairs,
            item_weights=item_weights,
        )
    else:
        units = _units_python(
            _as_list(items),
            _as_list(critics),
            _as_list(codes),
            n_items,
            n_critics,
            item_weights=item_weights,
        )
    if len(units.weights) == 0:
        estimate = _nothing_to_fit(k, n_critics)
    elif use_numpy:
        estimate = _em_numpy(units, k, settings.one_coin, first_rounds, settings.tol, prior)
    else:
        estimate = _em_python(units, k, settings.one_coin, first_rounds, settings.tol, prior)
    correlation: Correlation | None = None
    if correlated and len(units.weights) and k > 1:
        from ._dawid_skene_correlated import fit_correlated

        estimate, correlation = fit_correlated(
            units.patterns(),
            k,
            estimate,
            one_coin=settings.one_coin,
            max_iter=rounds,
            tol=settings.tol,
            smoothing=settings.smoothing,
        )
    fit = _assemble(vocabulary, units, estimate, settings.one_coin)
    if correlated:
        fit = replace(fit, errors="correlated", correlation=correlation)
    _warn_below_chance(fit, critic_names)
    return fit


def _warn_below_chance(fit: DawidSkeneFit, critic_names: Sequence[str] | None) -> None:
    flagged = below_chance_critics(fit)
    if not flagged:
        return
    names = [critic_names[j] if critic_names is not None else f"critic {j}" for j in flagged]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    scored = sum(a is not None for a in fit.accuracy)
    most = 2 * len(flagged) > scored
    warnings.warn(
        f"Dawid-Skene estimates {len(flagged)} of {scored} critics below chance "
        f"({shown}){': most of them' if most else ''}. The labels may be flipped: when most "
        "critics are worse than chance, EM takes their answers for the truth and calls the "
        "good critics bad. Check the labels against a few gold items, fit with "
        "one_coin=True, or leave these critics out and fit again.",
        StatisticsWarning,
        stacklevel=4,
    )


def _check_settings(max_iter: int, tol: float, smoothing: float, backend: str) -> None:
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 0:
        raise ConfigError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if not (tol >= 0 and math.isfinite(tol)):
        raise ConfigError(f"tol must be a finite number >= 0, got {tol!r}")
    if not (smoothing > 0 and math.isfinite(smoothing)):
        raise ConfigError(
            "smoothing must be a finite number > 0 (it keeps probabilities off 0), "
            f"got {smoothing!r}"
        )
    if backend not in ("auto", "python", "numpy"):
        raise ConfigError(f"backend must be 'auto', 'python' or 'numpy', got {backend!r}")


def numpy_available() -> bool:
    """Whether numpy is installed (the fast backend and the correlated model need it)."""
    return importlib.util.find_spec("numpy") is not None


def _resolve_backend(backend: Backend) -> bool:
    """Whether to use numpy for ``backend``."""
    if backend == "python":
        return False
    available = numpy_available()
    if backend == "numpy" and not available:
        raise ConfigError(
            "backend='numpy' needs numpy: pip install 'cross-judge[stats]', or use backend='python'"
        )
    return available


def _vocabulary(
    labels: Sequence[Sequence[str | None]], classes: Sequence[str] | None
) -> tuple[str, ...]:
    if classes is not None:
        if isinstance(classes, str):
            raise ConfigError(f"classes must be a sequence of labels, not the string {classes!r}")
        vocabulary = tuple(classes)
        if None in vocabulary:
            raise ConfigError("classes must not contain None: None marks a missing vote")
        if len(set(vocabulary)) != len(vocabulary):
            raise ConfigError(f"classes has duplicates: {list(vocabulary)!r}; list each once")
        if not vocabulary:
            raise ConfigError("classes is empty: give at least one class")
        return vocabulary
    for item, row in enumerate(labels):
        if isinstance(row, str):
            raise _not_a_row(item, row)
    try:
        seen = set(itertools.chain.from_iterable(labels))
    except TypeError:  # an unhashable label: refused by the encoding with its place
        seen = {label for row in labels for label in row if _hashable(label)}
    seen.discard(None)
    if not seen:
        raise ConfigError("no labels seen, so the classes are unknown: pass classes=[...]")
    try:
        return tuple(sorted(label for label in seen if label is not None))
    except TypeError as exc:
        raise ConfigError(
            "labels of mixed types cannot be sorted into classes: pass classes=[...]"
        ) from exc


def _matrix_votes(
    labels: Sequence[Sequence[str | None]], vocabulary: tuple[str, ...]
) -> tuple[Any, Any, Any, int]:
    """The votes of an items x critics matrix: item, critic and class index of each (numpy
    arrays when numpy is installed, else lists)."""
    code: dict[str | None, int] = {label: index for index, label in enumerate(vocabulary)}
    code[None] = -1
    n_critics = len(labels[0]) if labels and not isinstance(labels[0], str) else 0
    for item, row in enumerate(labels):
        if isinstance(row, str):
            raise _not_a_row(item, row)
        if len(row) != n_critics:
            raise ConfigError(
                f"labels row {item} has {len(row)} entries but row 0 has {n_critics}: "
                "give every item one entry per critic (None for no vote)"
            )
    try:
        flat = list(map(code.__getitem__, itertools.chain.from_iterable(labels)))
    except (KeyError, TypeError):
        for item, row in enumerate(labels):
            critic = next((j for j, label in enumerate(row) if not _known(code, label)), -1)
            if critic >= 0:
                raise ConfigError(
                    f"label {row[critic]!r} (item {item}, critic {critic}) is not one "
                    f"of the classes {list(vocabulary)!r}: add it to classes= or map it to None"
                ) from None
        raise
    if numpy_available():
        import numpy as np

        matrix = np.array(flat, dtype=np.intp).reshape(len(labels), n_critics)
        items, critics = np.nonzero(matrix >= 0)
        return items, critics, matrix[items, critics], n_critics
    votes = [
        (position // n_critics, position % n_critics, answered)
        for position, answered in enumerate(flat)
        if answered >= 0
    ]
    items_l, critics_l, codes_l = (
        (list(x) for x in zip(*votes, strict=True)) if votes else ([], [], [])
    )
    return items_l, critics_l, codes_l, n_critics


def _is_index(value: object) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _hashable(label: object) -> bool:
    try:
        hash(label)
    except TypeError:
        return False
    return True


def _checked_votes(
    items: Sequence[int],
    critics: Sequence[int],
    codes: list[int],
    *,
    n_items: int,
    n_critics: int,
) -> tuple[Any, Any, Any]:
    """The votes with a label (``None`` dropped), indices checked to be in range: numpy
    arrays when numpy is installed (fast to check and to fit), else lists."""
    if numpy_available():
        import numpy as np

        arrays = [np.asarray(items), np.asarray(critics)]
        if all(a.ndim == 1 and a.dtype.kind in "iu" for a in arrays):
            label = np.asarray(codes, dtype=np.intp)
            keep = label >= 0
            item, critic = (a[keep].astype(np.intp) for a in arrays)
            if all(
                a.size == 0 or (a.min() >= 0 and a.max() < bound)
                for a, bound in ((item, n_items), (critic, n_critics))
            ):
                return item, critic, label[keep]
    kept = [v for v, answered in enumerate(codes) if answered >= 0]
    if len(kept) == len(codes):
        out_items, out_critics, out_codes = list(items), list(critics), codes
    else:
        out_items = [items[v] for v in kept]
        out_critics = [critics[v] for v in kept]
        out_codes = [codes[v] for v in kept]
    for name, values, bound in (
        ("items", out_items, n_items),
        ("critics", out_critics, n_critics),
    ):
        if not values:
            continue
        kinds = set(map(type, values))
        integral = kinds <= {int} or all(_is_index(x) for x in values)
        if not (integral and min(values) >= 0 and max(values) < bound):
            bad = next(
                (v, x) for v, x in enumerate(values) if not _is_index(x) or not 0 <= x < bound
            )
            raise ConfigError(
                f"{name}[{bad[0]}] = {bad[1]!r} is not an index in 0 .. {bound - 1} "
                f"(n_{name}={bound})"
            )
    return list(map(int, out_items)), list(map(int, out_critics)), out_codes


def _units_python(
    items: Sequence[int],
    critics: Sequence[int],
    codes: Sequence[int],
    n_items: int,
    n_critics: int,
    *,
    item_weights: Sequence[int] | None = None,
) -> VoteUnits:
    """Distinct vote patterns, found by grouping each item's sorted votes; a pattern's
    weight sums its items' ``item_weights`` (1 each by default)."""
    per_item: list[list[tuple[int, int]]] = [[] for _ in range(n_items)]
    for item, critic, answered in zip(items, critics, codes, strict=True):
        per_item[item].append((critic, answered))
    unit_of: dict[tuple[tuple[int, int], ...], int] = {}
    weights: list[int] = []
    item_unit: list[int] = []
    unit: list[int] = []
    critic_of: list[int] = []
    label: list[int] = []
    for item, votes in enumerate(per_item):
        if not votes:
            item_unit.append(-1)
            continue
        key = tuple(sorted(votes))
        u = unit_of.get(key)
        if u is None:
            u = unit_of[key] = len(weights)
            weights.append(0)
            for critic, answered in key:
                unit.append(u)
                critic_of.append(critic)
                label.append(answered)
        weights[u] += 1 if item_weights is None else item_weights[item]
        item_unit.append(u)
    return VoteUnits(unit, critic_of, label, weights, item_unit, n_critics)


def _units_numpy(
    items: Sequence[int],
    critics: Sequence[int],
    codes: Sequence[int],
    n_items: int,
    n_critics: int,
    n_classes: int,
    *,
    distinct: bool,
    item_weights: Sequence[int] | None = None,
) -> VoteUnits:
    """Distinct vote patterns when each fits in one integer (few critics, no critic voting
    twice on an item; ``distinct``: known not to), else one unit per voted item; a unit's
    weight sums its items' ``item_weights`` (1 each by default)."""
    import numpy as np

    item = np.asarray(items, dtype=np.intp)
    critic = np.asarray(critics, dtype=np.intp)
    label = np.asarray(codes, dtype=np.intp)
    voted = np.zeros(n_items, dtype=bool)
    voted[item] = True
    voted_items = np.flatnonzero(voted)
    item_unit = np.full(n_items, -1, dtype=np.intp)
    compress = n_critics * math.log2(n_classes + 1) <= 62
    if compress and not distinct:
        pairs = np.sort(item * n_critics + critic)
        compress = not bool((pairs[1:] == pairs[:-1]).any())
    per_item = None if item_weights is None else np.asarray(item_weights, dtype=np.int64)
    if not compress:
        item_unit[voted_items] = np.arange(voted_items.size)
        if per_item is None:
            weights = np.ones(voted_items.size, dtype=np.int64)
        else:
            weights = per_item[voted_items]
        return VoteUnits(item_unit[item], critic, label, weights, item_unit, n_critics)
    power = (n_classes + 1) ** np.arange(n_critics, dtype=np.int64)
    key = np.zeros(n_items, dtype=np.int64)
    np.add.at(key, item, (label + 1) * power[critic])
    _, first, inverse, counts = np.unique(
        key[voted_items], return_index=True, return_inverse=True, return_counts=True
    )
    item_unit[voted_items] = inverse.reshape(-1)
    if per_item is not None:
        counts = np.bincount(
            inverse.reshape(-1), weights=per_item[voted_items], minlength=counts.size
        ).astype(np.int64)
    representative = np.zeros(n_items, dtype=bool)
    representative[voted_items[first]] = True
    mine = representative[item]
    return VoteUnits(item_unit[item[mine]], critic[mine], label[mine], counts, item_unit, n_critics)


def _not_a_row(item: int, row: str) -> ConfigError:
    return ConfigError(
        f"labels must be items x critics (a list of rows), but row {item} is the string {row!r}"
    )


def _known(code: Mapping[str | None, int], label: object) -> bool:
    try:
        return label in code
    except TypeError:  # unhashable
        return False


def _nothing_to_fit(n_classes: int, n_critics: int) -> EMEstimate:
    uniform = [1.0 / n_classes] * n_classes
    return EMEstimate(
        priors=uniform,
        confusion=[[list(uniform) for _ in range(n_classes)] for _ in range(n_critics)],
        posteriors=[],
        log_likelihood=0.0,
        iterations=0,
        converged=True,
    )


def _em_python(
    units: VoteUnits,
    n_classes: int,
    one_coin: bool,
    max_iter: int,
    tol: float,
    prior: tuple[float, float],
) -> EMEstimate:
    """EM in the standard library: loops over units, their votes and the classes."""
    smoothing, shrinkage = prior
    k_range = range(n_classes)
    weights = [float(w) for w in units.weights]
    # (critic, answered class) for each vote of each unit.
    votes: list[list[tuple[int, int]]] = [[] for _ in weights]
    for u, j, a in zip(units.unit, units.critic, units.label, strict=True):
        votes[u].append((j, a))
    n_votes = sum(w * len(v) for w, v in zip(weights, votes, strict=True))
    posteriors: list[list[float]] = []
    for unit_votes in votes:
        shares = [0.0] * n_classes
        for _, answered in unit_votes:
            shares[answered] += 1.0
        posteriors.append([s / len(unit_votes) for s in shares])
    pseudo: list[Any] = []  # the last M-step's pseudo-counts, for the objective
    asked_by = [0] * units.n_critics  # critics with no vote keep the prior: not in the objective
    for j in units.critic:
        asked_by[j] += 1

    def m_step(post: list[list[float]]) -> tuple[list[float], list[list[list[float]]]]:
        class_mass = [0.0] * n_classes
        counts = [
            [[0.0] * n_classes for _ in k_range] for _ in range(units.n_critics)
        ]  # critic x true x answered
        for w, unit_votes, p in zip(weights, votes, post, strict=True):
            wp = [w * x for x in p]
            for k in k_range:
                class_mass[k] += wp[k]
            for j, answered in unit_votes:
                counts_j = counts[j]
                for k in k_range:
                    counts_j[k][answered] += wp[k]
        total = sum(weights)
        priors = [(m + smoothing) / (total + n_classes * smoothing) for m in class_mass]
        right = [sum(c[k][k] for k in k_range) for c in counts]
        asked = [sum(map(sum, c)) for c in counts]
        pooled = (sum(right) + smoothing) / (sum(asked) + n_classes * smoothing)
        if one_coin:
            pseudo[:] = [pooled]
            return priors, [
                _one_coin_matrix(
                    (r + smoothing + shrinkage * pooled) / (n + n_classes * smoothing + shrinkage),
                    n_classes,
                )
                for r, n in zip(right, asked, strict=True)
            ]
        pooled_errors = [
            [0.0 if a == t else sum(c[t][a] for c in counts) + smoothing for a in k_range]
            for t in k_range
        ]
        pooled_errors = [[x / (sum(row) or 1.0) for x in row] for row in pooled_errors]
        extra = [_row_prior(c, pooled_errors, pooled, smoothing, shrinkage) for c in counts]
        pseudo[:] = extra
        confusion = [
            [
                [(x + e) / (sum(row) + n_classes * smoothing + shrinkage) for x, e in pairs]
                for row, ex in zip(critic_counts, critic_extra, strict=True)
                for pairs in [list(zip(row, ex, strict=True))]
            ]
            for critic_counts, critic_extra in zip(counts, extra, strict=True)
        ]
        return priors, confusion

    def e_step(
        priors: list[float], confusion: list[list[list[float]]]
    ) -> tuple[list[list[float]], float]:
        log_priors = [math.log(p) for p in priors]
        # log P(answered | true) as a column over true classes, per critic and answer.
        log_columns = [
            [[math.log(matrix[k][answered]) for k in k_range] for answered in k_range]
            for matrix in confusion
        ]
        post: list[list[float]] = []
        log_likelihood = 0.0
        for w, unit_votes in zip(weights, votes, strict=True):
            scores = list(log_priors)
            for j, answered in unit_votes:
                scores = [s + x for s, x in zip(scores, log_columns[j][answered], strict=True)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            norm = sum(exps)
            post.append([e / norm for e in exps])
            log_likelihood += w * (top + math.log(norm))
        return post, log_likelihood

    def objective(
        log_likelihood: float, priors: list[float], confusion: list[list[list[float]]]
    ) -> float:
        log_prior = smoothing * sum(map(math.log, priors))
        if one_coin:
            on = smoothing + shrinkage * pseudo[0]
            off = (n_classes - 1) * smoothing + shrinkage * (1.0 - pseudo[0])
            for matrix, n in zip(confusion, asked_by, strict=True):
                if not n:
                    continue
                log_prior += on * math.log(matrix[0][0])
                if n_classes > 1:
                    log_prior += off * math.log(1.0 - matrix[0][0])
        else:
            log_prior += sum(
                e * math.log(x)
                for matrix, extra, n in zip(confusion, pseudo, asked_by, strict=True)
                if n
                for row, ex in zip(matrix, extra, strict=True)
                for x, e in zip(row, ex, strict=True)
            )
        return log_likelihood + log_prior

    priors, confusion, posteriors, log_likelihood, iterations, converged = iterate_em(
        m_step, e_step, objective, posteriors, max_iter=max_iter, tol=tol, n_votes=n_votes
    )
    return EMEstimate(priors, confusion, posteriors, log_likelihood, iterations, converged)


def _row_prior(
    counts: list[list[float]],
    pooled_errors: list[list[float]],
    pooled: float,
    smoothing: float,
    shrinkage: float,
) -> list[list[float]]:
    """One critic's pseudo-counts (true x answered): ``smoothing`` in every cell plus
    ``shrinkage`` per row spread like its prior matrix, the critic's own accuracy (shrunk
    toward the pooled one by ``shrinkage`` votes) on the diagonal and the rest shaped like
    the pooled errors."""
    k_range = range(len(counts))
    right = sum(counts[t][t] for t in k_range)
    accuracy = (right + shrinkage * pooled) / (sum(map(sum, counts)) + shrinkage or 1.0)
    return [
        [
            smoothing + shrinkage * (accuracy if a == t else (1.0 - accuracy) * pooled_errors[t][a])
            for a in k_range
        ]
        for t in k_range
    ]


def _one_coin_matrix(accuracy: float, n_classes: int) -> list[list[float]]:
    """``accuracy`` on the diagonal, the rest spread evenly over the other classes."""
    wrong = (1.0 - accuracy) / max(n_classes - 1, 1)
    return [[accuracy if a == k else wrong for a in range(n_classes)] for k in range(n_classes)]


def _em_numpy(
    units: VoteUnits,
    n_classes: int,
    one_coin: bool,
    max_iter: int,
    tol: float,
    prior: tuple[float, float],
) -> EMEstimate:
    """The same EM as :func:`_em_python`, each step a few array operations over the votes.

    Sums over votes go through ``np.bincount`` (one pass, one thread per class), never an
    items x critics array: time and memory grow with the votes, not with critics x items.
    ``np.einsum`` rather than ``@`` for the one small product: BLAS spreads ``@`` over
    threads that, on a busy 2-CPU machine, made a fit 16 times slower.
    """
    import numpy as np

    smoothing, shrinkage = prior
    k, n_critics = n_classes, units.n_critics
    unit = np.asarray(units.unit, dtype=np.intp)
    cell = np.asarray(units.critic, dtype=np.intp) * k + np.asarray(units.label, dtype=np.intp)
    weights = np.asarray(units.weights, dtype=np.float64)
    n_units = weights.size
    vote_weight = weights[unit]
    weighted = bool((weights != 1.0).any())  # False when there is one unit per item
    n_votes = float(vote_weight.sum())
    total = float(weights.sum())
    unit_label = unit * k + np.asarray(units.label, dtype=np.intp)
    # Posteriors are kept class x unit: reductions over the classes then run across units.
    shares = np.bincount(unit_label, minlength=n_units * k).reshape(n_units, k).T.astype(float)
    posteriors = shares / shares.sum(axis=0)
    eye = np.eye(k, dtype=bool)
    pseudo: list[Any] = [None]
    # Critics with no vote keep their prior matrix: it is no part of the objective.
    has_votes = np.bincount(np.asarray(units.critic, dtype=np.intp), minlength=n_critics) > 0

    def m_step(post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        priors = (np.einsum("ku,u->k", post, weights) + smoothing) / (total + k * smoothing)
        mass = np.take(post, unit, axis=1)  # true class x vote
        if weighted:
            mass *= vote_weight
        # counts[j, true, answered]
        counts = np.stack([np.bincount(cell, m, minlength=n_critics * k) for m in mass])
        counts = counts.reshape(k, n_critics, k).transpose(1, 0, 2)
        right = np.trace(counts, axis1=1, axis2=2)
        asked = counts.sum(axis=(1, 2))
        pooled = (right.sum() + smoothing) / (asked.sum() + k * smoothing)
        if one_coin:
            pseudo[0] = pooled
            accuracy = (right + smoothing + shrinkage * pooled) / (
                asked + k * smoothing + shrinkage
            )
            wrong = (1.0 - accuracy) / max(k - 1, 1)
            confusion = np.where(eye, accuracy[:, None, None], wrong[:, None, None])
        else:
            pooled_errors = np.where(eye, 0.0, counts.sum(axis=0) + smoothing)
            row_sums = pooled_errors.sum(axis=1, keepdims=True)
            pooled_errors /= np.where(row_sums > 0, row_sums, 1.0)
            own = (right + shrinkage * pooled) / np.maximum(asked + shrinkage, 1e-300)
            mean = np.where(eye, own[:, None, None], (1.0 - own)[:, None, None] * pooled_errors)
            extra = smoothing + shrinkage * mean
            pseudo[0] = extra
            confusion = (counts + extra) / (
                counts.sum(axis=2, keepdims=True) + k * smoothing + shrinkage
            )
        return priors, confusion

    def e_step(priors: np.ndarray, confusion: np.ndarray) -> tuple[np.ndarray, float]:
        # log_rows[true, j * k + answered] = log confusion[j, true, answered]
        log_rows = np.log(confusion).transpose(1, 0, 2).reshape(k, n_critics * k)
        per_vote = np.take(log_rows, cell, axis=1)  # true class x vote
        scores = np.stack([np.bincount(unit, s, minlength=n_units) for s in per_vote])
        scores += np.log(priors)[:, None]
        top = scores.max(axis=0)
        exps = np.exp(scores - top)
        norm = exps.sum(axis=0)
        log_evidence = top + np.log(norm)
        return exps / norm, float(np.dot(weights, log_evidence))

    def objective(log_likelihood: float, priors: np.ndarray, confusion: np.ndarray) -> float:
        log_prior = smoothing * float(np.log(priors).sum())
        if one_coin:
            accuracy = confusion[has_votes, 0, 0]
            on = smoothing + shrinkage * pseudo[0]
            log_prior += on * float(np.log(accuracy).sum())
            if k > 1:
                off = (k - 1) * smoothing + shrinkage * (1.0 - pseudo[0])
                log_prior += off * float(np.log(1.0 - accuracy).sum())
        else:
            log_prior += float((pseudo[0] * np.log(confusion))[has_votes].sum())
        return log_likelihood + log_prior

    priors, confusion, posteriors, log_likelihood, iterations, converged = iterate_em(
        m_step, e_step, objective, posteriors, max_iter=max_iter, tol=tol, n_votes=n_votes
    )
    # Each unit's label: the first class within the tie tolerance of the largest.
    best = np.argmax(posteriors >= posteriors.max(axis=0) - _TIE_TOLERANCE, axis=0)
    return EMEstimate(
        priors=priors.tolist(),
        confusion=confusion.tolist(),
        posteriors=posteriors.T.tolist(),
        log_likelihood=log_likelihood,
        iterations=iterations,
        converged=converged,
        best=best.tolist(),
    )


def _assemble(
    vocabulary: tuple[str, ...], units: VoteUnits, estimate: EMEstimate, one_coin: bool
) -> DawidSkeneFit:
    k_range = range(len(vocabulary))
    priors = tuple(estimate.priors)
    unit_posteriors = [tuple(p) for p in estimate.posteriors]
    if estimate.best is not None:
        unit_labels = [vocabulary[b] for b in estimate.best]
    else:
        unit_labels = [_argmax_label(p, vocabulary) for p in unit_posteriors]
    prior_label = _argmax_label(priors, vocabulary)
    item_unit = _as_list(units.item_unit)
    posteriors = tuple(priors if u < 0 else unit_posteriors[u] for u in item_unit)
    labels = tuple(prior_label if u < 0 else unit_labels[u] for u in item_unit)
    votes = units.votes_per_critic()
    accuracy = tuple(
        sum(priors[k] * matrix[k][k] for k in k_range) if n else None
        for matrix, n in zip(estimate.confusion, votes, strict=True)
    )
    confusion = {
        j: {vocabulary[t]: {vocabulary[a]: matrix[t][a] for a in k_range} for t in k_range}
        for j, matrix in enumerate(estimate.confusion)
    }
    return DawidSkeneFit(
        classes=vocabulary,
        priors=dict(zip(vocabulary, priors, strict=True)),
        confusion=confusion,
        accuracy=accuracy,
        votes=tuple(votes),
        posteriors=posteriors,
        labels=labels,
        iterations=estimate.iterations,
        log_likelihood=estimate.log_likelihood,
        converged=estimate.converged,
        one_coin=one_coin,
    )


def _as_list(values: Any) -> list[int]:
    """A list of Python ints from a list or a numpy array."""
    listed: list[int] = values.tolist() if hasattr(values, "tolist") else list(values)
    return listed


def _argmax_label(probabilities: Sequence[float], vocabulary: tuple[str, ...]) -> str:
    top = max(probabilities) - _TIE_TOLERANCE
    for k, p in enumerate(probabilities):
        if p >= top:
            return vocabulary[k]
    return vocabulary[0]  # unreachable: the largest passes
