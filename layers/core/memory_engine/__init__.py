"""memory-engine: a memory and knowledge engine for AI agents on PostgreSQL + pgvector."""

__version__ = "0.1.0"
