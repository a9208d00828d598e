"""Fakes for the tests: in-memory ports (``memory*.py``, ``InMemory<Port>``) and small local HTTP servers that
follow the documented answers of the systems lakehook starts runs on. Nothing under ``src/`` imports them."""
