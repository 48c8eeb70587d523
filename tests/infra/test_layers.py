"""The shared layer without Docker: which folder the stack ships, and how the dependency layer is built."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import tests.infra.conftest  # noqa: F401  (puts infra/ on sys.path)
from memory_engine_infra import layers
from memory_engine_infra.config import DeploymentConfig

REPO = Path(__file__).resolve().parents[2]


def build_layer_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer", REPO / "layers" / "build_layer.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_layer", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def built_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(layers, "BUILT_DEPS_DIR", tmp_path / "deps")
    return tmp_path / "deps"


def test_without_a_build_the_placeholder_is_used(built_dir: Path) -> None:
    assert layers.deps_layer_dir(DeploymentConfig()) == (layers.PLACEHOLDER_DIR, False)
    assert (layers.PLACEHOLDER_DIR / "python").is_dir()


def test_a_completed_build_is_used_unless_the_placeholder_is_forced(built_dir: Path) -> None:
    (built_dir / "python").mkdir(parents=True)
    # an interrupted build (no marker) is not used
    assert layers.deps_layer_dir(DeploymentConfig())[1] is False
    (built_dir / layers.BUILT_MARKER).write_text("boto3\n")
    assert layers.deps_layer_dir(DeploymentConfig()) == (built_dir, True)
    assert layers.deps_layer_dir(DeploymentConfig(layers_prebuilt=False)) == (layers.PLACEHOLDER_DIR, False)


def test_asking_for_the_prebuilt_layer_without_a_build_fails_clearly(built_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make layer"):
        layers.deps_layer_dir(DeploymentConfig(layers_prebuilt=True))


def test_core_layer_is_the_package_under_python_without_caches() -> None:
    staged = layers.stage_core_package()
    package = staged / "python" / "memory_engine"
    assert (package / "constants.py").is_file()
    assert sorted(p.name for p in (package / "migrations").glob("*.sql")) == sorted(
        p.name for p in (layers.CORE_PACKAGE / "migrations").glob("*.sql"))
    assert not list(staged.rglob("__pycache__"))
    # the web console's static files ship in the layer, as the API function serves them from there
    assert {"index.html", "console.css", "console.js"} <= {p.name for p in (package / "console").iterdir()}


def test_the_console_files_are_package_data_of_the_wheel() -> None:
    import tomllib

    package_data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    console = layers.CORE_PACKAGE / "console"
    shipped = {f.name for pattern in package_data["memory_engine"] if pattern.startswith("console/")
               for f in console.glob(pattern.removeprefix("console/"))}
    assert shipped == {f.name for f in console.iterdir() if f.is_file()}


def test_build_layer_fetches_arm64_cp312_wheels_of_the_runtime_dependencies(tmp_path: Path) -> None:
    build_layer = build_layer_module()
    requirements = build_layer.runtime_requirements()
    assert any(r.startswith("psycopg[binary]") for r in requirements)
    assert any(r.startswith("mcp") for r in requirements)  # the API function serves POST /v1/mcp
    assert not any(r.startswith(("pytest", "aws-cdk-lib", "moto")) for r in requirements)
    command = build_layer.pip_command(requirements, tmp_path)
    joined = " ".join(command)
    for flag in ("--platform manylinux2014_aarch64", "--implementation cp", "--python-version 3.12",
                 "--only-binary=:all:", f"--target {tmp_path}"):
        assert flag in joined
    assert build_layer.MARKER == layers.BUILT_MARKER
