"""Build the dependency layers for arm64 Lambda (Python 3.12) with pip, no Docker.

    python layers/build_layer.py            # -> build/layers/deps/python/... and build/layers/mcp/python/...
    python layers/build_layer.py --clean    # start from empty folders

pip resolves the package's runtime dependencies (``[project].dependencies`` in pyproject.toml) once,
as manylinux2014_aarch64 / cp312 wheels, into one folder; the distributions only the MCP server
needs (``mcp`` and what nothing else requires: starlette, uvicorn, sse-starlette, jsonschema,
pyjwt[crypto] -> cryptography, ...) then move to a layer of their own, which only the function
serving ``POST /v1/mcp`` (the API function) gets. One resolution, so both layers hold the versions
pip chose together. The CDK app (infra/memory_engine_infra/layers.py) uses the folders when the
marker file written last by this script exists.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "build" / "layers"
MARKER = "layer-requirements.txt"  # must match memory_engine_infra.layers.BUILT_MARKER
PLATFORM = "manylinux2014_aarch64"
PYTHON_VERSION = "3.12"
#: The requirements whose own dependency closure goes to the MCP layer (minus what the rest needs).
MCP_ONLY = frozenset({"mcp"})
#: The environment Lambda's markers are evaluated in.
LAMBDA_MARKERS = {"python_version": PYTHON_VERSION, "python_full_version": f"{PYTHON_VERSION}.0",
                  "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64",
                  "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython"}
#: Never needed at run time in Lambda; dropping them keeps the layers well under the 250 MB limit.
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


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(site: Path, requirements: Iterable[str]) -> set[str]:
    """The normalized names of the distributions in ``site`` that ``requirements`` need, extras and
    Lambda's markers followed."""
    dists = {_key(d.metadata["Name"]): d for d in metadata.distributions(path=[str(site)])}
    needed: set[str] = set()
    pending = [(Requirement(r), "") for r in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({**LAMBDA_MARKERS, "extra": extra}):
            continue
        name = _key(requirement.name)
        dist = dists.get(name)
        if dist is None:
            continue
        first = name not in needed
        needed.add(name)
        for wanted in (*([""] if first else []), *requirement.extras):
            pending.extend((Requirement(r), wanted) for r in dist.requires or ())
    return needed


def split_mcp(site: Path, mcp_site: Path, requirements: list[str]) -> list[str]:
    """Move every distribution only the MCP requirements need from ``site`` to ``mcp_site``; returns
    their names."""
    base = closure(site, [r for r in requirements if _key(Requirement(r).name) not in MCP_ONLY])
    moved = []
    mcp_site.mkdir(parents=True, exist_ok=True)
    for dist in metadata.distributions(path=[str(site)]):
        name = _key(dist.metadata["Name"])
        if name in base:
            continue
        for file in dist.files or ():
            source = Path(str(dist.locate_file(file)))
            if source.is_file() and site in source.parents:
                destination = mcp_site / source.relative_to(site)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(source, destination)
        moved.append(name)
    for folder in sorted((p for p in site.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return sorted(moved)


def prune(site: Path) -> None:
    for name in PRUNE_DIRS:
        for path in sorted(site.rglob(name), reverse=True):
            # keep packages that are literally named "test(s)" at top level
            if path.is_dir() and path.parent != site:
                shutil.rmtree(path, ignore_errors=True)


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def build(out: Path = DEFAULT_OUT, *, clean: bool = False) -> tuple[Path, Path]:
    """``out/deps`` (every function) and ``out/mcp`` (the API function), each with its marker."""
    requirements = runtime_requirements()
    deps, mcp = out / "deps", out / "mcp"
    for layer in (deps, mcp):
        if clean and layer.exists():
            shutil.rmtree(layer)
        (layer / MARKER).unlink(missing_ok=True)  # an interrupted build must not look complete
        if (layer / "python").exists():
            shutil.rmtree(layer / "python")  # a previous split: resolve again from scratch
    site = deps / "python"
    site.mkdir(parents=True)
    subprocess.run(pip_command(requirements, site), check=True)  # noqa: S603 - fixed argv, no shell
    moved = split_mcp(site, mcp / "python", requirements)
    prune(site)
    prune(mcp / "python")
    (deps / MARKER).write_text("\n".join(r for r in requirements if _key(Requirement(r).name) not in MCP_ONLY) + "\n")
    (mcp / MARKER).write_text("\n".join(moved) + "\n", "utf-8")
    return deps, mcp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="layers folder (default: build/layers)")
    parser.add_argument("--clean", action="store_true", help="delete the folders first")
    args = parser.parse_args(argv)
    deps, mcp = build(args.out, clean=args.clean)
    print(f"dependency layer ready in {deps} ({size_mb(deps):.1f} MB unzipped)")
    print(f"MCP layer (API function only) ready in {mcp} ({size_mb(mcp):.1f} MB unzipped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
