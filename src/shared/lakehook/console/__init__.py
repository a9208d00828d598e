"""``lakehook console``: a web console on 127.0.0.1 for a local or deployed stack (see docs/console.md).

Not part of any Lambda layer: the shared layer's build leaves this package out (src/shared/Makefile).
"""
