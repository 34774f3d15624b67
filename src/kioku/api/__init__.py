"""The REST API (FastAPI) under ``/api/v1``."""

from kioku.api.app import create_app

__all__ = ["create_app"]
