"""Dawid-Skene EM: learn each critic's confusion matrix and the true labels without gold.

:func:`dawid_skene` takes an items x critics matrix of labels (``None`` where a critic gave no
valid vote: missing, ERROR, PARSE_FAIL, SKIPPED) and fits the Dawid & Skene (1979) latent
class model by expectation-maximisation: class priors, one confusion matrix per critic
(true class x answered class) and, per item, the posterior probability of each class. With
``one_coin=True`` each critic has a single accuracy and spreads its errors evenly over the
other classes (Zhang et al. 2016), which needs less data per critic.

Items with the same votes have the same posterior, so the EM runs once per distinct vote
pattern, weighted by how many items share it: exact, and a large saving when there are few
critics. The E and M steps are vectorised with numpy when it is importable (the
``cross-judge[stats]`` extra); a pure-Python path gives the same numbers (to rounding) without
it. The module deliberately does not take gold labels or initial confusion matrices, model
item difficulty (GLAD), or know about ``BatchResult``: callers pass plain data. With
``errors="correlated"`` it fits the extension in :mod:`cross_judge.stats.dawid_skene_correlated`
(shared difficulty and a shared tempting answer; numpy only), started from this fit.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError
from .em import EMEstimate, VotePatterns, iterate_em

if TYPE_CHECKING:
    from .dawid_skene_correlated import Correlation

__all__ = ["Backend", "DawidSkeneFit", "Errors", "dawid_skene"]

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

    Critics are numbered by their column in the labels matrix; items by their row.

    - ``classes``: the label vocabulary, in the order used for ``posteriors`` and ties.
    - ``priors``: class -> estimated share of items with that true class.
    - ``confusion``: critic index -> true class -> answered class -> probability; each inner
      mapping sums to 1 and has no zeros (smoothing). A critic with no valid vote keeps the
      uninformative smoothing-only matrix, which has no effect on any posterior.
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
      smoothing's log-prior) per vote by less than ``tol``; also true when there was nothing
      to fit; false when ``max_iter`` stopped it.
    - ``one_coin``: whether the one-coin model was fitted.
    - ``errors``: ``"independent"`` (classic) or ``"correlated"``.
    - ``correlation``: with ``errors="correlated"``, the difficulty levels, each critic's
      accuracy at each level and the share of its errors on the shared tempting answer (see
      :class:`cross_judge.stats.dawid_skene_correlated.Correlation`); ``None`` otherwise. With
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
    backend: Backend = "auto",
) -> DawidSkeneFit:
    """Fit the Dawid-Skene model to an items x critics label matrix by EM.

    ``labels[i][j]`` is critic ``j``'s label for item ``i``, or ``None`` when it gave no valid
    vote; a missing vote contributes nothing. Every row must have one entry per critic.
    ``classes`` is the vocabulary (default: the sorted labels seen); it fixes the order of
    the posteriors and breaks ties, and may hold classes nobody voted for.

    The EM starts from the soft majority vote (each item's vote shares), then alternates an
    M-step (priors and confusion matrices from the current posteriors, with ``smoothing``
    added to every count so no probability is ever 0) and an E-step (posteriors from Bayes'
    rule). Smoothing makes this the MAP form of EM, whose objective is the log-likelihood plus
    ``smoothing`` times the log of every prior and confusion probability (negligible next to
    the likelihood with many votes); it never decreases, and the EM stops when it improves by
    less than ``tol`` per observed vote or after ``max_iter`` rounds (``max_iter=0`` returns
    the majority start's first M and E steps).

    With ``one_coin=True`` critic ``j``'s matrix is ``p_j`` on the diagonal and
    ``(1 - p_j) / (K - 1)`` elsewhere, ``p_j = (right + smoothing) / (votes + K * smoothing)``.

    With ``errors="correlated"`` the classic fit is the start of a second EM, for critics
    that err together (same hard items, same tempting wrong answer; see
    :mod:`cross_judge.stats.dawid_skene_correlated`); ``one_coin`` then makes each critic's
    errors off the tempting answer uniform. It needs numpy (``backend="python"`` is a
    ConfigError, and so is ``"auto"`` without numpy). ``max_iter`` bounds each EM: by default
    100 rounds for the classic fit and 1,000 for the correlated one, whose likelihood is
    flatter (difficulty levels trade off against accuracies).

    ``backend``: ``"numpy"`` (vectorised; raises ConfigError if numpy is not installed),
    ``"python"`` (standard library only) or ``"auto"`` (numpy when importable). Both give the
    same numbers to rounding.

    Edge cases: no items gives empty ``posteriors``/``labels`` with uniform priors; items
    with no vote get the priors; a critic with no valid vote gets ``accuracy`` ``None``; no
    vote at all gives uniform priors, zero iterations and ``converged=True``; a single class
    gives posteriors of ``(1.0,)``.

    Raises ConfigError for a label outside ``classes``, ragged rows, a string where a row
    was due, no label seen and no ``classes``, duplicate or empty ``classes``, or
    ``max_iter < 0``, ``tol < 0``, ``smoothing <= 0``, an unknown ``backend`` or
    ``errors``, or ``errors="correlated"`` without numpy.
    """
    if errors not in ("independent", "correlated"):
        raise ConfigError(f"errors must be 'independent' or 'correlated', got {errors!r}")
    correlated = errors == "correlated"
    rounds = max_iter if max_iter is not None else (1000 if correlated else 100)
    _check_settings(rounds, tol, smoothing, backend)
    vocabulary = _vocabulary(labels, classes)
    patterns = _encode(labels, vocabulary)
    if correlated and (backend == "python" or not numpy_available()):
        raise ConfigError(
            "errors='correlated' needs numpy: pip install 'cross-judge[stats]'"
            + (", and leave backend='auto'" if backend == "python" else "")
            + " (or fit the classic model, errors='independent')"
        )
    use_numpy = _resolve_backend(backend)
    n_classes = len(vocabulary)
    first_rounds = min(rounds, 100) if correlated else rounds
    if not patterns.codes:
        estimate = _nothing_to_fit(n_classes, patterns.n_critics)
    elif use_numpy:
        estimate = _em_numpy(patterns, n_classes, one_coin, first_rounds, tol, smoothing)
    else:
        estimate = _em_python(patterns, n_classes, one_coin, first_rounds, tol, smoothing)
    correlation: Correlation | None = None
    if correlated and patterns.codes and n_classes > 1:
        from .dawid_skene_correlated import fit_correlated

        estimate, correlation = fit_correlated(
            patterns,
            n_classes,
            estimate,
            one_coin=one_coin,
            max_iter=rounds,
            tol=tol,
            smoothing=smoothing,
        )
    fit = _assemble(vocabulary, patterns, estimate, one_coin)
    if not correlated:
        return fit
    return replace(fit, errors="correlated", correlation=correlation)


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
    seen: set[str] = set()
    for item, row in enumerate(labels):
        if isinstance(row, str):
            raise _not_a_row(item, row)
        seen.update(label for label in row if label is not None)
    if not seen:
        raise ConfigError("no labels seen, so the classes are unknown: pass classes=[...]")
    try:
        return tuple(sorted(seen))
    except TypeError as exc:
        raise ConfigError(
            "labels of mixed types cannot be sorted into classes: pass classes=[...]"
        ) from exc


def _encode(labels: Sequence[Sequence[str | None]], vocabulary: tuple[str, ...]) -> VotePatterns:
    """Class indices per vote, grouped into distinct patterns."""
    code: dict[str | None, int] = {label: index for index, label in enumerate(vocabulary)}
    code[None] = -1
    n_critics = -1
    pattern_of: dict[tuple[int, ...], int] = {}
    weights: list[int] = []
    item_pattern: list[int] = []
    for item, row in enumerate(labels):
        if isinstance(row, str):
            raise _not_a_row(item, row)
        if n_critics == -1:
            n_critics = len(row)
        elif len(row) != n_critics:
            raise ConfigError(
                f"labels row {item} has {len(row)} entries but row 0 has {n_critics}: "
                "give every item one entry per critic (None for no vote)"
            )
        try:
            key = tuple(map(code.__getitem__, row))
        except (KeyError, TypeError):
            bad = next(label for label in row if not _known(code, label))
            raise ConfigError(
                f"label {bad!r} (item {item}, critic {row.index(bad)}) is not one of the "
                f"classes {list(vocabulary)!r}: add it to classes= or map it to None"
            ) from None
        if max(key, default=-1) < 0:
            item_pattern.append(-1)
            continue
        pattern = pattern_of.setdefault(key, len(weights))
        if pattern == len(weights):
            weights.append(0)
        weights[pattern] += 1
        item_pattern.append(pattern)
    return VotePatterns(list(pattern_of), weights, item_pattern, max(n_critics, 0))


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
    patterns: VotePatterns,
    n_classes: int,
    one_coin: bool,
    max_iter: int,
    tol: float,
    smoothing: float,
) -> EMEstimate:
    """EM in the standard library: loops over patterns, their votes and the classes."""
    k_range = range(n_classes)
    weights = [float(w) for w in patterns.weights]
    # (critic, answered class) for each vote of each pattern.
    votes = [[(j, c) for j, c in enumerate(codes) if c >= 0] for codes in patterns.codes]
    n_votes = sum(w * len(v) for w, v in zip(weights, votes, strict=True))
    posteriors: list[list[float]] = []
    for pattern_votes in votes:
        shares = [0.0] * n_classes
        for _, answered in pattern_votes:
            shares[answered] += 1.0
        posteriors.append([s / len(pattern_votes) for s in shares])

    def m_step(post: list[list[float]]) -> tuple[list[float], list[list[list[float]]]]:
        class_mass = [0.0] * n_classes
        counts = [
            [[0.0] * n_classes for _ in k_range] for _ in range(patterns.n_critics)
        ]  # critic x true x answered
        for w, pattern_votes, p in zip(weights, votes, post, strict=True):
            wp = [w * x for x in p]
            for k in k_range:
                class_mass[k] += wp[k]
            for j, answered in pattern_votes:
                counts_j = counts[j]
                for k in k_range:
                    counts_j[k][answered] += wp[k]
        total = sum(weights)
        priors = [(m + smoothing) / (total + n_classes * smoothing) for m in class_mass]
        if one_coin:
            return priors, [_one_coin_matrix(c, n_classes, smoothing) for c in counts]
        confusion = [
            [
                [(x + smoothing) / (sum(row) + n_classes * smoothing) for x in row]
                for row in critic_counts
            ]
            for critic_counts in counts
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
        for w, pattern_votes in zip(weights, votes, strict=True):
            scores = list(log_priors)
            for j, answered in pattern_votes:
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
        log_prior = sum(map(math.log, priors)) + sum(
            math.log(x) for matrix in confusion for row in matrix for x in row
        ) / (n_classes if one_coin else 1)
        return log_likelihood + smoothing * log_prior

    priors, confusion, posteriors, log_likelihood, iterations, converged = iterate_em(
        m_step, e_step, objective, posteriors, max_iter=max_iter, tol=tol, n_votes=n_votes
    )
    return EMEstimate(priors, confusion, posteriors, log_likelihood, iterations, converged)


def _one_coin_matrix(
    counts: list[list[float]], n_classes: int, smoothing: float
) -> list[list[float]]:
    right = sum(counts[k][k] for k in range(n_classes))
    total = sum(map(sum, counts))
    accuracy = (right + smoothing) / (total + n_classes * smoothing)
    wrong = (1.0 - accuracy) / max(n_classes - 1, 1)
    return [[accuracy if a == k else wrong for a in range(n_classes)] for k in range(n_classes)]


def _em_numpy(
    patterns: VotePatterns,
    n_classes: int,
    one_coin: bool,
    max_iter: int,
    tol: float,
    smoothing: float,
) -> EMEstimate:
    """The same EM as :func:`_em_python`, each step a few array operations.

    Products go through ``np.einsum``, not ``@``: the matrices are small, and BLAS spreads
    ``@`` over threads that, on a busy 2-CPU machine, made a fit 16 times slower (0.19 s
    against 0.012 s on 8,000 items); einsum's own loop uses one thread.
    """
    import numpy as np

    n_patterns, n_critics, k = len(patterns.codes), patterns.n_critics, n_classes
    codes = np.array(patterns.codes, dtype=np.intp).reshape(n_patterns, n_critics)
    weights = np.array(patterns.weights, dtype=np.float64)
    # One-hot votes with a trailing slot for "no vote" (code -1 indexes it), then dropped:
    # votes[p, j * k + a] = 1 when critic j answered a in pattern p.
    one_hot = np.zeros((n_patterns, n_critics, k + 1))
    one_hot[np.arange(n_patterns)[:, None], np.arange(n_critics)[None, :], codes] = 1.0
    votes = np.ascontiguousarray(one_hot[:, :, :k]).reshape(n_patterns, n_critics * k)
    weighted_votes = votes * weights[:, None]
    n_votes = float(weighted_votes.sum())
    shares = one_hot[:, :, :k].sum(axis=1)
    posteriors = shares / shares.sum(axis=1, keepdims=True)
    total = float(weights.sum())
    eye = np.eye(k, dtype=bool)

    def m_step(post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        priors = (np.einsum("p,pk->k", weights, post) + smoothing) / (total + k * smoothing)
        # counts[j, true, answered]
        counts = np.einsum("pk,pv->kv", post, weighted_votes)
        counts = counts.reshape(k, n_critics, k).transpose(1, 0, 2)
        if one_coin:
            right = np.trace(counts, axis1=1, axis2=2)
            accuracy = (right + smoothing) / (counts.sum(axis=(1, 2)) + k * smoothing)
            wrong = (1.0 - accuracy) / max(k - 1, 1)
            confusion = np.where(eye, accuracy[:, None, None], wrong[:, None, None])
        else:
            confusion = (counts + smoothing) / (counts.sum(axis=2, keepdims=True) + k * smoothing)
        return priors, confusion

    def e_step(priors: np.ndarray, confusion: np.ndarray) -> tuple[np.ndarray, float]:
        # log_columns[j * k + answered, true] = log confusion[j, true, answered]
        log_columns = np.log(confusion).transpose(0, 2, 1).reshape(n_critics * k, k)
        scores = np.einsum("pv,vk->pk", votes, log_columns) + np.log(priors)
        top = scores.max(axis=1, keepdims=True)
        exps = np.exp(scores - top)
        norm = exps.sum(axis=1, keepdims=True)
        log_evidence = (top + np.log(norm))[:, 0]
        return exps / norm, float(np.dot(weights, log_evidence))

    def objective(log_likelihood: float, priors: np.ndarray, confusion: np.ndarray) -> float:
        log_prior = float(np.log(priors).sum()) + float(np.log(confusion).sum()) / (
            k if one_coin else 1
        )
        return log_likelihood + smoothing * log_prior

    priors, confusion, posteriors, log_likelihood, iterations, converged = iterate_em(
        m_step, e_step, objective, posteriors, max_iter=max_iter, tol=tol, n_votes=n_votes
    )
    return EMEstimate(
        priors=priors.tolist(),
        confusion=confusion.tolist(),
        posteriors=posteriors.tolist(),
        log_likelihood=log_likelihood,
        iterations=iterations,
        converged=converged,
    )


def _assemble(
    vocabulary: tuple[str, ...], patterns: VotePatterns, estimate: EMEstimate, one_coin: bool
) -> DawidSkeneFit:
    k_range = range(len(vocabulary))
    priors = tuple(estimate.priors)
    pattern_posteriors = [tuple(p) for p in estimate.posteriors]
    pattern_labels = [_argmax_label(p, vocabulary) for p in pattern_posteriors]
    prior_label = _argmax_label(priors, vocabulary)
    posteriors = tuple(priors if p < 0 else pattern_posteriors[p] for p in patterns.item_pattern)
    labels = tuple(prior_label if p < 0 else pattern_labels[p] for p in patterns.item_pattern)
    votes = [0] * patterns.n_critics
    for codes, weight in zip(patterns.codes, patterns.weights, strict=True):
        for j, answered in enumerate(codes):
            if answered >= 0:
                votes[j] += weight
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


def _argmax_label(probabilities: Sequence[float], vocabulary: tuple[str, ...]) -> str:
    top = max(probabilities)
    first = next(k for k, p in enumerate(probabilities) if p >= top - _TIE_TOLERANCE)
    return vocabulary[first]
