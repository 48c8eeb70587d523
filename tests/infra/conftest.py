"""Infra tests: synthesize the CDK app ONCE per session (jsii starts Node; a synth takes ~15 s)."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
#: the ``-c converter_allowed_hosts=...`` of the synthesized app
CONVERTER_ALLOWED_HOSTS = "converter.internal:8443,10.40.8.9"
INFRA_DIR = Path(__file__).resolve().parents[2] / "infra"
if str(INFRA_DIR) not in sys.path:
    sys.path.insert(0, str(INFRA_DIR))


@dataclass(frozen=True)
class Synthesized:
    template: dict[str, Any]
    validation_report: dict[str, Any]

    def resources(self, type_: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == type_}

    def properties(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self.template["Resources"][logical_id].get("Properties", {})
        return props


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Synthesized:
    """One synthesis per test run: the first pytest-xdist worker to get here synthesizes and writes
    the template and cdk-nag's report beside the workers' temporary folders; the others wait on the
    lock and read them."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    written = shared / "synthesized.json"
    with open(shared / "synthesized.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not written.exists():
            written.write_text(json.dumps(_synthesize(tmp_path_factory.mktemp("cdk.out"))), "utf-8")
        return Synthesized(**json.loads(written.read_text("utf-8")))


def _synthesize(outdir: Path) -> dict[str, Any]:
    from memory_engine_infra.app import STACK_NAME, build_app

    # the placeholder dependency layer: tests must not depend on `make layer` having run
    # and an operator's CONVERTER_ALLOWED_HOSTS, to see where the stack passes it
    app = build_app({"layers_prebuilt": "false", "converter_allowed_hosts": CONVERTER_ALLOWED_HOSTS}, outdir=str(outdir))
    assembly = app.synth()  # raises when cdk-nag reports an unacknowledged error
    template = assembly.get_stack_by_name(STACK_NAME).template
    report = json.loads((outdir / "validation-report.json").read_text("utf-8"))
    return {"template": template, "validation_report": report}
