"""Dawid-Skene for critics whose errors are correlated: shared difficulty, shared wrong answer.

The classic model (:mod:`cross_judge.stats._dawid_skene`) assumes that, given an item's true
label, critics err independently. LLM judges do not: they stumble on the same hard items
and, when wrong, often pick the same tempting wrong answer. Under that correlation the
classic fit reads agreement on a wrong answer as evidence, over-rates the weak critics that
share it and under-rates the strong one that does not.

This module fits a latent class model that lets errors correlate in both ways. Each item has
three hidden attributes: its true class ``k`` (prior ``priors[k]``), a *tempting answer*
``d != k`` (the distractor; ``P(d | k)`` learned) and a difficulty level ``h`` (easy or hard
by default; shares learned). Given them, critic ``j`` answers independently:

- right, ``k``, with probability ``r[j][h] = sigmoid(a[j] + b[h])``: its ability ``a[j]``
  shifted by the level's easiness ``b[h]``, the same shift for every critic (as in item
  response theory; ``b`` of the easiest level is 0);
- the tempting answer ``d`` with probability ``(1 - r[j][h]) * s``, ``s`` being the share of
  errors that go to the item's tempting answer (one number for the panel: the answer
  tempts every critic);
- another wrong label ``l`` with probability ``(1 - r[j][h]) * (1 - s) * e[j][k][l]``,
  ``e[j][k]`` its own error profile (uniform over the other labels with ``one_coin``).

Critics who are all right less often on hard items, and wrong together on ``d``, are then
explained by the item instead of by each other. EM (MAP form, ``smoothing`` pseudo-counts on
every parameter) alternates Bayes' rule over the ``K (K - 1) H`` hidden states of each
distinct vote pattern with updates in closed form, except the abilities and easiness,
raised by a few Newton steps per round (a generalised EM: the objective still never falls).
The share of a vote for ``d`` due to the tempting answer rather than the critic's own
profile is itself a responsibility.

A small batch cannot pin down much, so the model is kept lean. With one accuracy per critic
and level, on the simulated vendor with 500 items it lost 2 points to the classic fit on
average (up to 18 on one seed: the weakest critic became the "expert on hard items"). The
shared easiness shift keeps critics in the same order at every level; the tempting share is
one number for the panel, not one per critic; ``r`` is kept above chance (``1 / K``), else
"everyone is wrong on hard items" could flip their labels, which no vote can refute; each
error profile has a prior worth :data:`PROFILE_PRIOR` votes per wrong label towards
uniform. Measured over seeds (correlation 0.3; 5 critics 0.9 .. 0.6; 10% missing) against the
classic fit: +1.6 points on 500 items (worst seed -0.4), +1.4 on 2,000 and 20,000 (worst
+1.0); with independent errors within 0.6 points either way.

It starts from the classic fit: its priors, each critic's accuracy as its ability (the
levels one step apart on the log-odds scale on either side), its error profiles, a
tempting-answer share of 0.3 and uniform difficulty shares. With ``K == 1`` there is nothing to get
wrong and the classic fit is returned as is. Needs numpy: the E-step is one matrix product
per round over up to thousands of patterns and tens of states, too slow in pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._em import EMEstimate, VotePatterns, iterate_em

if TYPE_CHECKING:
    import numpy as np

    _Three = tuple[np.ndarray, np.ndarray, np.ndarray]

__all__ = ["Correlation", "fit_correlated"]

DIFFICULTY_LEVELS = 2
"""How many difficulty levels the model has: easy and hard. Three fit the simulated vendor
no better on 20,000 items and converge more slowly; more cannot be told apart."""

_START_SHARED = 0.3
"""The tempting-answer share the fit starts from."""

_NEWTON_STEPS = 3
"""Newton steps on the abilities per M-step (a generalised EM: enough to raise the
objective every round; the abilities converge over the rounds)."""

PROFILE_PRIOR = 20.0
"""Pseudo-votes per wrong label pulling each critic's error profile towards uniform."""


