"""The business rules. Every surface (REST, MCP, SDK, CLI, UI) calls these and nothing else."""
