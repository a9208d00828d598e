"""What writer jobs import: light helpers (the standard library and boto3 only)."""
