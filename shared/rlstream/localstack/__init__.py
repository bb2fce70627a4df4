"""The local single-node stack ``rlstream up`` runs: Kafka (KRaft), PostgreSQL, Redis and the
four services as supervised child processes, all on loopback, data under one folder."""

from rlstream.localstack.stackfile import (
    ServiceEndpoint,
    StackFile,
    default_data_dir,
    read_stack,
    remove_stack,
    stack_path,
    write_stack,
)

__all__ = [
    "ServiceEndpoint",
    "StackFile",
    "default_data_dir",
    "read_stack",
    "remove_stack",
    "stack_path",
    "write_stack",
]
