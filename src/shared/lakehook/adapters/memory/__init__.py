"""In-memory stores of lakehook's own ports: a throw-away set the backtest (``usecases.backtest``) replays stored
history on, and the fakes the unit tests use (``tests/fakes`` re-exports them; ``tests/contracts`` holds them to the
DynamoDB adapters' behaviour)."""
