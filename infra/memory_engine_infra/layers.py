"""The layers the functions use: the ``memory_engine`` package, its dependencies, and the MCP server's.

All are built without Docker. The dependency layers come from ``layers/build_layer.py`` (pip with
``--platform manylinux2014_aarch64 --only-binary=:all:``): ``deps`` for every function and ``mcp``
(the MCP SDK and what only it needs) for the API function alone, which serves ``POST /v1/mcp``. The
core layer is a copy of ``layers/core/memory_engine`` into the ``python/`` folder Lambda puts on
``sys.path``, staged at synth time so a deploy always ships the code in the working tree, without
what no function imports (the local runtime, the CLI, the evaluation harness: ``NOT_DEPLOYED``).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aws_cdk import Annotations
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from memory_engine_infra.config import REPO_ROOT, DeploymentConfig

CORE_PACKAGE = REPO_ROOT / "layers" / "core" / "memory_engine"
BUILT_DEPS_DIR = REPO_ROOT / "build" / "layers" / "deps"
BUILT_MCP_DIR = REPO_ROOT / "build" / "layers" / "mcp"
#: Subpackages of memory_engine no Lambda function imports (tests/infra/test_layers.py imports every
#: handler from the staged layer to prove it).
NOT_DEPLOYED = ("local", "cli", "evaluation")
BUILT_MARKER = "layer-requirements.txt"  # written last by build_layer.py: the build completed
PLACEHOLDER_DIR = Path(__file__).resolve().parent / "placeholder_layer"
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64


def deps_layer_dir(config: DeploymentConfig, built_dir: Path | None = None) -> tuple[Path, bool]:
    """A dependency layer's asset folder (``BUILT_DEPS_DIR`` unless ``built_dir``) and whether it is the
    real build (not the placeholder).

    Raises ``FileNotFoundError`` when ``layers_prebuilt=true`` was asked for but the build is missing.
    """
    built_dir = built_dir or BUILT_DEPS_DIR
    built = (built_dir / BUILT_MARKER).is_file()
    if config.layers_prebuilt is True and not built:
        raise FileNotFoundError(f"{built_dir} is missing or incomplete: run `make layer` first")
    if config.layers_prebuilt is False or not built:
        return PLACEHOLDER_DIR, False
    return built_dir, True


def stage_core_package() -> Path:
    """Copy the core package into ``<tmp>/python/memory_engine`` (the layer layout)."""
    staging = Path(tempfile.mkdtemp(prefix="memory-engine-core-layer-"))
    shutil.copytree(
        CORE_PACKAGE,
        staging / "python" / "memory_engine",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    for name in NOT_DEPLOYED:
        shutil.rmtree(staging / "python" / "memory_engine" / name)
    return staging


class SharedLayers(Construct):
    """``deps`` (third-party packages) and ``core`` (memory_engine), attached to every function, and
    ``mcp`` (the MCP SDK's own dependencies), attached to the function that serves ``POST /v1/mcp``."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        deps_dir, real = deps_layer_dir(config)
        mcp_dir, mcp_real = deps_layer_dir(config, BUILT_MCP_DIR)
        real = real and mcp_real
        if not real:
            Annotations.of(self).add_warning_v2(
                "memory-engine:placeholder-layer",
                "the dependency layer is a placeholder: run `make layer` before deploying",
            )
        self.deps = lambda_.LayerVersion(
            self, "Dependencies",
            code=lambda_.Code.from_asset(str(deps_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="memory-engine third-party dependencies (pip, manylinux2014_aarch64, cp312)",
        )
        self.mcp = lambda_.LayerVersion(
            self, "McpDependencies",
            code=lambda_.Code.from_asset(str(mcp_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="memory-engine MCP server dependencies (the API function's POST /v1/mcp)",
        )
        self.core = lambda_.LayerVersion(
            self, "Core",
            code=lambda_.Code.from_asset(str(stage_core_package())),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="memory-engine core package (layers/core/memory_engine)",
        )
        self.is_placeholder = not real

    def for_function(self, *, serves_mcp: bool) -> list[lambda_.ILayerVersion]:
        return [self.deps, self.mcp, self.core] if serves_mcp else [self.deps, self.core]
