"""Reading the synthesized template: the project's functions, their roles' statements, the state machines."""

from __future__ import annotations

import re
from typing import Any

from tests.infra.conftest import Synthesized

OUR_FUNCTION_DESCRIPTION = re.compile(r"^memory-engine")


def functions_by_handler(s: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{"<code area>/<handler>": (logical id, properties)}`` for the project's own functions."""
    found = {}
    for logical_id, resource in s.resources("AWS::Lambda::Function").items():
        props = resource["Properties"]
        if not OUR_FUNCTION_DESCRIPTION.match(props.get("Description", "")):
            continue
        service = props["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
        found[f"{service}:{props['Handler']}"] = (logical_id, props)
    return found


def function(s: Synthesized, service: str, handler: str = "handler.lambda_handler") -> tuple[str, dict[str, Any]]:
    return functions_by_handler(s)[f"memory-engine-{service}:{handler}"]


def role_statements(s: Synthesized, function_logical_id: str) -> list[dict[str, Any]]:
    """Every IAM statement attached to the function's execution role."""
    role_ref = s.properties(function_logical_id)["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for policy in s.resources("AWS::IAM::Policy").values():
        if {"Ref": role_ref} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    role = s.properties(role_ref)
    assert not role.get("ManagedPolicyArns"), "function roles carry no AWS managed policies"
    return statements


def actions_of(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def resources_of(statement: dict[str, Any]) -> list[Any]:
    resources = statement["Resource"]
    return resources if isinstance(resources, list) else [resources]


def granted(s: Synthesized, function_logical_id: str, action: str) -> list[Any]:
    return [r for st in role_statements(s, function_logical_id) if action in actions_of(st) for r in resources_of(st)]



def machines(s: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{"STANDARD" | "EXPRESS": (logical id, properties)}``."""
    found = {v["Properties"].get("StateMachineType", "STANDARD"): (k, v["Properties"])
             for k, v in s.resources("AWS::StepFunctions::StateMachine").items()}
    assert len(found) == 2, found.keys()
    return found

