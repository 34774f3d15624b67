"""Connectors: read outside sources (a Slack export, a Markdown folder) and feed them to
the service by external id. They call ``service/``; surfaces call them."""
