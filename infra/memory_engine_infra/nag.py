"""cdk-nag (v3, a CDK policy-validation plugin) acknowledgements: the helpers each construct uses to
acknowledge its own findings where it creates the resource concerned.

Each acknowledgement names the exact finding (rule id plus, for granular rules, the finding in
brackets), is attached to the narrowest construct it concerns (it covers that construct's subtree),
and says why the finding is acceptable here. A test checks every reason is specific.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

PYTHON_RUNTIME_REASON = (
    "Python 3.12 is the project's pinned Lambda runtime: the dependency layer is built for cp312 "
    "(manylinux2014_aarch64 wheels) and CI tests that version; moving runtimes is a deliberate upgrade."
)
VPC_FUNCTION_REASON = (
    "Only actions that AWS authorizes on '*' use it: the ec2 network-interface actions a VPC function "
    "needs and xray:PutTraceSegments/PutTelemetryRecords for active tracing."
)
BASIC_EXECUTION_POLICY = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"


def ack(construct: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge ``AwsSolutions::<finding>`` on ``construct`` and everything under it."""
    Validations.of(construct).acknowledge(Acknowledgment(id=f"AwsSolutions::{finding}", reason=reason))


def arn_of(construct: IConstruct) -> str:
    """``<LogicalId.Arn>``, how a granular finding names a resource of this stack in a policy."""
    child = construct.node.default_child
    assert isinstance(child, CfnResource), construct.node.path
    return f"<{Stack.of(construct).get_logical_id(child)}.Arn>"
