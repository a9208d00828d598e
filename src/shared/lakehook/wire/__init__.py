"""What lakehook's server and its client side must read and write alike, in the standard library only.

The spool manifest's format and checksum, the row counts of an Iceberg snapshot summary, and how a partition key
is escaped and read (the receiver reads an invocation's ``partition`` with it). These modules ship in
the client distribution (``distributions/client``, with ``lakehook.client`` and ``lakehook.receiver``) and in the
Lambda layer; the server's domain imports them from here, so there is one definition of each.
"""
