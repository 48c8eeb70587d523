"""`memory-engine mcp`: the MCP server on stdio, for desktop agents and IDEs, talking to a local or
remote engine by URL and API key (the key's project and scopes apply, as on the HTTP API)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory_engine import constants as c
from memory_engine.settings import DEFAULT_CLIENT_URL, ClientSettings


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "mcp", help="serve the MCP tools on stdio against an engine (URL + API key)",
        description="Serve the MCP tools (search_knowledge, write_memory, ...) over stdio. The tools call the engine "
                    f"at --url with --key; both default to ${c.ENV_CLIENT_URL} and ${c.ENV_CLIENT_API_KEY}. "
                    "Stdout carries the protocol; logs go to stderr.",
    )
    parser.add_argument("--url", default=None, help=f"engine URL (default: ${c.ENV_CLIENT_URL} or {DEFAULT_CLIENT_URL})")
    parser.add_argument("--key", default=None, help=f"API key (default: ${c.ENV_CLIENT_API_KEY})")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per engine call (default 60)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memory_engine.mcp_server.remote import RemoteBackend
    from memory_engine.mcp_server.tools import build_server

    client = ClientSettings()
    url = args.url or client.url
    key = args.key or client.api_key
    if not key:
        print(f"error: no API key: pass --key or set {c.ENV_CLIENT_API_KEY} "
              "(`memory-engine keys create --project NAME` mints one)", file=sys.stderr)
        return 2
    backend = RemoteBackend(url, key, timeout=args.timeout)
    try:
        build_server(backend).run("stdio")
    finally:
        backend.close()
    return 0
