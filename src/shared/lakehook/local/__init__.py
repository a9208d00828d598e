"""The local runtime: template.yaml's functions, table, bucket, routes, streams and schedules on moto."""
