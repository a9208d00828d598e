"""What lakehook's server and its client side must read and write alike, in the standard library only.

The spool manifest's format and checksum, and the row counts of an Iceberg snapshot summary. These modules ship in
the client distribution (``distributions/client``, with ``lakehook.client`` and ``lakehook.receiver``) and in the
Lambda layer; the server's domain imports them from here, so there is one definition of each.
"""
