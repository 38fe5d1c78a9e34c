"""Developer tasks: ``nox -s lint tests compat docs browser slow`` (what CI runs),
``nox -s ray``, ``nox -s bench``, ``nox -s live`` (against a real vendor you name; never in
CI).

Each session installs the package from this checkout (not editable) into its own
virtualenv, so the tests see exactly what a wheel ships, package data included.
"""

from __future__ import annotations

import os
import shutil

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests", "compat", "docs", "browser", "slow"]
nox.options.error_on_missing_interpreters = False

# Every session installs with bytecode compiled, as pip does by default and uv does not. The
# tests start ~100 fresh interpreters (examples, exit and fork checks, killed reviews); where
# the environment sets PYTHONDONTWRITEBYTECODE, each of them would otherwise compile the
# vendor SDKs from source again: measured on a 2-core machine, the tests took 358 s without
# compiled bytecode and 294 s with it.
COMPILED = {"UV_COMPILE_BYTECODE": "1"}

# The reliability suite at 40% of its fuzz inputs (over 40,000) and load items (2,000) in the
# CI sessions; ``nox -s faults`` runs them in full. Either can be set in the environment to
# override.
QUICK_FAULTS = {
    "CROSS_JUDGE_FUZZ_SCALE": os.environ.get("CROSS_JUDGE_FUZZ_SCALE", "0.4"),
    "CROSS_JUDGE_LOAD_ITEMS": os.environ.get("CROSS_JUDGE_LOAD_ITEMS", "2000"),
}


# pytest rewrites the asserts of every test module it imports (about 15 s of CPU for this
# suite, in each xdist worker) and keeps the result as bytecode beside the module, unless
# PYTHONDONTWRITEBYTECODE is set, as it is on some CI machines: the test sessions let it keep
# them, so that later sessions read them instead of rewriting (collection 19 s -> 8 s a
# process, measured on a 2-core machine).
KEEP_REWRITTEN = {"PYTHONDONTWRITEBYTECODE": ""}


def _pytest_workers() -> str:
    """Two pytest-xdist workers per CPU (at most 8): much of the suite waits on local
    servers, subprocesses and deadlines, and a second worker per CPU runs while the first
    waits (on 2 cores, 2 workers were 1.3x slower than 4)."""
    return str(min(8, 2 * (os.cpu_count() or 1)))


