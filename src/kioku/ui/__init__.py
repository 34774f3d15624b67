"""The web UI (docs/ui.md): server-rendered pages over the services, mounted at ``/ui``."""

from kioku.ui.app import build_ui

__all__ = ["build_ui"]
