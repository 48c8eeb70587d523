"""VPC: isolated subnets for the database, subnets for the functions, VPC endpoints for AWS APIs.

With ``nat_gateways=0`` (the default) nothing in the VPC reaches the internet: the functions call
AWS through a gateway endpoint (S3) and interface endpoints (Secrets Manager, Bedrock runtime,
EventBridge, Step Functions, Textract). Set ``-c nat_gateways=1`` when functions must reach a non-AWS
endpoint (e.g. an OpenAI-compatible model server, or an ``http`` converter of an ingestion rule on
the internet); their subnets then get a route to a NAT gateway.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, RemovalPolicy, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from memory_engine_infra.config import DeploymentConfig

VPC_CIDR = "10.40.0.0/16"
#: Interface endpoints the functions need (S3 gets a free gateway endpoint instead).
#: SQS: the Lambda service polls the extraction queue itself, but the consumer sends rejected events
#: to the DLQ from inside the VPC.
INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    "BedrockRuntime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "EventBridge": ec2.InterfaceVpcEndpointAwsService.EVENTBRIDGE,
    "StepFunctions": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
    "Textract": ec2.InterfaceVpcEndpointAwsService.TEXTRACT,  # the `ocr` converter of ingestion rules
    "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
}


class Network(Construct):
    """The VPC, the function subnets and one security group shared by the functions."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        function_subnet_type = (
            ec2.SubnetType.PRIVATE_WITH_EGRESS if config.nat_gateways > 0 else ec2.SubnetType.PRIVATE_ISOLATED
        )
        subnets = [
            ec2.SubnetConfiguration(name="database", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24),
            ec2.SubnetConfiguration(name="functions", subnet_type=function_subnet_type, cidr_mask=22),
        ]
        if config.nat_gateways > 0:
            subnets.append(ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24))
        self.vpc = ec2.Vpc(
            self, "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=len(config.availability_zones),
            nat_gateways=config.nat_gateways,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
        )
        Validations.of(self.vpc).acknowledge(Acknowledgment(
            id="CloudFormation-Validate::W3010",
            reason="Zones are fixed on purpose (DeploymentConfig.availability_zones, -c availability_zones=...) so "
                   "synth never queries the account and the template is deterministic.",
        ))
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))

        self.database_subnets = ec2.SubnetSelection(subnet_group_name="database")
        self.function_subnets = ec2.SubnetSelection(subnet_group_name="functions")

        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        self.endpoint_security_group = ec2.SecurityGroup(
            self, "EndpointSecurityGroup", vpc=self.vpc, allow_all_outbound=False,
            description="Interface VPC endpoints: HTTPS from inside the VPC",
        )
        self.endpoint_security_group.add_ingress_rule(
            ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS from the VPC"
        )
        for name, service in INTERFACE_ENDPOINTS.items():
            self.vpc.add_interface_endpoint(
                name, service=service, subnets=self.function_subnets,
                security_groups=[self.endpoint_security_group], private_dns_enabled=True,
                open=False,  # the endpoint security group above already admits the VPC
            )

        self.function_security_group = ec2.SecurityGroup(
            self, "FunctionSecurityGroup", vpc=self.vpc, allow_all_outbound=True,
            description="memory-engine Lambda functions",
        )
