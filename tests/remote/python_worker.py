"""A cronoq worker in Python, on stubs generated from cronoq-worker-proto's
output with Debian's python3-grpcio: the protocol as another language sees
it. Usage: python_worker.py <target> <token> <pool>

Payloads: echo:X completes with X, fail:M fails (retryable), permanent:M
fails for good, reject:R and reject_on:R give the lease back (nack; it prints
"N <task_id>"). It heartbeats each lease once before answering, prints
"R <worker_id> <slots>" once registered and ends when the server ends the
stream ("E <code name>").

Redirects, as the .proto's comments and docs/remote.md say: a refusal with
FAILED_PRECONDITION whose trailing metadata holds cronoq-shard comes from a
server that does not lead the pool's shard. The worker connects to
cronoq-shard-endpoint at once (printing "D <endpoint>"; this plaintext
worker follows only plaintext endpoints), or, without one (nobody leads),
retries its own target after a pause."""
import queue
import sys
import time

import grpc

from cronoq.v1 import workers_pb2 as pb
from cronoq.v1 import workers_pb2_grpc as rpc


def answer(lease):
    verb, _, arg = lease.payload.decode().partition(":")
    if verb == "echo":
        return pb.WorkerMessage(complete=pb.Complete(lease=lease.lease, output=arg.encode()))
    if verb in ("fail", "permanent"):
        return pb.WorkerMessage(fail=pb.Fail(lease=lease.lease, message=arg, permanent=verb == "permanent"))
    if verb in ("reject", "reject_on"):
        print("N", lease.task_id, flush=True)
        return pb.WorkerMessage(nack=pb.Nack(lease=lease.lease, reason=arg))
    return pb.WorkerMessage(fail=pb.Fail(lease=lease.lease, message="unknown payload", permanent=True))


def redirect_of(error):
    """The endpoint a redirect names, "" when nobody leads; None when the
    refusal is no redirect."""
    if error.code() != grpc.StatusCode.FAILED_PRECONDITION:
        return None
    trailers = dict(error.trailing_metadata() or ())
    if "cronoq-shard" not in trailers:
        return None
    return trailers.get("cronoq-shard-endpoint", "")


def serve(target, token, pool):
    """One stream; the endpoint of a redirect, or None once it ended."""
    outgoing = queue.Queue()
    outgoing.put(pb.WorkerMessage(register=pb.Register(
        pool=pool, slots=4, worker_name="python", protocol_version=3, labels={"lang": "python"})))
    stub = rpc.WorkersStub(grpc.insecure_channel(target))
    replies = stub.Work(iter(outgoing.get, None), metadata=[("authorization", "Bearer " + token)])
    try:
        for message in replies:
            kind = message.WhichOneof("message")
            if kind == "registered":
                print("R", message.registered.worker_id, message.registered.slots, flush=True)
            elif kind == "lease":
                outgoing.put(pb.WorkerMessage(heartbeat=pb.Heartbeat(lease=message.lease.lease)))
                outgoing.put(answer(message.lease))
        print("E OK", flush=True)
    except grpc.RpcError as error:
        endpoint = redirect_of(error)
        if endpoint is not None:
            return endpoint
        print("E", error.code().name, error.details(), flush=True)
    finally:
        outgoing.put(None)
    return None


def main():
    home, token, pool = sys.argv[1:4]
    target = home
    for _ in range(100):
        endpoint = serve(target, token, pool)
        if endpoint is None:
            return
        if endpoint.startswith("https://"):
            print("E refusing a TLS endpoint", endpoint, flush=True)
            return
        if endpoint and endpoint.removeprefix("http://") != target:
            print("D", endpoint, flush=True)
            target = endpoint.removeprefix("http://")
        else:
            target = home
            time.sleep(0.2)
    print("E too many redirects", flush=True)


if __name__ == "__main__":
    main()
