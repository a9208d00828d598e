"""The answers lakehook gives, as pydantic models built from domain objects (each model's ``from_domain``).

Outside the domain, which knows no answer shape: the API's routes answer them (and its OpenAPI document is
generated from the same classes), and the use cases whose answer is stored (a replay's idempotent answer) or
composed of others (a backtest's runs) build them too. The API's own answer modules (``lakehook.api.*answers``)
hold the rest.
"""
