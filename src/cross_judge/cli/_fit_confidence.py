"""``cross-judge stats --fit-confidence``: each critic's confidence calibration fitted on
labelled items, its calibration error before and after, and the ``calibration:`` lines to
paste into the panel file.

The fitting itself is :func:`cross_judge.stats._reliability.calibrate_confidence`; this
module only runs it per critic and writes what it found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._common import EXIT_FAILED, EXIT_OK, counted, note, say, stderr_console, stdout_console

if TYPE_CHECKING:
    from ..batch import BatchResult
    from ..stats import CalibrationMethod, ConfidenceCalibration

__all__ = ["calibration_snippet", "fit_confidence"]


def fit_confidence(
    batch: BatchResult, gold_path: Path, method: CalibrationMethod, source: str
) -> int:
    """``stats --fit-confidence``: each critic's calibration fitted on the labelled items
    (one at a time, so one that cannot be fit is named and the others are still printed),
    a table of its calibration error before and after on stdout; on stderr what that error
    is worth, and each critic whose error the fit did not lower; then the ``calibration:``
    lines for the panel file on stdout. Exit code 1 when some critic could not be fit."""
    from rich import box
    from rich.table import Table

    from ..cascade_calibration import load_gold
    from ..stats import calibrate_confidence

    gold = load_gold(gold_path)
    out, err = stdout_console(), stderr_console()
    fits: dict[str, ConfidenceCalibration] = {}
    failed: list[str] = []
    for name in batch.critics:
        try:
            fits.update(calibrate_confidence(batch, gold, method=method, critics=[name]))
        except ConfigError as exc:
            failed.append(name)
            note(err, f"no calibration for {exc}")
    if fits:
        table = Table(
            box=box.SIMPLE_HEAD,
            title=f"confidence calibration ({method}), fitted on the labelled items",
            title_justify="left",
            caption="ECE after: on the same items it was fitted on (in-sample, so it flatters)",
        )
        for column in ("critic", "fitted on", "ECE before", "ECE after", "map"):
            table.add_column(column, justify="left" if column in ("critic", "map") else "right")
        for name, fit in fits.items():
            table.add_row(
                name,
                counted(fit.n, "vote"),
                f"{fit.ece_before:.3f}",
                f"{fit.ece_after:.3f}",
                _calibration_map(fit),
            )
        say(out, "")
        out.print(table)
        for name, fit in fits.items():
            if fit.ece_after >= fit.ece_before:
                note(
                    err,
                    f"critic {name!r}: {method} scaling did not lower its calibration error even "
                    f"on the items it was fitted on ({fit.ece_before:.3f} -> "
                    f"{fit.ece_after:.3f}); leave it uncalibrated (its lines out of the panel file)"
                    + (" or try --fit-confidence isotonic" if method == "temperature" else ""),
                )
        note(
            err,
            "the ECE after calibration is measured on the labelled items the calibration was "
            "fitted on, so it flatters the fit (an isotonic map's is near 0 by construction). "
            "Fit on one labelled set, then check on another: review a second labelled set with "
            "the calibrated panel and run cross-judge stats on it with --gold",
        )
        say(out, "")
        say(out, calibration_snippet(fits, method, source))
    return EXIT_FAILED if failed else EXIT_OK


def _calibration_map(fit: ConfidenceCalibration) -> str:
    """The fitted map in a few words: the temperature, or the isotonic steps."""
    if fit.temperature is not None:
        trend = "tempers" if fit.temperature > 1 else "sharpens"
        return f"temperature {fit.temperature:.3g} ({trend})"
    return counted(len(fit.values), "isotonic step")


def calibration_snippet(fits: dict[str, ConfidenceCalibration], method: str, source: str) -> str:
    """Each critic's ``calibration:`` line for the panel file, under its name as a key."""
    lines = [
        f"# fitted by cross-judge stats --fit-confidence {method} on the labelled items of "
        f"{source}",
        "# paste each calibration: line into the panel file, under the critic of that name "
        "(beside its model:)",
    ]
    for name, fit in fits.items():
        lines.append(f"{_yaml_key(name)}:")
        lines.append(f"  calibration: {_calibration_yaml(fit)}")
    return "\n".join(lines)


def _calibration_yaml(fit: ConfidenceCalibration) -> str:
    """``fit.to_dict()`` as a one-line YAML flow mapping, only the keys its method uses;
    floats written so that YAML reads back exactly the same number."""
    data = fit.to_dict()
    keys = ["method", "temperature"] if fit.method == "temperature" else ["method"]
    if fit.method != "temperature":
        keys += ["breakpoints", "values"]
    keys += ["n", "bins", "ece_before", "ece_after"]

    def scalar(value: object) -> str:
        if isinstance(value, float):
            return _yaml_float(value)
        if isinstance(value, list):
            return "[" + ", ".join(scalar(v) for v in value) + "]"
        return str(value)

    return "{" + ", ".join(f"{key}: {scalar(data[key])}" for key in keys) + "}"


def _yaml_float(value: float) -> str:
    """``repr(value)``, which reads back exactly, with ``.0`` added to a bare exponent
    mantissa (``1e-06`` -> ``1.0e-06``): YAML 1.1 reads a float only with a dot."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def _yaml_key(name: str) -> str:
    """``name`` as a YAML mapping key: as is when YAML reads it back as that text, else
    double-quoted (JSON's quoting is valid YAML)."""
    import re

    import yaml

    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name) is not None
    if plain and yaml.safe_load(name) == name:
        return name
    return json.dumps(name)
