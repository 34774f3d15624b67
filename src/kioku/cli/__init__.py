"""The ``kioku`` command line (Typer)."""

from kioku.cli.app import app

__all__ = ["app"]
