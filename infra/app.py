"""CDK entry point: ``cdk synth`` / ``cdk deploy`` (cdk.json runs ``python3 infra/app.py``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "layers" / "core"):  # memory_engine_infra + memory_engine (shared constants)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def main() -> None:
    from memory_engine_infra.app import build_app

    build_app().synth()


if __name__ == "__main__":
    main()
