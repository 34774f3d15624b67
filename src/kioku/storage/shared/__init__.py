"""The SQL both backends run alike, written once against ``shared.database.Database``.

Each module is one area's repository (contexts, memories, candidates, threads, transfer,
delivery, jobs, connectors, state, feedback, keys, OAuth, the memory filter; ``areas``
composes them): the statements are psycopg-style (``%s``); a backend's
``Dialect`` says only what its engine spells differently. See docs/architecture.md.
"""
