"""Key -> partition exactly as Kafka's default partitioner does it, so both adapters place keys alike."""

from __future__ import annotations

from kafka.partitioner.default import murmur2


def partition_for_key(key: bytes, partitions: int) -> int:
    """``toPositive(murmur2(key)) % partitions``, the Java client's and kafka-python's choice for keyed records."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
