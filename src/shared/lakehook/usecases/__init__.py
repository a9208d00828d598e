"""Use cases: one class or function per thing a caller asks lakehook to do."""