@dataclass(frozen=True)
class Correlation:
    """What the correlated-errors model learned beyond the classic one.

    - ``difficulty``: share of items at each difficulty level, easiest first.
    - ``accuracy_by_difficulty``: per critic, its accuracy at each level (aligned with
      ``difficulty``); ``None`` for a critic with no valid vote.
    - ``tempting_share``: the share of errors that land on the item's tempting wrong
      answer, the one critics share. Not 0 where errors are independent (chance
      coincidences of wrong answers read as up to ~0.2 on the simulated vendor): a
      diagnostic, not a test of independence.
    """

    difficulty: tuple[float, ...]
    accuracy_by_difficulty: tuple[tuple[float, ...] | None, ...]
    tempting_share: float

    def error_correlation(self, i: int, j: int) -> float | None:
        """The correlation (phi) of critics ``i`` and ``j``'s errors that the difficulty
        levels imply: ``P(both wrong) = sum_h w_h (1 - r_ih) (1 - r_jh)`` against the product
        of their error rates. ``None`` when either critic has no vote or never or always
        errs. It counts errors on the same items, not on the same answer, and two levels
        smooth a continuum of difficulty, so it runs low when errors correlate strongly
        (on the simulated vendor at correlation 0.6: about 0.2, against 0.35 measured on
        gold)."""
        a, b = self.accuracy_by_difficulty[i], self.accuracy_by_difficulty[j]
        if a is None or b is None:
            return None
        weights = self.difficulty
        wrong_i = sum(w * (1.0 - r) for w, r in zip(weights, a, strict=True))
        wrong_j = sum(w * (1.0 - r) for w, r in zip(weights, b, strict=True))
        both = sum(w * (1.0 - x) * (1.0 - y) for w, x, y in zip(weights, a, b, strict=True))
        spread = wrong_i * (1.0 - wrong_i) * wrong_j * (1.0 - wrong_j)
        if spread <= 0.0:
            return None
        return (both - wrong_i * wrong_j) / math.sqrt(spread)


