"""Powertools settings for every function, alarms on what breaks silently, one dashboard."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

METRICS_NAMESPACE = "MemoryEngine"
SERVICE_PREFIX = "memory-engine"


def powertools_environment(service: str) -> dict[str, str]:
    """Powertools logger/metrics/tracer settings of one function."""
    return {
        "POWERTOOLS_SERVICE_NAME": f"{SERVICE_PREFIX}-{service}",
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    }


class Observability(Construct):
    """Alarms (to an SNS topic operators subscribe to) and a CloudWatch dashboard."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: dict[str, lambda_.Function],
        state_machines: dict[str, sfn.StateMachine],
        dead_letter_queues: dict[str, sqs.Queue],
        http_api: apigwv2.HttpApi,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="memory-engine alarms", enforce_ssl=True,
            master_key=kms.Alias.from_alias_name(self, "SnsKey", "alias/aws/sns"),
        )
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(name: str, metric: cw.IMetric, description: str, threshold: float = 1) -> cw.Alarm:
            created = cw.Alarm(
                self, name, metric=metric, threshold=threshold, evaluation_periods=1,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING, alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)
            return created

        five_minutes = Duration.minutes(5)
        for name, function in functions.items():
            alarm(f"{name}Errors", function.metric_errors(period=five_minutes, statistic="Sum"),
                  f"memory-engine {name}: function errors in 5 minutes")
            alarm(f"{name}Throttles", function.metric_throttles(period=five_minutes, statistic="Sum"),
                  f"memory-engine {name}: throttled invocations (reserved concurrency reached)", threshold=5)
        for name, machine in state_machines.items():
            alarm(f"{name}Failed", machine.metric_failed(period=five_minutes, statistic="Sum"),
                  f"{name} executions failed (documents are marked failed; check the execution or its logs)")
            alarm(f"{name}TimedOut", machine.metric_timed_out(period=five_minutes, statistic="Sum"),
                  f"{name} executions timed out")
        for name, queue in dead_letter_queues.items():
            alarm(f"{name}DeadLetters",
                  queue.metric_approximate_number_of_messages_visible(period=five_minutes, statistic="Maximum"),
                  f"messages in the {name} dead-letter queue")
        api_5xx = cw.Metric(
            namespace="AWS/ApiGateway", metric_name="5xx", dimensions_map={"ApiId": http_api.api_id},
            period=five_minutes, statistic="Sum",
        )
        alarm("Api5xx", api_5xx, "HTTP API answered 5xx", threshold=5)

        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        self.dashboard.add_widgets(
            cw.GraphWidget(title="API requests / 5xx", width=12, left=[
                cw.Metric(namespace="AWS/ApiGateway", metric_name="Count", dimensions_map={"ApiId": http_api.api_id},
                          statistic="Sum", period=five_minutes),
                api_5xx,
            ]),
            cw.GraphWidget(title="API latency p95", width=12, left=[
                cw.Metric(namespace="AWS/ApiGateway", metric_name="Latency", dimensions_map={"ApiId": http_api.api_id},
                          statistic="p95", period=five_minutes),
            ]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Function errors", width=12,
                           left=[f.metric_errors(period=five_minutes, label=n) for n, f in functions.items()]),
            cw.GraphWidget(title="Function duration p95", width=12,
                           left=[f.metric_duration(period=five_minutes, statistic="p95", label=n)
                                 for n, f in functions.items()]),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(title="Ingestion executions", width=12, left=[
                metric for name, machine in state_machines.items() for metric in (
                    machine.metric_succeeded(period=five_minutes, label=f"{name} succeeded"),
                    machine.metric_failed(period=five_minutes, label=f"{name} failed"))
            ]),
            cw.GraphWidget(title="Dead-letter queues", width=12, left=[
                q.metric_approximate_number_of_messages_visible(period=five_minutes, label=n)
                for n, q in dead_letter_queues.items()
            ]),
        )
        self.dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", width=24, alarms=_as_list(self.alarms)))


def _as_list(alarms: Sequence[cw.Alarm]) -> list[cw.IAlarm]:
    return list(alarms)
