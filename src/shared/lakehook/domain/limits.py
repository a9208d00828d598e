"""Input limits and numeric ranges, declared once: the models, the API and docs/api.md read them from here."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from lakehook.domain.time import MAX_ISO_MS

# JSON bodies (every route): deeper or longer input is a 400 naming the limit, before any model sees it.
MAX_JSON_DEPTH = 32  # nested arrays/objects; DynamoDB's own document limit is 32 levels too
MAX_NUMBER_DIGITS = 38  # digits in one number literal: DynamoDB's number precision
MAX_PAYLOAD_DEPTH = 16  # an event's free ``payload``: nesting within it (the object itself is level 1)
MAX_PAYLOAD_BYTES = 16 * 1024  # an event's free ``payload`` as compact JSON

# Snapshot ids, schema ids, counts and epoch milliseconds are Java longs in Iceberg and Paimon.
MAX_LONG = 2**63 - 1
MIN_LONG = -(2**63)

# Integer fields take JSON integers only: "6", 2.0, 1e3 and true are refused. A float cannot hold every
# 64-bit id (above 2**53 it rounds), so a float snapshot id means precision was already lost on the way.
Long = Annotated[StrictInt, Field(ge=MIN_LONG, le=MAX_LONG)]
NonNegativeLong = Annotated[StrictInt, Field(ge=0, le=MAX_LONG)]
# Epoch milliseconds within 1970-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z: every such instant can be
# shown in ISO 8601 and turned into a datetime, so explain, listings and windows never overflow.
EpochMillis = Annotated[StrictInt, Field(ge=0, le=MAX_ISO_MS)]

# OpenLineage (POST /api/v1/lineage): facets and output facets of one output dataset, and the identifiers
# of its ``symlinks`` facet. Each is read a bounded number of times, so these bound a request's work.
MAX_DATASET_FACETS = 64
MAX_SYMLINKS = 16

# Partitions a commit touched (docs/partitions.md): a poller keeps the first keys in order, at most this many and
# this many bytes together, and says how many there were; a push naming more is refused. 1000 keys of 64 bytes are
# 64 KB, so the event item and the state's ``latestPartitions`` stay far under DynamoDB's 400 KB item limit.
MAX_TOUCHED_PARTITIONS = 1000
MAX_TOUCHED_PARTITION_BYTES = 64 * 1024
MAX_PARTITION_KEY_LENGTH = 512  # characters of one canonical key (``partitionKey`` has had this limit)
# A key a poller finds that cannot be recorded (longer than that, or not valid text) is counted, and the first of
# them are named by their first characters: the event's ``unrecordedKeys``, the poll status.
MAX_UNRECORDED_NAMED = 10
UNRECORDED_KEY_SHOWN = 64  # characters of each such key shown
UNRECORDED_KEY_TEXT = 256  # characters of its whole entry: the key's start, its length and why
