"""What a run sets on its commits to an outlet table so that the commit confirms it (docs/targets.md).

One property, ``lakehook.trigger-key``, in the format's own commit metadata, for each Python writer:

- pyiceberg: ``table.append(df, snapshot_properties=commit_properties(key))`` (also ``overwrite``, ``delete``,
  and a transaction's ``append``): Iceberg snapshot summary properties;
- pypaimon: ``commit.commit(write.prepare_commit(), snapshot_properties=commit_properties(key))``: Paimon snapshot
  properties;
- deltalake: ``write_deltalake(..., commit_properties=delta_commit_properties(key))``: a field of the commit's
  ``commitInfo`` (delta-rs custom metadata).
"""

from __future__ import annotations

from typing import Any

from lakehook.wire.commit_properties import TRIGGER_KEY_PROPERTY, commit_properties, user_metadata

__all__ = ["TRIGGER_KEY_PROPERTY", "commit_properties", "delta_commit_properties", "user_metadata"]


def delta_commit_properties(trigger_key: str, **options: Any) -> Any:
    """deltalake's ``CommitProperties`` carrying the trigger key as custom metadata (``options``: its other
    arguments, such as ``max_commit_retries``). Imports deltalake, which the writer has anyway."""
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata=commit_properties(trigger_key), **options)
