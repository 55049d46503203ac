"""The local stack: real Apache Kafka (KRaft, Maven Central jars), SeaweedFS S3 and an MLflow server on
loopback, managed as plain processes with pid files under ``.stack/`` (no Docker).

CLI: ``flywheel stack provision|up|status|down|logs|env``. Python: :class:`infra.stack.manager.Stack`.
"""

from infra.stack.base import ServiceUnreachable, StackError
from infra.stack.manager import SERVICE_ORDER, ServiceStatus, Stack

__all__ = ["SERVICE_ORDER", "ServiceStatus", "ServiceUnreachable", "Stack", "StackError"]
