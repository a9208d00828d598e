"""The lakehook domain: pure models and rules. Imports the standard library and pydantic only."""
