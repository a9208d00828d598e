"""lakehook: start downstream runs when lakehouse tables reach the state the run needs."""

__version__ = "0.1.0"
