"""The patterns of the names lakehook's resources are addressed by, without their models.

The API's path parameters state them (``api.paths``) without importing the rule, producer and alias models,
which a route that takes no such name never needs; the models check the same patterns.
"""

from __future__ import annotations

RULE_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"  # rules and their groups
PRODUCER_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
ALIAS_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
