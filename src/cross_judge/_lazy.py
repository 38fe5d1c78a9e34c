"""Lazy re-exports for a package's ``__init__`` (PEP 562), shared by every sub-package.

A package lists the names it exports from its private modules and where each lives; the
first access to one imports that module, binds the name in the package and returns it, so
the next access is a plain attribute lookup and the object keeps its identity (and its
pickles, which record the defining module). Importing the package itself imports none of
them. Type checkers and IDEs see the same names through the package's ``TYPE_CHECKING``
imports; ``tests/test_lazy_import.py`` checks that the three lists (table, ``TYPE_CHECKING``
block, ``__all__``) agree.

Usage, in ``pkg/__init__.py``::

    _exports = LazyExports(__name__, {"Thing": "._thing", "other": "._misc:real_name"})

    def __getattr__(name: str) -> object:
        return _exports.load(name)

    def __dir__() -> list[str]:
        return _exports.names(globals())
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

__all__ = ["LazyExports"]


class LazyExports:
    """The lazily exported names of one package: name -> ``".module"`` or
    ``".module:attribute"`` (relative to the package), imported on first access.

    An unknown name raises :class:`AttributeError` as a module attribute lookup does, so
    ``hasattr``, ``getattr(pkg, name, default)`` and ``from pkg import missing`` behave as
    for any module.
    """

    __slots__ = ("_package", "_table")

    def __init__(self, package: str, table: Mapping[str, str]) -> None:
        for name, target in table.items():
            if not target.startswith("."):
                raise ValueError(f"{package}.{name}: {target!r} must be relative ('.module')")
        self._package = package
        self._table = dict(table)

    @property
    def table(self) -> Mapping[str, str]:
        """The name -> target table, as given."""
        return self._table

    def load(self, name: str) -> object:
        """Import the module ``name`` lives in, bind ``name`` in the package, return it."""
        target = self._table.get(name)
        if target is None:
            raise AttributeError(f"module {self._package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        module = importlib.import_module(module_name, self._package)
        value = getattr(module, attribute or name)
        setattr(sys.modules[self._package], name, value)
        return value

    def names(self, bound: Mapping[str, object]) -> list[str]:
        """``dir()`` of the package: what is bound plus every lazy name, imported or not."""
        return sorted({*bound, *self._table})
