"""Versioned SQL migrations: ``NNNN_name.sql``, applied in order by ``adapters.postgres.migrations``.

A database records each applied migration by its *version number* (``schema_migrations.version``),
so the number of a migration that shipped never changes: renumbering would re-apply one migration
under a new number and make the last one look unknown (a newer release) to every existing database.

There is no version 2: it was never part of a release (the foundation shipped 0001; the write
funnel's exact-duplicate index came next, numbered 0003). :data:`SKIPPED_VERSIONS` records that,
and loading fails on any other gap, so a new migration is always the highest version plus one.
"""

#: Versions that never existed; any other gap in the numbering is an error.
SKIPPED_VERSIONS = frozenset({2})
