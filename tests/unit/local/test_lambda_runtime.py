"""The local runtime's handler lookup: the handlers it may load are named, and they are the functions/ folder's."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_engine.local import lambda_runtime

REPO = Path(__file__).resolve().parents[3]


def test_the_named_handlers_are_the_functions_folders() -> None:
    on_disk = {f"{p.parent.name}/handler" for p in (REPO / "functions").glob("*/handler.py")}
    assert lambda_runtime.HANDLER_MODULES == on_disk


def test_the_functions_folder_is_found_from_the_checkout_not_a_fixed_depth() -> None:
    assert lambda_runtime.functions_dir() == REPO / "functions"


def test_a_module_that_is_not_a_handler_is_refused_before_any_file_is_read() -> None:
    with pytest.raises(ValueError, match="not a Lambda handler"):
        lambda_runtime.load_module("../layers/build_layer")
