"""InMemoryPartitionStore lives in the package (``lakehook.adapters.memory.partitions``), where the backtest replays
history on it; the tests import it from here as before."""

from lakehook.adapters.memory.partitions import InMemoryPartitionStore as InMemoryPartitionStore
