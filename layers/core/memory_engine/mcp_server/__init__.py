"""The MCP server: the engine's tools for agents (``tools.py``) over an :class:`EngineBackend`
(``backend.py``): in-process services on ``POST /v1/mcp`` (``in_process.py``, ``streamable_http.py``),
a remote engine over HTTP for ``memory-engine mcp`` on stdio (``remote.py``).

Importing this package imports nothing of the ``mcp`` SDK; ``tools.build_server`` does.
"""
