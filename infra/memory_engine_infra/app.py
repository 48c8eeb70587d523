"""Build the CDK app: the stack plus cdk-nag's AWS Solutions checks."""

from __future__ import annotations

import os
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from memory_engine_infra.stack import MemoryEngineStack

STACK_NAME = "MemoryEngine"


def build_app(context: dict[str, Any] | None = None, *, outdir: str | None = None) -> App:
    app = App(context=context or None, outdir=outdir)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    region = app.node.try_get_context("region") or os.environ.get("CDK_DEFAULT_REGION") or "us-east-1"
    MemoryEngineStack(app, STACK_NAME, env=Environment(account=account, region=region))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app
