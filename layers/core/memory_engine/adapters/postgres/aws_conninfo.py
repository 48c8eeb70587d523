"""Connection info on AWS: host/port/user from Secrets Manager, password or an RDS IAM token."""

from __future__ import annotations

from typing import Any, Final

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from psycopg.conninfo import make_conninfo

#: How long a read of the database secret is reused (Powertools' parameter cache). A rotated
#: password reaches new connections within this time, without a cold start.
SECRET_MAX_AGE_SECONDS: Final = 300


class AwsConninfo:
    """Callable conninfo factory (psycopg_pool calls it for each new connection); the secret is read
    through Powertools' ``SecretsProvider`` and re-read once it is ``max_age`` seconds old."""

    def __init__(self, secrets_client: Any, rds_client: Any, secret_arn: str, *, iam_auth: bool,
                 max_age: int = SECRET_MAX_AGE_SECONDS) -> None:
        self._secrets = SecretsProvider(boto3_client=secrets_client)
        self._rds = rds_client
        self._secret_arn = secret_arn
        self._iam_auth = iam_auth
        self._max_age = max_age

    def _load(self) -> dict[str, Any]:
        secret = self._secrets.get(self._secret_arn, max_age=self._max_age, transform="json")
        if not isinstance(secret, dict):
            raise ValueError("the database secret is not a JSON object")
        return secret

    def __call__(self) -> str:
        secret = self._load()
        host = secret.get("proxy_host") or secret["host"]
        port = int(secret.get("port", 5432))
        user = secret["username"]
        password = (
            self._rds.generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user)
            if self._iam_auth
            else secret["password"]
        )
        return make_conninfo(
            host=host, port=port, dbname=secret.get("dbname", "memory_engine"), user=user,
            password=password, sslmode="require", connect_timeout=10,
        )
