"""The ``lakehook`` commands that talk to the HTTP API (apply, explain, triggers, trigger, retry, replay, state,
coverage, push)."""
