"""The one shared layer set every function uses: the ``memory_engine`` package and its dependencies.

Both are built without Docker. The dependency layer comes from ``layers/build_layer.py`` (pip with
``--platform manylinux2014_aarch64 --only-binary=:all:``); the core layer is a plain copy of
``layers/core/memory_engine`` into the ``python/`` folder Lambda puts on ``sys.path``, staged at synth
time so a deploy always ships the code in the working tree.
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
BUILT_MARKER = "layer-requirements.txt"  # written last by build_layer.py: the build completed
PLACEHOLDER_DIR = Path(__file__).resolve().parent / "placeholder_layer"
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64


def deps_layer_dir(config: DeploymentConfig) -> tuple[Path, bool]:
    """The dependency layer's asset folder and whether it is the real build (not the placeholder).

    Raises ``FileNotFoundError`` when ``layers_prebuilt=true`` was asked for but the build is missing.
    """
    built = (BUILT_DEPS_DIR / BUILT_MARKER).is_file()
    if config.layers_prebuilt is True and not built:
        raise FileNotFoundError(f"{BUILT_DEPS_DIR} is missing or incomplete: run `make layer` first")
    if config.layers_prebuilt is False or not built:
        return PLACEHOLDER_DIR, False
    return BUILT_DEPS_DIR, True


def stage_core_package() -> Path:
    """Copy the core package into ``<tmp>/python/memory_engine`` (the layer layout)."""
    staging = Path(tempfile.mkdtemp(prefix="memory-engine-core-layer-"))
    shutil.copytree(
        CORE_PACKAGE,
        staging / "python" / "memory_engine",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    return staging


class SharedLayers(Construct):
    """``deps`` (third-party packages) and ``core`` (memory_engine), attached to every function."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        deps_dir, real = deps_layer_dir(config)
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
        self.core = lambda_.LayerVersion(
            self, "Core",
            code=lambda_.Code.from_asset(str(stage_core_package())),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="memory-engine core package (layers/core/memory_engine)",
        )
        self.is_placeholder = not real

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.deps, self.core]
