"""lakehook's version: one for its three distributions (``distributions/``, docs/packaging.md), a semantic version.

The one place it is written: the distributions build with it (setuptools' ``attr:`` in each pyproject.toml), the
CLI prints it (``lakehook --version``), every API answer carries it (``X-Lakehook-Version``) and the changelog's
newest release names it (tests/unit/test_version.py; docs/upgrade.md#releasing).

``lakehook`` itself is a namespace package (no ``__init__.py``): the deployable, the tools and the client
distributions each install their own subpackages under it, so none of them owns a file another one has.
"""

__version__ = "0.1.0"
