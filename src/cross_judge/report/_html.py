"""What every self-contained HTML page of results shares: text made safe to show
(:func:`html_text`), the opening of a page that fetches nothing (:func:`page_open`) and
the packaged assets pages inline (:func:`asset`).

The comparison page, the leaderboard and the alignment page open the same way: a
Content-Security-Policy (:data:`STRICT_CSP`) that forbids every fetch and every script,
so a page opens from disk offline and a hostile value in it cannot load anything.
"""

from __future__ import annotations

from html import escape
from importlib import resources

from .._version import __version__
from ._summary import printable

__all__ = ["STRICT_CSP", "asset", "html_text", "page_open"]

STRICT_CSP = "default-src 'none'; style-src 'unsafe-inline'"
"""The policy of a page with no script: nothing is fetched, only inline styles apply."""


def html_text(value: object) -> str:
    """``value`` as HTML text, quotes escaped too; a lone surrogate or a bidirectional
    control as its escape (:func:`~cross_judge.report._summary.printable`)."""
    return escape(printable(str(value)), quote=True)


def page_open(title: str, style: str) -> str:
    """A page up to its ``<body>``: the doctype, the :data:`STRICT_CSP` policy, the
    viewport, cross-judge's version as generator, ``title`` (escaped) and ``style``
    (inlined as given)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{STRICT_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="cross-judge {html_text(__version__)}">'
        f"<title>{html_text(title)}</title><style>{style}</style></head><body>"
    )


def asset(name: str) -> str:
    """The text of the packaged file ``report_assets/<name>`` (a stylesheet, a script)."""
    return (resources.files("cross_judge") / "report_assets" / name).read_text(encoding="utf-8")
