"""Run cross-judge 0.1.0's own legacy-API tests against the cross-judge installed here.

    python compat01/run.py [extra pytest arguments]

What it does, needing nothing but this interpreter (with pytest, pip and cross-judge
installed) and, the first time, the package index:

1. Gets the 0.1.0 sdist: ``python -m pip download --no-deps --no-binary :all:
   cross-judge==0.1.0`` into the cache folder (``$CROSS_JUDGE_COMPAT01_CACHE``, default
   ``compat01/.cache``), reused when already there. Its sha256 must be the published one.
2. Extracts only the seven legacy test files (reviewer, panel, aggregation, prompts,
   vendors, voting; 107 tests) into a new temporary folder, next to a copy of this
   folder's ``conftest.py`` (the fixtures the sdist does not ship) and a ``pytest.ini``
   written here. 0.1.0's own configuration (``pythonpath = ["src"]``) and source are never
   used, so the tests import the cross-judge installed in this interpreter.
3. Runs pytest on them in a subprocess, without vendor API keys in its environment, and
   exits 0 only if exactly 107 tests were collected and all 107 passed (a skip is a
   failure: it would hide a missing behaviour).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENT = "cross-judge==0.1.0"
SDIST_NAME = "cross_judge-0.1.0.tar.gz"
SDIST_SHA256 = "4f236279bbc98bcafcfe2089553c685affd81b3daa0e22034b726175766b2cdb"
TEST_FILES = (
    "test_reviewer.py",
    "test_voting.py",
    "test_voting_w11a_coverage.py",
    "test_vendors_w11a_coverage.py",
    "test_prompts_reviewer_w11a_coverage.py",
    "test_aggregation.py",
    "test_panel.py",
)
EXPECTED_TESTS = 107
CACHE_ENV = "CROSS_JUDGE_COMPAT01_CACHE"

# The tests' folder is the rootdir and this file the only configuration: neither 0.1.0's
# pyproject.toml (pythonpath = ["src"]) nor this repository's is read.
PYTEST_INI = """\
[pytest]
addopts = -p no:cacheprovider
asyncio_default_fixture_loop_scope = function
"""


class CompatError(Exception):
    """The run could not be set up (no sdist, wrong sdist, no pytest, ...)."""


def cache_dir() -> Path:
    """Where the sdist is kept: ``$CROSS_JUDGE_COMPAT01_CACHE`` or ``compat01/.cache``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser().resolve() if configured else HERE / ".cache"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch_sdist(cache: Path) -> Path:
    """The verified 0.1.0 sdist in ``cache``, downloaded with pip if it is not there yet.

    Raises:
        CompatError: pip is missing or fails, or the file is not the published sdist.
    """
    sdist = cache / SDIST_NAME
    if not sdist.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        command += ["--dest", str(cache), REQUIREMENT]
        print("compat01: downloading", REQUIREMENT, "into", cache, flush=True)
        try:
            done = subprocess.run(command, check=False)
        except OSError as exc:
            raise CompatError(f"cannot run pip: {exc}") from None
        if done.returncode != 0:
            raise CompatError(
                f"`{' '.join(command)}` failed (exit {done.returncode}). It needs pip in this "
                f"interpreter and the package index; or put {SDIST_NAME} in {cache} yourself"
            )
        if not sdist.is_file():
            raise CompatError(f"pip reported success but {sdist} does not exist")
    digest = sha256_of(sdist)
    if digest != SDIST_SHA256:
        raise CompatError(
            f"{sdist} has sha256 {digest}, not the published {SDIST_SHA256}: delete it and "
            f"run again to download it afresh"
        )
    return sdist


def extract_tests(sdist: Path, into: Path) -> list[Path]:
    """Write the seven test files of ``sdist`` into ``into`` (nothing else is extracted).

    The files are read from the archive and written under names chosen here, so no path
    stored in the archive is ever used.

    Raises:
        CompatError: a test file is missing from the archive.
    """
    written: list[Path] = []
    with tarfile.open(sdist, "r:gz") as archive:
        members = {m.name: m for m in archive.getmembers() if m.isfile()}
        for name in TEST_FILES:
            member = members.get(f"cross_judge-0.1.0/tests/{name}")
            stream = archive.extractfile(member) if member is not None else None
            if stream is None:
                raise CompatError(f"{sdist.name} has no tests/{name}")
            target = into / name
            target.write_bytes(stream.read())
            written.append(target)
    return written


def installed_cross_judge(cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    """``(version, location)`` of the cross-judge the tests will import."""
    probe = "import cross_judge; print(cross_judge.__version__); print(cross_judge.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise CompatError(f"cross_judge cannot be imported here:\n{done.stderr}")
    version, location = done.stdout.split("\n")[:2]
    return version, location


def count_outcomes(report: Path) -> dict[str, int]:
    """Tests per outcome (``passed``, ``failed``, ``error``, ``skipped``) in a JUnit report."""
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = "failed" if child.tag == "failure" else child.tag
                break
        counts[outcome] += 1
    return counts


def run(extra_args: list[str]) -> int:
    """Run the 0.1.0 tests; 0 when exactly 107 were collected and all passed."""
    sdist = fetch_sdist(cache_dir())
    with tempfile.TemporaryDirectory(prefix="cross-judge-compat01-") as tmp:
        folder = Path(tmp)
        extract_tests(sdist, folder)
        shutil.copyfile(HERE / "conftest.py", folder / "conftest.py")
        (folder / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
        report = folder / "report.xml"
        # No vendor key reaches the old tests, and no PYTHONPATH can put a source tree
        # (0.1.0's or this checkout's) ahead of the installed package.
        env = {
            k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"
        }
        version, location = installed_cross_judge(folder, env)
        print(f"compat01: testing cross-judge {version} from {location}", flush=True)
        if version == "0.1.0":
            raise CompatError("the installed cross-judge is 0.1.0 itself; install this checkout")
        command = [sys.executable, "-m", "pytest", "-c", str(folder / "pytest.ini")]
        command += ["--rootdir", str(folder), "-p", "no:cacheprovider", "-q"]
        command += [f"--junitxml={report}", *TEST_FILES, *extra_args]
        exit_code = subprocess.run(command, cwd=folder, env=env, check=False).returncode
        if not report.is_file():
            print(f"compat01: FAIL: pytest wrote no report (exit {exit_code})", file=sys.stderr)
            return exit_code or 1
        counts = count_outcomes(report)
    total = sum(counts.values())
    summary = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    if total != EXPECTED_TESTS or counts["passed"] != EXPECTED_TESTS:
        print(
            f"compat01: FAIL: expected {EXPECTED_TESTS} tests, all passing; got {total} "
            f"({summary})",
            file=sys.stderr,
        )
        return exit_code or 1
    print(f"compat01: OK: all {EXPECTED_TESTS} tests of cross-judge 0.1.0 passed", flush=True)
    return 0


def main() -> int:
    try:
        return run(sys.argv[1:])
    except CompatError as exc:
        print(f"compat01: FAIL: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
