"""The demo that ``make demo`` runs on the local stack."""