def fit_correlated(
    patterns: VotePatterns,
    n_classes: int,
    start: EMEstimate,
    *,
    one_coin: bool,
    max_iter: int,
    tol: float,
    smoothing: float,
) -> tuple[EMEstimate, Correlation]:
    """Fit the correlated-errors model to ``patterns`` from the classic fit ``start``.

    Returns an estimate in the classic form (priors; per critic the *marginal* confusion
    matrix, averaged over difficulty and tempting answers, so its diagonal still gives
    accuracy; class posteriors per pattern) and the :class:`Correlation` parameters.
    ``patterns`` must hold at least one vote and ``n_classes`` must be at least 2.
    """
    import numpy as np

    k, levels = n_classes, DIFFICULTY_LEVELS
    n_patterns, n_critics = len(patterns.codes), patterns.n_critics
    eye = np.eye(k, dtype=bool)
    # Hidden states (true class, tempting answer, difficulty), true class slowest.
    states = [(t, d, h) for t in range(k) for d in range(k) if d != t for h in range(levels)]
    true_of = np.array([s[0] for s in states], dtype=np.intp)
    tempting_of = np.array([s[1] for s in states], dtype=np.intp)
    level_of = np.array([s[2] for s in states], dtype=np.intp)
    true_hot = np.eye(k)[true_of]  # state x class
    tempting_hot = np.eye(k)[tempting_of]
    level_hot = np.eye(levels)[level_of]  # state x level

    codes = np.array(patterns.codes, dtype=np.intp).reshape(n_patterns, n_critics)
    weights = np.array(patterns.weights, dtype=np.float64)
    one_hot = np.zeros((n_patterns, n_critics, k + 1))
    one_hot[np.arange(n_patterns)[:, None], np.arange(n_critics)[None, :], codes] = 1.0
    votes = np.ascontiguousarray(one_hot[:, :, :k]).reshape(n_patterns, n_critics * k)
    n_votes = float((votes * weights[:, None]).sum())

    # The start: the classic fit, spread over difficulty levels.
    start_confusion = np.array(start.confusion)  # critic x true x answered
    accuracy = np.clip(
        np.einsum("k,jkk->j", np.array(start.priors), start_confusion), 1e-6, 1 - 1e-6
    )
    steps = np.linspace(1.0, -1.0, levels)  # easiest first
    floor = 1.0 / k + 1e-3
    prior = smoothing + PROFILE_PRIOR
    ability = np.log(accuracy / (1 - accuracy)) + steps[0]
    shift = steps - steps[0]  # shift[0] == 0: the easiest level anchors the scale
    right = np.maximum(_sigmoid(ability[:, None] + shift[None, :]), floor)
    shared = np.full(n_critics, _START_SHARED)
    if one_coin:
        profile = np.where(eye, 0.0, 1.0 / (k - 1))[None, :, :].repeat(n_critics, axis=0)
    else:
        profile = np.where(eye, 0.0, start_confusion)
        profile /= profile.sum(axis=2, keepdims=True)
    tempting = np.where(eye, 0.0, 1.0 / (k - 1))
    difficulty = np.full(levels, 1.0 / levels)
    hidden0 = (np.array(start.priors), tempting, difficulty)
    critic_now: _Three = (right, shared, profile)

    def answer_probabilities(
        right: np.ndarray, shared: np.ndarray, profile: np.ndarray
    ) -> np.ndarray:
        """P(critic answers l | state): critic x state x answered."""
        r = right[:, level_of][:, :, None]  # critic x state x 1
        s = shared[:, None, None]
        own = profile[:, true_of, :]  # critic x state x answered (0 at the true class)
        probabilities: np.ndarray = r * true_hot + (1.0 - r) * (s * tempting_hot + (1.0 - s) * own)
        return probabilities

    def e_step(hidden: _Three, critic: _Three) -> tuple[np.ndarray, float]:
        priors, tempting, difficulty = hidden
        table = answer_probabilities(*critic)
        # log_columns[j * k + answered, state] = log P(answered | state) for critic j
        log_columns = np.log(table).transpose(0, 2, 1).reshape(n_critics * k, len(states))
        scores = (
            np.einsum("pv,vs->ps", votes, log_columns)
            + np.log(priors)[true_of]
            + np.log(tempting[true_of, tempting_of])
            + np.log(difficulty)[level_of]
        )
        top = scores.max(axis=1, keepdims=True)
        exps = np.exp(scores - top)
        norm = exps.sum(axis=1, keepdims=True)
        log_evidence = (top + np.log(norm))[:, 0]
        return exps / norm, float(np.dot(weights, log_evidence))

    def m_step(post: np.ndarray) -> tuple[_Three, _Three]:
        nonlocal critic_now, ability, shift
        mass = post * weights[:, None]  # pattern x state
        state_mass = mass.sum(axis=0)
        total = float(weights.sum())
        priors = (true_hot.T @ state_mass + smoothing) / (total + k * smoothing)
        tempting = true_hot.T @ (tempting_hot * state_mass[:, None]) + smoothing * ~eye
        tempting /= tempting.sum(axis=1, keepdims=True)
        difficulty = (level_hot.T @ state_mass + smoothing) / (total + levels * smoothing)
        # counts[j, state, answered]: expected votes of critic j for `answered` in `state`.
        counts = np.einsum("pv,ps->vs", votes, mass)  # one thread: see _em_numpy
        counts = counts.reshape(n_critics, k, len(states)).transpose(0, 2, 1)
        right_counts = (counts * true_hot).sum(axis=2) @ level_hot  # critic x level
        ability, shift = _fit_abilities(
            ability, shift, right_counts + smoothing, counts.sum(axis=2) @ level_hot + 2 * smoothing
        )
        right = np.maximum(_sigmoid(ability[:, None] + shift[None, :]), floor)
        _, shared_now, profile_now = critic_now  # the parameters ``post`` came from
        wrong_counts = counts * ~true_hot.astype(bool)
        at_tempting = (counts * tempting_hot).sum(axis=2)  # critic x state
        own_at_tempting = profile_now[:, true_of, tempting_of]  # critic x state
        s_now = shared_now[:, None]
        from_tempting = at_tempting * s_now / (s_now + (1.0 - s_now) * own_at_tempting)
        pooled = (from_tempting.sum() + smoothing) / (wrong_counts.sum() + 2 * smoothing)
        shared = np.full(n_critics, pooled)
        if one_coin:
            profile = profile_now
        else:
            own_counts = wrong_counts - from_tempting[:, :, None] * tempting_hot
            profile = np.einsum("jsa,st->jta", own_counts, true_hot) + prior * ~eye
            profile /= profile.sum(axis=2, keepdims=True)
        critic_now = (right, shared, profile)
        return (priors, tempting, difficulty), (right, shared, profile)

    def objective(log_likelihood: float, hidden: _Three, critic: _Three) -> float:
        priors, tempting, difficulty = hidden
        right, shared, profile = critic
        log_prior = (
            np.log(priors).sum()
            + np.log(tempting[~eye]).sum()
            + np.log(difficulty).sum()
            + np.log(right).sum()
            + np.log(1.0 - right).sum()
            + np.log(shared[0])
            + np.log(1.0 - shared[0])
        )
        objective = log_likelihood + smoothing * float(log_prior)
        if not one_coin:
            objective += prior * float(np.log(profile[:, ~eye]).sum())
        return objective

    posteriors0, _ = e_step(hidden0, critic_now)

    hidden, critic, posteriors, log_likelihood, iterations, converged = iterate_em(
        m_step, e_step, objective, posteriors0, max_iter=max_iter, tol=tol, n_votes=n_votes
    )
    priors, tempting, difficulty = hidden
    right, shared, profile = critic
    table = answer_probabilities(right, shared, profile)
    # Marginal confusion: average the state-wise answers over tempting answer and level.
    state_weight = tempting[true_of, tempting_of] * difficulty[level_of]
    confusion = np.einsum("s,jsa,st->jta", state_weight, table, true_hot)
    order = np.argsort(-(right.mean(axis=0)), kind="stable")  # easiest level first
    estimate = EMEstimate(
        priors=priors.tolist(),
        confusion=confusion.tolist(),
        posteriors=(posteriors @ true_hot).tolist(),
        log_likelihood=log_likelihood,
        iterations=iterations,
        converged=converged,
    )
    voted = (one_hot[:, :, :k].sum(axis=2) * weights[:, None]).sum(axis=0) > 0
    correlation = Correlation(
        difficulty=tuple(float(x) for x in difficulty[order]),
        accuracy_by_difficulty=tuple(
            tuple(float(x) for x in row[order]) if has_votes else None
            for row, has_votes in zip(right, voted, strict=True)
        ),
        tempting_share=float(shared[0]),
    )
    return estimate, correlation


