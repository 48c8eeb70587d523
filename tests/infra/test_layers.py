"""The shared layer without Docker: which folder the stack ships, and how the dependency layer is built."""

from __future__ import annotations

import importlib.util
import os
import subprocess
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
    assert {p.name for p in (layers.CORE_PACKAGE / "console").iterdir()} <= {p.name for p in (package / "console").iterdir()}


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


def test_the_core_layer_leaves_out_what_no_function_imports_and_stays_small() -> None:
    package = layers.stage_core_package() / "python" / "memory_engine"
    assert not [name for name in layers.NOT_DEPLOYED if (package / name).exists()]
    assert (package / "http").is_dir() and (package / "mcp_server").is_dir()
    size = sum(p.stat().st_size for p in package.rglob("*") if p.is_file())
    assert size < 2_500_000, f"the core layer grew to {size / 1e6:.1f} MB unzipped"


@pytest.mark.parametrize("area", sorted(p.parent.name for p in (REPO / "functions").glob("*/handler.py")))
def test_every_handler_imports_from_the_deployed_core_layer(area: str, tmp_path: Path) -> None:
    # Given the core layer as deployed (no local runtime, CLI or evaluation) and the installed
    # dependencies, without the editable install that would find the whole package (-S: no .pth files)
    staged = layers.stage_core_package() / "python"
    site_packages = [p for p in sys.path if p.endswith("site-packages")]
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('handler', {str(REPO / 'functions' / area / 'handler.py')!r})\n"
            "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
            "import memory_engine\n"
            "leaked = sorted(m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in"
            f" {layers.NOT_DEPLOYED!r} and m.startswith('memory_engine.'))\n"
            "assert not leaked, leaked\n"
            "print(memory_engine.__file__)\n")
    env = {"PYTHONPATH": os.pathsep.join([str(staged), *site_packages]), "MEMORY_ENGINE_RUNTIME": "aws",
           "AWS_DEFAULT_REGION": "us-east-1", "PATH": os.environ.get("PATH", "")}
    # When the function's module is imported (what a cold start does before the first event)
    result = subprocess.run([sys.executable, "-S", "-c", code], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    # Then it imports, from the staged layer, and nothing it loads is missing from the layer
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().startswith(str(staged)), result.stdout


def _fake_distribution(site: Path, name: str, requires: list[str], files: list[str]) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    for file in files:
        (site / file).parent.mkdir(parents=True, exist_ok=True)
        (site / file).write_text("x = 1\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]))


def test_the_mcp_layer_takes_what_only_the_mcp_sdk_needs(tmp_path: Path) -> None:
    build_layer = build_layer_module()
    site, mcp_site = tmp_path / "deps", tmp_path / "mcp"
    # Given one resolution: the base needs httpx (-> anyio) and pydantic; mcp needs those and starlette
    # (-> anyio) and pyjwt[crypto] (-> cryptography); a Windows-only and a test-extra dependency
    _fake_distribution(site, "httpx", ["anyio"], ["httpx/__init__.py"])
    _fake_distribution(site, "anyio", [], ["anyio/__init__.py"])
    _fake_distribution(site, "pydantic", ["pywin32; sys_platform == 'win32'"], ["pydantic/__init__.py"])
    _fake_distribution(site, "mcp", ["httpx", "pydantic", "starlette", "pyjwt[crypto]"], ["mcp/__init__.py"])
    _fake_distribution(site, "starlette", ["anyio", "pytest; extra == 'test'"], ["starlette/__init__.py"])
    _fake_distribution(site, "pyjwt", ["cryptography; extra == 'crypto'"], ["jwt/__init__.py"])
    _fake_distribution(site, "cryptography", [], ["cryptography/__init__.py", "cryptography/hazmat/x.py"])
    # When the MCP layer is split off
    moved = build_layer.split_mcp(site, mcp_site, ["httpx>=0.27", "pydantic>=2", "mcp>=1.25"])
    # Then it holds exactly what nothing else needs, files and metadata, and the base keeps the rest
    assert moved == ["cryptography", "mcp", "pyjwt", "starlette"]
    assert (mcp_site / "cryptography" / "hazmat" / "x.py").is_file() and (mcp_site / "mcp-1.0.dist-info").is_dir()
    assert sorted(p.name for p in site.iterdir()) == [
        "anyio", "anyio-1.0.dist-info", "httpx", "httpx-1.0.dist-info", "pydantic", "pydantic-1.0.dist-info"]
