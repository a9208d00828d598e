"""Lakehouse adapters: SnapshotSource for Iceberg (pyiceberg) and Paimon (pypaimon).

Import ``factory`` (light) from composition roots; ``iceberg`` and ``paimon`` pull in the heavy
libraries and are imported by the factory on first use only.
"""
