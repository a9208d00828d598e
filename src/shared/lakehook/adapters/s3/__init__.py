"""S3 adapters: run manifests (and, later, spool manifests)."""
