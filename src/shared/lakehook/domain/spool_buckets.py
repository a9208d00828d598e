"""Where pushed spool manifests may live: the buckets the spool verifier's role may read.

A pushed ``MANIFEST_SEALED`` counts once the spool verifier has read the manifest and the objects it lists. On
AWS its role reads the stack's manifest bucket under ``spool/``, the warehouse bucket and the buckets of the
stack's ``SpoolBucketArns`` parameter, nothing else (template.yaml, ``SpoolVerifierFunction``). A manifest
anywhere else could never be verified, so the push naming it is refused (400), naming the bucket and the
parameter that would let the verifier read it, instead of being accepted and left to fail out of sight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lakehook.wire.spool_format import parse_s3_uri

SPOOL_BUCKETS_PARAMETER = "SpoolBucketArns"
STACK_SPOOL_PREFIX = "spool/"  # the stack's manifest bucket: the verifier's role reads spool/* only
# An S3 bucket ARN (no key): arn:<partition>:s3:::<bucket>. The template's parameter holds the same pattern.
BUCKET_ARN = re.compile(r"arn:[a-z-]+:s3:::([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])")


def bucket_names(arns: str) -> frozenset[str]:
    """The bucket names of comma-separated bucket ARNs (blank entries ignored); ValueError naming a bad one."""
    names = set()
    for arn in (a.strip() for a in arns.split(",")):
        if not arn:
            continue
        found = BUCKET_ARN.fullmatch(arn)
        if found is None:
            raise ValueError(f"{SPOOL_BUCKETS_PARAMETER}: {arn!r} is not an S3 bucket ARN (arn:aws:s3:::<bucket>)")
        names.add(found.group(1))
    return frozenset(names)


@dataclass(frozen=True)
class ReadableSpool:
    """The buckets the spool verifier may read manifests from."""

    stack_bucket: str  # read under STACK_SPOOL_PREFIX only
    buckets: frozenset[str]  # read anywhere: the warehouse bucket and those of SpoolBucketArns

    @classmethod
    def of(cls, stack_bucket: str, warehouse_bucket: str | None, arns: str) -> ReadableSpool:
        return cls(stack_bucket, bucket_names(arns) | ({warehouse_bucket} if warehouse_bucket else set()))

    def refusal(self, manifest_uri: str) -> str | None:
        """Why the verifier could not read this manifest, naming the bucket and the parameter; None if it can."""
        try:
            bucket, key = parse_s3_uri(manifest_uri)
        except ValueError as exc:
            return str(exc)
        if bucket in self.buckets:
            return None
        if bucket == self.stack_bucket:
            if key.startswith(STACK_SPOOL_PREFIX):
                return None
            return (
                f"{manifest_uri} is in the stack's manifest bucket outside {STACK_SPOOL_PREFIX}, where the spool "
                f"verifier may not read; write it under s3://{bucket}/{STACK_SPOOL_PREFIX}"
            )
        readable = ", ".join([f"{self.stack_bucket}/{STACK_SPOOL_PREFIX}", *sorted(self.buckets)])
        return (
            f"bucket {bucket!r} of {manifest_uri} is not one the spool verifier may read ({readable}); add its ARN "
            f"(arn:aws:s3:::{bucket}) to the stack's {SPOOL_BUCKETS_PARAMETER} parameter, or spool there"
        )
