"""The UI's pages, one module per area (each an ``APIRouter``)."""
