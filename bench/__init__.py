"""lakehook's benchmarks (`make bench` -> bench/results.md).

Every bench talks to moto on loopback, never to AWS: the SDK gets fake credentials and a region before any
bench module imports boto3 or lakehook (the package is imported first, whichever bench runs). A value already
in the environment wins.
"""

import os

for _name, _value in (
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_DEFAULT_REGION", "us-east-1"),
    ("POWERTOOLS_METRICS_NAMESPACE", "Lakehook"),
    ("POWERTOOLS_TRACE_DISABLED", "true"),
):
    os.environ.setdefault(_name, _value)
