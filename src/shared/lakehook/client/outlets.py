"""What a run sets on its commits to an outlet table so that the commit confirms it (docs/targets.md).

One property, ``lakehook.trigger-key``, in the format's own commit metadata, for each Python writer
(``props = commit_properties(key)``):

- pyiceberg: ``table.append(df, snapshot_properties=props)`` (also ``overwrite``, ``delete``, and in a
  transaction): Iceberg snapshot summary properties;
- pypaimon: ``commit.commit(write.prepare_commit(), snapshot_properties=props)``: Paimon snapshot properties;
- deltalake: ``write_deltalake(..., commit_properties=CommitProperties(custom_metadata=props))``: a field of the
  commit's ``commitInfo`` (delta-rs custom metadata);
- Spark on Delta: ``.option("userMetadata", user_metadata(key))``.

Standard library only, like the rest of :mod:`lakehook.client`: the writer's own library builds its objects.
"""

from __future__ import annotations

from lakehook.wire.commit_properties import TRIGGER_KEY_PROPERTY, commit_properties, user_metadata

__all__ = ["TRIGGER_KEY_PROPERTY", "commit_properties", "user_metadata"]