def _sigmoid(x: np.ndarray) -> np.ndarray:
    import numpy as np

    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _fit_abilities(
    ability: np.ndarray, shift: np.ndarray, right: np.ndarray, asked: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps on ``P(right) = sigmoid(ability[j] + shift[h])`` for expected ``right``
    answers out of ``asked`` (critic x level; smoothing already added), ``shift[0]`` held
    at 0. Each step is kept only if it raises the log-likelihood (halved up to 10 times),
    so the M-step never lowers the EM objective."""
    import numpy as np

    n_critics, levels = right.shape

    def log_likelihood(a: np.ndarray, b: np.ndarray) -> float:
        z = a[:, None] + b[None, :]
        # right * log sigmoid(z) + wrong * log sigmoid(-z), stably.
        return float(
            -(right * np.logaddexp(0.0, -z) + (asked - right) * np.logaddexp(0.0, z)).sum()
        )

    current = log_likelihood(ability, shift)
    for _ in range(_NEWTON_STEPS):
        p = _sigmoid(ability[:, None] + shift[None, :])
        residual = right - asked * p
        curvature = asked * p * (1.0 - p)
        gradient = np.concatenate([residual.sum(axis=1), residual.sum(axis=0)[1:]])
        hessian = np.zeros((n_critics + levels - 1, n_critics + levels - 1))
        hessian[:n_critics, :n_critics] = np.diag(curvature.sum(axis=1))
        hessian[n_critics:, n_critics:] = np.diag(curvature.sum(axis=0)[1:])
        hessian[:n_critics, n_critics:] = curvature[:, 1:]
        hessian[n_critics:, :n_critics] = curvature[:, 1:].T
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(gradient)), gradient)
        scale = 1.0
        for _ in range(10):
            a = ability + scale * step[:n_critics]
            b = np.concatenate([[0.0], shift[1:] + scale * step[n_critics:]])
            value = log_likelihood(a, b)
            if value >= current:
                ability, shift, current = a, b, value
                break
            scale /= 2
        else:
            break
    return ability, shift
