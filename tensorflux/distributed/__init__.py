"""The distributed runtime: cluster description, master and worker gRPC services, remote
rendezvous, server.

Import the modules you need, e.g. `from tensorflux.distributed import cluster`; nothing is
imported with the package itself.
"""
