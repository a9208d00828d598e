"""Adapters: the ports implemented on AWS services and in memory."""
