"""The ``lakehook`` commands that talk to the HTTP API (apply, explain, triggers, replay, state, coverage, push)."""
