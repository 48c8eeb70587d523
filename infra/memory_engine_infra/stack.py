"""The memory-engine stack: one construct per concern, wired together."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from memory_engine import constants as c
from memory_engine_infra.api import Api
from memory_engine_infra.config import DeploymentConfig
from memory_engine_infra.database import Database
from memory_engine_infra.expiry import Expiry
from memory_engine_infra.extraction import Extraction
from memory_engine_infra.ingestion import Ingestion
from memory_engine_infra.lambdas import FunctionFactory, common_environment
from memory_engine_infra.layers import SharedLayers
from memory_engine_infra.network import Network
from memory_engine_infra.observability import Observability


class MemoryEngineStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig | None = None,
                 **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config or DeploymentConfig.from_context(self)
        self.network = Network(self, "Network", config=self.config)
        self.layers = SharedLayers(self, "Layers", config=self.config)
        factory = FunctionFactory(
            network=self.network, layers=self.layers, config=self.config, environment=common_environment(self.config)
        )
        self.database = Database(self, "Database", network=self.network, config=self.config, functions=factory)
        self.ingestion = Ingestion(self, "Ingestion", config=self.config, database=self.database, functions=factory)
        self.extraction = Extraction(self, "Extraction", config=self.config, database=self.database, functions=factory)
        self.api = Api(
            self, "Api", config=self.config, database=self.database, ingestion=self.ingestion, functions=factory
        )
        # the API publishes memory.forgotten on the engine's bus (POST /v1/forget, purge)
        self.api.api_function.add_environment(c.ENV_EVENT_BUS_NAME, self.extraction.bus.event_bus_name)
        self.extraction.bus.grant_put_events_to(self.api.api_function)
        # POST /v1/memories/{id}/turns with extract: true queues the turns on the extraction queue itself
        self.api.api_function.add_environment(c.ENV_EXTRACTION_QUEUE_URL, self.extraction.queue.queue_url)
        self.extraction.queue.grant_send_messages(self.api.api_function)
        # ingestion publishes document.ready / document.failed; converters get URLs on the HTTP API
        self.ingestion.grant_events(self.extraction.bus)
        self.ingestion.grant_public_url(self.api.http_api.api_endpoint)
        self.ingestion.allow_converter_hosts(self.config.converter_allowed_hosts, self.api.api_function)
        self.expiry = Expiry(self, "Expiry", database=self.database, functions=factory)
        self.functions = {
            **self.api.functions,
            **{f"Ingestion{name.title().replace('_', '')}": fn for name, fn in self.ingestion.functions.items()},
            "Extraction": self.extraction.consumer,
            "ExpirySweep": self.expiry.sweeper,
        }
        self.observability = Observability(
            self, "Observability",
            functions=self.functions,
            state_machines={"Ingestion": self.ingestion.state_machine,
                            "SmallDocumentIngestion": self.ingestion.express_state_machine},
            dead_letter_queues={
                "Extraction": self.extraction.dead_letter_queue,
                "IngestionRule": self.ingestion.rule_dead_letters,
                "ExpirySchedule": self.expiry.dead_letter_queue,
            },
            http_api=self.api.http_api,
        )
        CfnOutput(self, "ApiUrl", value=self.api.http_api.api_endpoint)
        CfnOutput(self, "DocumentsBucket", value=self.ingestion.bucket.bucket_name)
        CfnOutput(self, "EventBusName", value=self.extraction.bus.event_bus_name)
        CfnOutput(self, "StateMachineArn", value=self.ingestion.state_machine.state_machine_arn)
        CfnOutput(self, "ExpressStateMachineArn", value=self.ingestion.express_state_machine.state_machine_arn)
        CfnOutput(self, "AlarmTopicArn", value=self.observability.topic.topic_arn)

    @property
    def availability_zones(self) -> list[str]:
        # Fixed zones: synth never looks them up in the account (works offline, deterministic).
        return list(self.config.availability_zones)
