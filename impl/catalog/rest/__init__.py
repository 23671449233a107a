"""The REST catalog client (``client``) and the protocol it shares with the server in
``impl.rest`` (``protocol``: request and response bodies, resource paths)."""
