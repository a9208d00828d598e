"""lakehook's version: one for its three distributions (``distributions/``, docs/packaging.md).

``lakehook`` itself is a namespace package (no ``__init__.py``): the deployable, the tools and the client
distributions each install their own subpackages under it, so none of them owns a file another one has.
"""

__version__ = "0.1.0"
