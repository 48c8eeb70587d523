"""`memory-engine events send FILE.json [--wait]` and `memory-engine events schema`.

``send`` posts each event in FILE (one EventBridge-shaped ``turn.completed`` event, or a list) to
the running local server (``POST /v1/events`` with ``--key`` / ``MEMORY_ENGINE_API_KEY``). When no
server answers at ``--url`` (or with ``--in-process``), it opens the local database itself and
delivers each event to the extraction consumer in-process, as one SQS batch, and waits for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from memory_engine import constants as c
from memory_engine.settings import DEFAULT_CLIENT_URL, ClientSettings


def register(sub: Any) -> None:
    events = sub.add_parser("events", help="send turn.completed events (the local EventBridge stand-in)")
    commands = events.add_subparsers(dest="events_command", required=True)
    send = commands.add_parser("send", help="send the event(s) in FILE.json")
    send.add_argument("file", type=Path, help="a JSON file: one EventBridge event, or a list of them")
    send.add_argument("--wait", action="store_true", help="wait until the consumer finished each event")
    send.add_argument("--url", default=None, help=f"local server (default ${c.ENV_CLIENT_URL} or {DEFAULT_CLIENT_URL})")
    send.add_argument("--key", default=None, help=f"API key with write scope (or ${c.ENV_CLIENT_API_KEY})")
    send.add_argument("--in-process", action="store_true", help="skip the server: run the consumer in this process")
    send.set_defaults(func=run_send)
    schema = commands.add_parser("schema", help="print the JSON Schema of turn.completed")
    schema.set_defaults(func=run_schema)


def run_schema(args: argparse.Namespace) -> int:
    from memory_engine.domain.events import turn_completed_json_schema

    print(json.dumps(turn_completed_json_schema(), indent=2))
    return 0


def _load(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data if isinstance(data, list) else [data]
    if not all(isinstance(e, dict) for e in events):
        raise ValueError("the file must hold an event object or a list of event objects")
    return events


def _server_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/v1/health", timeout=2):  # noqa: S310 (a local URL)
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except (urllib.error.URLError, OSError):
        return False


def _post(url: str, key: str, event: dict[str, Any], wait: bool) -> tuple[int, Any]:
    request = urllib.request.Request(  # noqa: S310 (the user's local server)
        f"{url.rstrip('/')}/v1/events" + ("?wait=true" if wait else ""),
        data=json.dumps(event).encode(), method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=180) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def run_send(args: argparse.Namespace) -> int:
    try:
        events = _load(args.file)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    client = ClientSettings()
    args.url, args.key = args.url or client.url, args.key or client.api_key
    if not args.in_process and _server_up(args.url):
        if not args.key:
            print(f"error: the server at {args.url} needs an API key: pass --key or set {c.ENV_CLIENT_API_KEY}",
                  file=sys.stderr)
            return 2
        failed = 0
        for event in events:
            status, body = _post(args.url, args.key, event, args.wait)
            print(json.dumps({"http_status": status, **(body if isinstance(body, dict) else {"body": body})}))
            failed += status >= 400
        return 1 if failed else 0
    return _send_in_process(events)


def _send_in_process(events: list[dict[str, Any]]) -> int:
    from memory_engine.cli._common import local_container
    from memory_engine.errors import MemoryEngineError
    from memory_engine.http.events import parse_event
    from memory_engine.local.event_queue import HANDLER, sqs_record
    from memory_engine.local.lambda_runtime import invoke

    print("no local server answered: running the extraction consumer in this process", file=sys.stderr)
    failed = 0
    with local_container() as container:
        for raw in events:
            try:
                event = parse_event(raw, region=container.settings.aws_region)
                container.memories.get(event.detail.project_id, event.detail.memory_id)
            except MemoryEngineError as error:
                print(json.dumps({"error": error.to_body()["error"]}))
                failed += 1
                continue
            body = json.dumps(event.to_eventbridge())
            record = sqs_record(event.id, body, attempts=1, sent_at_ms=int(time.time() * 1000))
            response = invoke(HANDLER, {"Records": [record]}, "memory-engine-extraction")
            delivered = not (response or {}).get("batchItemFailures")
            run = container.extraction_runs.get_by_event(event.detail.project_id, event.id)
            print(json.dumps({
                "id": event.id, "status": "succeeded" if delivered else "failed (would be retried)",
                "run": None if run is None else {
                    "id": run.id, "status": run.status, "attempts": run.attempts, "episode_id": run.episode_id,
                    "summary": run.summary, "error": run.error,
                },
            }, default=str))
            failed += not delivered
    return 1 if failed else 0