def _suite(session: nox.Session, marks: str) -> None:
    """Install the test extras, then pytest the tests selected by ``marks`` on xdist
    workers; a module's tests marked ``xdist_group`` share one worker (and so build their
    module's fixture once)."""
    session.install(".[test]", env=COMPILED)
    session.run(
        "pytest",
        "-n",
        _pytest_workers(),
        "--dist",
        "loadgroup",
        "-m",
        marks,
        "--ignore=tests/docs",
        *session.posargs,
        env=QUICK_FAULTS | KEEP_REWRITTEN,
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Unit and integration tests and the reliability suite (no network: servers run on
    127.0.0.1), but for the tests marked ``slow`` (``nox -s slow``). The docs' examples
    (tests/docs) run in ``nox -s docs``, with the extras they need, not twice."""
    _suite(session, "not slow")


@nox.session
def slow(session: nox.Session) -> None:
    """The tests marked ``slow``: each costs seconds of CPU (a fresh interpreter, an
    example run end to end, a statistical simulation, the fuzzers, the load run), so that
    ``nox -s tests`` stays quick. CI runs both."""
    _suite(session, "slow")


@nox.session
def stats(session: nox.Session) -> None:
    """The ``cross-judge[stats]`` extra (numpy): the statistics learned from verdicts
    (Dawid-Skene on both its numpy and pure-Python paths and its correlated-errors model,
    gold metrics, confidence calibration, learned weights)."""
    session.install(".[test,stats]", env=COMPILED)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/unit/stats/test_dawid_skene.py",
        "tests/unit/stats/test_dawid_skene_sparse.py",
        "tests/unit/stats/test_dawid_skene_correlated.py",
        "tests/unit/stats/test_revote_edges.py",
        "tests/unit/stats/test_ece_bins.py",
        "tests/unit/stats/test_gold_metrics.py",
        "tests/unit/stats/test_confidence_calibration.py",
        "tests/unit/stats/test_reliability.py",
        *session.posargs,
    )


@nox.session
def crowdkit(session: nox.Session) -> None:
    """crowd-kit as a live oracle: our Dawid-Skene against its ``DawidSkene(n_iter=100)`` on
    seeded sparse crowds (tests/unit/stats/test_dawid_skene_crowdkit_oracle.py, which skips
    without crowd-kit). crowd-kit is never a dependency; the default ``tests`` session checks
    against its recorded answer (tests/fixtures/dawid_skene_sparse_crowdkit.json.gz)."""
    session.install(".[test,stats]", "crowd-kit", env=COMPILED)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/unit/stats/test_dawid_skene_crowdkit_oracle.py",
        "tests/unit/stats/test_dawid_skene_sparse.py",
        *session.posargs,
    )


@nox.session
def choix(session: nox.Session) -> None:
    """choix as a live oracle: our Bradley-Terry fit against its ``mm_pairwise`` and
    ``ilsr_pairwise`` with the same regularisation on random tie-free data
    (tests/unit/stats/test_bradley_terry_choix_oracle.py, which skips without choix). choix
    is never a dependency."""
    session.install(".[test,stats]", "choix", env=COMPILED)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/unit/stats/test_bradley_terry_choix_oracle.py",
        "tests/unit/stats/test_bradley_terry.py",
        *session.posargs,
    )


@nox.session
def paired(session: nox.Session) -> None:
    """statsmodels and scipy as live oracles for the paired statistics: McNemar's exact test
    and Holm's adjustment against statsmodels, the Wilcoxon signed-rank test against scipy in
    its exact and normal-approximation modes (tests/unit/stats/test_paired_oracles.py, which
    skips without them). Both are oracles, never dependencies; the default ``tests`` session
    checks against their recorded answers (tests/unit/stats/test_paired.py)."""
    session.install(".[test]", "statsmodels", "scipy", env=COMPILED)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/unit/stats/test_paired_oracles.py",
        "tests/unit/stats/test_paired.py",
        *session.posargs,
    )


@nox.session
def ray(session: nox.Session) -> None:
    """The ``cross-judge[ray]`` extra: ``cross_judge.ray`` (judging a Ray Dataset with
    async actors, the cluster-wide shared limit) against a Ray instance started on this
    machine with 2 CPUs and a simulated vendor on 127.0.0.1, in one process (no xdist:
    one Ray instance). 42 s on an idle 2-core machine with its install, but Ray starts a
    dozen processes of its own: beside two CPU-burning processes it took 10 min 20 s, so it
    is not in the default sessions nor in CI."""
    session.install(".[test,ray]", env=COMPILED)
    session.run("pytest", "tests/ray", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site (mkdocs-material; API pages built by mkdocstrings from the docstrings):
    ``mkdocs build --strict`` fails on a broken link or anchor, a page missing from the nav
    or an unreadable docstring; then every python block of docs/ and README.md runs against
    the simulated vendor (tests/docs)."""
    session.install(".[test,docs,pandas]", env=COMPILED)  # pandas: the dataframe examples run too
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")
    session.run(
        "pytest", "tests/docs", "-p", "no:cacheprovider", *session.posargs, env=KEEP_REWRITTEN
    )


@nox.session
def frames(session: nox.Session) -> None:
    """BatchResult.to_pandas() / to_polars() with both extras installed (the default
    session has neither, and those tests skip there)."""
    session.install(".[test,pandas,polars]", env=COMPILED)
    session.run(
        "pytest",
        "tests/unit/integrations/test_frames.py",
        "tests/unit/report/test_notebook_views.py",
        "-p",
        "no:cacheprovider",
        *session.posargs,
    )


@nox.session
def otel(session: nox.Session) -> None:
    """The ``cross-judge[otel]`` extra: spans checked against the SDK's in-memory exporter
    and a golden file, then the integration suite with the API installed (the no-op path)."""
    session.install(".[test,otel]", "opentelemetry-sdk", env=COMPILED)
    session.run(
        "pytest",
        "-n",
        "auto",
        "-p",
        "no:cacheprovider",
        "tests/unit/test_otel.py",
        "tests/unit/content/test_readers_otlp_own_spans.py",
        "tests/integration",
        *session.posargs,
    )


@nox.session
def browser(session: nox.Session) -> None:
    """The HTML report (``cross-judge report``) opened in headless Chromium: no console
    error, nothing fetched, the heatmap's kappas, the tables' counts, search and sort, a
    screenshot (``CROSS_JUDGE_REPORT_SCREENSHOT=path``); and the offline labelling page
    (``cross-judge label-queue``) labelled with key presses, reloaded and exported.
    Playwright drives Debian's ``chromium`` and downloads no browser. Without one, the
    session installs it with apt-get when it can (as root, as in CI); where it cannot, the
    browser tests are skipped, saying why."""
    if (
        shutil.which("chromium") is None
        and shutil.which("apt-get")
        and getattr(os, "geteuid", lambda: -1)() == 0
    ):
        session.run("apt-get", "update", "-qq", external=True, success_codes=[0, 100])
        session.run(
            "apt-get", "install", "-y", "-qq", "chromium", external=True, success_codes=[0, 100]
        )
    session.install(
        ".[test,report]",
        "playwright>=1.45",
        env={**COMPILED, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
    )
    session.run(
        "pytest",
        "tests/browser",
        "tests/unit/report/test_report_page.py",
        "-p",
        "no:cacheprovider",
        *session.posargs,
    )


@nox.session
def faults(session: nox.Session) -> None:
    """The reliability suite alone (tests/faults: fault injection, 5,000-item load with
    random faults, interrupts, fuzzing, secrets, hostile items), at full size: CI runs it
    as part of ``tests`` with 40% of the fuzz inputs and load items. It can run longer:
    ``CROSS_JUDGE_FUZZ_SCALE=10`` multiplies the fuzz inputs,
    ``CROSS_JUDGE_LOAD_ITEMS=50000`` sets the load run's items."""
    session.install(".[test]", env=COMPILED)
    session.run("pytest", "tests/faults", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def live(session: nox.Session) -> None:
    """The integration tests (one critic, an ensemble, a batch, ``cross-judge review``, a
    wrong model, a wrong key) against the real endpoint the environment names:
    ``CROSS_JUDGE_LIVE_BASE_URL``, ``CROSS_JUDGE_LIVE_MODEL``, optionally
    ``CROSS_JUDGE_LIVE_KEY_ENV`` (the name of the key's variable), ``_PROTOCOL``,
    ``_VENDOR``, ``_TIMEOUT``, ``_MAX_TOKENS`` (see tests/live/conftest.py). Without the
    URL every test is skipped. Not part of CI: it calls a vendor (about forty calls)."""
    session.install(".[test]", env=COMPILED)
    session.run("pytest", "tests/live", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def compat(session: nox.Session) -> None:
    """cross-judge 0.1.0's own legacy-API tests (reviewer, panel, aggregation, prompts,
    vendors, voting: 107 tests) against this package: ``compat01/run.py`` fetches the 0.1.0
    sdist from the package index (cached in ``compat01/.cache``), checks its sha256 and
    requires all 107 to pass."""
    session.install(".[test]", "pip", env=COMPILED)
    session.run("python", "compat01/run.py", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint + format check) on src and tests, mypy --strict on src."""
    session.install(".[lint]", env=COMPILED)
    paths = ("src", "tests", "bench", "examples", "compat01", "noxfile.py")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("mypy", "--strict", "src/cross_judge")


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark: each prints a table, each target with PASS/MISS, and writes
    bench/results/<name>.json; then the table of every target. About 28 minutes on a
    2-core machine, nearly half of it the Ray benchmark (it streams a million items); it installs
    the ``ray`` extra for that."""
    # krippendorff and numpy for the statistics comparison, crowd-kit for Dawid-Skene's
    # (an oracle, never a dependency). Bytecode compiled at install (COMPILED): cold-start
    # numbers must not include compiling.
    session.install(".[test,ray]", "crowd-kit", "statsmodels", env=COMPILED)
    for script in (
        "bench_fanout.py",
        "bench_throughput.py",
        "bench_transport.py",
        "bench_cpu.py",
        "bench_coldstart.py",
        "bench_loop_stall.py",
        "bench_redaction.py",
        "bench_memory.py",
        "bench_savings.py",
        "bench_cascade.py",
        "bench_rubric.py",
        "bench_units.py",
        "bench_content.py",
        "bench_confidence_sources.py",
        "bench_reliability.py",
        "bench_bias.py",
        "bench_ranking.py",
        "bench_rank_scale.py",
        "bench_rank_votes.py",
        "bench_rank_design.py",
        "bench_align.py",
        "bench_select_panel.py",
        "bench_batch.py",
        "bench_images.py",
        "bench_ray.py",
        "bench_stats.py",
        "bench_stats_memory.py",
        "bench_import.py",
        "bench_label_queue.py",
        "bench_journal.py",
        "bench_dawid_skene.py",
        "bench_revote.py",
        "bench_bt_fit.py",
        "bench_estimates.py",
        "bench_compare.py",
        "bench_vs_01.py",
    ):
        session.run("python", f"bench/{script}")
    # The interval coverage of every label-queue strategy at every floor (issue 41; about
    # 6 minutes): the grid docs/labels-from-people.md quotes.
    session.run("python", "bench/bench_estimates.py", "--grid", "--draws", "1000")
    # Last, so that no other benchmark runs with an OpenTelemetry provider installed (the
    # API alone comes with the anthropic SDK, and stays a no-op without one).
    session.install(".[otel]", "opentelemetry-sdk", env=COMPILED)
    session.run("python", "bench/bench_otel.py")
    session.run("python", "bench/summary.py")  # docs/performance.md's table; fails on a MISS
