"""Resources for the local Kafka broker: ``pom.xml`` (Maven Central runtime classpath),
``log4j2.properties`` and ``server-template.properties``. Code lives in ``infra.stack.kafka_broker``."""

from pathlib import Path

RESOURCES = Path(__file__).resolve().parent
