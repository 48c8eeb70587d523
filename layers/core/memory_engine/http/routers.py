"""Which routers each Lambda serves. The API Gateway route table in infra/ follows the same split."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router


def api_routers() -> list[Router]:
    """Routes of the write/read API Lambda (`functions/api`), the web console's static files included."""
    from memory_engine.http import (
        console,
        converter_callbacks,
        documents,
        embeddings,
        entries,
        entry_batches,
        extraction_runs,
        health,
        ingestion_rules,
        lifecycle,
        mcp,
        memories,
        turns,
    )

    return [health.router, memories.router, entries.router, entry_batches.router, lifecycle.router, documents.router,
            ingestion_rules.router, converter_callbacks.router, embeddings.router, extraction_runs.router, mcp.router,
            turns.router, console.router]


def search_routers() -> list[Router]:
    """Routes of the search Lambda (`functions/search`), which has read-only DB credentials."""
    from memory_engine.http import search

    return [search.router]


def local_routers() -> list[Router]:
    """Routes only the local server has (the EventBridge and S3 stand-ins)."""
    from memory_engine.http import events, local_downloads, local_uploads

    return [events.router, local_uploads.router, local_downloads.router]
