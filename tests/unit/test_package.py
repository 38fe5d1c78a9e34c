"""The package itself: public names, no import-time side effects, packaged prompts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

import cross_judge
from cross_judge._resources import prompt_files

from ..waits import SAFETY_NET_S


def test_every_public_name_is_exported() -> None:
    for name in cross_judge.__all__:
        assert hasattr(cross_judge, name), name


def test_version_is_a_string() -> None:
    assert isinstance(cross_judge.__version__, str) and cross_judge.__version__[0].isdigit()


def test_import_has_no_side_effects_and_loads_no_http_stack(tmp_path: Path) -> None:
    code = (
        "import sys, cross_judge\n"
        "heavy = [m for m in ('aiohttp', 'httpx', 'openai', 'anthropic', 'rich', 'trio', "
        "'nest_asyncio') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    # Import the same copy of the package this test run uses, from an empty directory.
    package_root = str(Path(cross_judge.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": package_root}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        check=True,
    )
    assert out.stdout.strip() == ""
    assert list(tmp_path.iterdir()) == []


def test_packaged_prompt_is_shipped_and_valid_yaml() -> None:
    data = yaml.safe_load((prompt_files() / "taxonomy-review.yaml").read_text(encoding="utf-8"))
    assert data["id"] == "taxonomy-review"
    assert "{query}" in data["user_prompt_template"]


def test_the_mit_license_ships_with_the_distribution() -> None:
    from importlib.metadata import distribution

    dist = distribution("cross-judge")
    assert dist.metadata["License-Expression"] == "MIT"
    licenses = [f for f in dist.files or [] if f.name == "LICENSE"]
    assert licenses, "LICENSE is missing from the installed distribution"
    assert licenses[0].read_text().startswith("MIT License")
