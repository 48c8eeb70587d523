"""Connection info on AWS: host/port/user from Secrets Manager, password or an RDS IAM token."""

from __future__ import annotations

import json
from typing import Any

from psycopg.conninfo import make_conninfo


class AwsConninfo:
    """Callable conninfo factory (psycopg_pool calls it for each new connection)."""

    def __init__(self, secrets_client: Any, rds_client: Any, secret_arn: str, *, iam_auth: bool) -> None:
        self._secrets = secrets_client
        self._rds = rds_client
        self._secret_arn = secret_arn
        self._iam_auth = iam_auth
        self._secret: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._secret is None:
            value = self._secrets.get_secret_value(SecretId=self._secret_arn)["SecretString"]
            self._secret = json.loads(value)
        return self._secret

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
