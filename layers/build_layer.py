"""Build the dependency layer for arm64 Lambda (Python 3.12) with pip, no Docker.

    python layers/build_layer.py            # -> build/layers/deps/python/...
    python layers/build_layer.py --clean    # start from an empty folder

pip downloads the manylinux2014_aarch64 / cp312 wheels of the package's runtime dependencies
(``[project].dependencies`` in pyproject.toml) and unpacks them into ``build/layers/deps/python``.
The CDK app (infra/memory_engine_infra/layers.py) uses that folder when the marker file written
last by this script exists.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "build" / "layers" / "deps"
MARKER = "layer-requirements.txt"  # must match memory_engine_infra.layers.BUILT_MARKER
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
#: Never needed at run time in Lambda; dropping them keeps the layer well under the 250 MB limit.
PRUNE_DIRS = ("__pycache__", "tests", "test")


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The ``[project].dependencies`` of pyproject.toml (what the Lambda functions import)."""
    data = tomllib.loads(pyproject.read_text("utf-8"))
    return list(data["project"]["dependencies"])


def pip_command(requirements: list[str], target: Path, python: str = sys.executable) -> list[str]:
    """The pip invocation that fetches Lambda-compatible (arm64, CPython 3.12) wheels only."""
    return [
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--platform", PLATFORM, "--implementation", "cp", "--python-version", PYTHON_VERSION,
        "--only-binary=:all:", "--upgrade", "--target", str(target), *requirements,
    ]


def prune(site: Path) -> None:
    for name in PRUNE_DIRS:
        for path in sorted(site.rglob(name), reverse=True):
            # keep packages that are literally named "test(s)" at top level
            if path.is_dir() and path.parent != site:
                shutil.rmtree(path, ignore_errors=True)


def build(out: Path = DEFAULT_OUT, *, clean: bool = False) -> Path:
    requirements = runtime_requirements()
    site = out / "python"
    if clean and out.exists():
        shutil.rmtree(out)
    (out / MARKER).unlink(missing_ok=True)  # an interrupted build must not look complete
    site.mkdir(parents=True, exist_ok=True)
    subprocess.run(pip_command(requirements, site), check=True)  # noqa: S603 - fixed argv, no shell
    prune(site)
    (out / MARKER).write_text("\n".join(requirements) + "\n", "utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="layer folder (default: build/layers/deps)")
    parser.add_argument("--clean", action="store_true", help="delete the folder first")
    args = parser.parse_args(argv)
    out = build(args.out, clean=args.clean)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"dependency layer ready in {out} ({size / 1e6:.1f} MB unzipped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
