"""`memory-engine keys create|list|revoke`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory_engine.cli._common import local_container
from memory_engine.domain.auth import parse_scopes
from memory_engine.domain.validation import project_name
from memory_engine.services.keys import create_api_key, revoke_api_key


def register(sub: Any) -> None:
    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="mint a key (creates the project if needed)")
    create.add_argument("--project", required=True, help="project name")
    create.add_argument("--scopes", default="read,write", help="comma-separated: read,write,admin (default read,write)")
    create.add_argument("--name", default=None, help="a label for the key")
    create.set_defaults(func=run_create)
    listing = keys.add_parser("list", help="list keys (never the raw keys)")
    listing.add_argument("--project", default=None)
    listing.set_defaults(func=run_list)
    revoke = keys.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id")
    revoke.set_defaults(func=run_revoke)


def run_create(args: argparse.Namespace) -> int:
    try:
        scopes = parse_scopes(args.scopes)
        project_name(args.project)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with local_container() as container:
        minted = create_api_key(container.projects, project_name=args.project, scopes=scopes, name=args.name)
    record = minted.record
    print(f"created key {record.id} for project {args.project} ({record.project_id}) "
          f"scopes={','.join(sorted(s.value for s in record.scopes))}; it is shown only once:", file=sys.stderr)
    print(minted.raw_key)
    return 0


def run_list(args: argparse.Namespace) -> int:
    with local_container() as container:
        projects = {p.id: p.name for p in container.projects.list_projects()}
        project_id = None
        if args.project:
            project = container.projects.get_project(args.project)
            if project is None:
                print(f"error: no project {args.project!r}", file=sys.stderr)
                return 1
            project_id = project.id
        records = container.projects.list_keys(project_id)
    print(f"{'id':32} {'project':16} {'prefix':12} {'scopes':18} {'status':8} created")
    for r in records:
        status = "revoked" if r.revoked_at else "active"
        scopes = ",".join(sorted(s.value for s in r.scopes))
        print(f"{r.id:32} {projects.get(r.project_id, r.project_id):16} {r.key_prefix + '…':12} {scopes:18} "
              f"{status:8} {r.created_at:%Y-%m-%d %H:%M}")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    with local_container() as container:
        revoke_api_key(container.projects, args.key_id)
    print(f"revoked {args.key_id}")
    return 0
