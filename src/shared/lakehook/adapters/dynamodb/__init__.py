"""DynamoDB single-table adapters."""
