"""Generated gRPC stubs of serenity.v1 (graph_pb2, scheduler_pb2, scheduler_pb2_grpc).

Written at build time from the repository's proto/ by setup.py."""
