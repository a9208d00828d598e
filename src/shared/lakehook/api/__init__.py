"""The HTTP API: a Powertools REST resolver with one Router per resource."""
