"""The package version, in one place (read by hatchling and by ``cross_judge.__version__``)."""

__version__ = "1.0.0.dev0"
