"""The in-memory stores of the resolver's ports: they live in the package (``lakehook.adapters.memory.rules``), where
the backtest replays history on them; the tests import them from here as before."""

from lakehook.adapters.memory.rules import InMemoryDeferralStore as InMemoryDeferralStore
from lakehook.adapters.memory.rules import InMemoryRuleStore as InMemoryRuleStore
from lakehook.adapters.memory.rules import InMemoryStateHistory as InMemoryStateHistory
from lakehook.adapters.memory.rules import InMemoryStateReader as InMemoryStateReader
from lakehook.adapters.memory.rules import InMemoryTriggerStore as InMemoryTriggerStore
