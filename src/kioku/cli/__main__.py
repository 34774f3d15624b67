"""``python -m kioku.cli``."""

from kioku.cli import app

app()
