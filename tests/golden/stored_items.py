"""Print every item the golden scenario writes through this code's DynamoDB stores (moto), one sorted JSON line each:
``PYTHONPATH=src/shared:. python -m tests.golden.stored_items > items.txt``, on two commits, then ``diff`` them to see
whether a change moved a stored byte (pending partitions' ``mark`` is random and differs on every run)."""

from __future__ import annotations

import json
import os

import boto3
from moto import mock_aws


def main() -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    with mock_aws():
        from tests.contracts.conftest import dynamodb_backend
        from tests.golden.scenario import to_json, write

        write(dynamodb_backend("stored-items"))
        items = boto3.resource("dynamodb", region_name="us-east-1").Table("stored-items").scan()["Items"]
        print("\n".join(sorted(json.dumps(to_json(i), sort_keys=True) for i in items)))


if __name__ == "__main__":
    main()
