"""Serving a GEODE hook handler over plain NATS (docs/raw-nats.md), on top of nats_wire.py.

`serve(hook, name, decide, ...)` subscribes to `{ns}.hook.handler.{hook}.{name}` in queue group
`{name}`, registers `{hook}.{name}` in KV `{ns}_hook_handlers` (revision-checked, refusing another
configuration like the SDK does), refreshes `heartbeat_at` every lease/3, answers each envelope
with `{"decision": ...}`, and deletes its key on SIGTERM/SIGINT.
"""

import base64
import json
import os
import signal
import sys
import time

from nats_wire import Nats, NatsError, parse_headers

CONFIG_FIELDS = ("hook", "name", "priority", "timeout_ms", "schema_version", "failure_mode", "match")


class DuplicateHandler(Exception):
    pass


class Registry:
    """The handler's own key in KV `{ns}_hook_handlers`, read and written through JetStream subjects."""

    def __init__(self, nc, ns, key):
        self.nc, self.bucket, self.key = nc, f"{ns}_hook_handlers", key
        self.subject = f"$KV.{self.bucket}.{key}"
        self.revision = None  # the stream sequence of our last write

    def read(self):
        """(revision, value or None) of the key's last entry; (0, None) when it never existed."""
        reply = self.nc.request(f"$JS.API.STREAM.MSG.GET.KV_{self.bucket}",
                                json.dumps({"last_by_subj": self.subject})).json()
        error = reply.get("error")
        if error and error.get("err_code") == 10037:  # no message found
            return 0, None
        if error:
            raise NatsError(f"{self.bucket}: {error.get('description')} ({error.get('err_code')})")
        message = reply["message"]
        _, headers = parse_headers(base64.b64decode(message["hdrs"])) if message.get("hdrs") else (None, {})
        if headers.get("KV-Operation") in ("DEL", "PURGE"):
            return message["seq"], None  # a tombstone: the key is free, but its revision counts
        return message["seq"], json.loads(base64.b64decode(message.get("data", "")) or b"null")

    def write(self, value, live=lambda stored: True):
        """Creates the key or replaces an agreeing (or dead `open`) value, compare-and-set on the revision."""
        for _ in range(5):
            revision, stored = self.read()
            if stored is not None and any(stored.get(f) != value.get(f) for f in CONFIG_FIELDS) and live(stored):
                raise DuplicateHandler(f"{self.key} is already registered with another configuration")
            ack = self.nc.request(self.subject, json.dumps(value),
                                  {"Nats-Expected-Last-Subject-Sequence": str(revision)}).json()
            if "error" not in ack:
                self.revision = ack["seq"]
                return
            if ack["error"].get("err_code") != 10071:  # 10071: wrong last sequence, someone wrote first
                raise NatsError(ack["error"].get("description"))
        raise NatsError(f"{self.key}: too many concurrent writers")

    def delete(self):
        """Deletes the key if our last write is still the latest (a replica's heartbeat wins)."""
        if self.revision is None:
            return False
        ack = self.nc.request(self.subject, b"", {"KV-Operation": "DEL",
                                                  "Nats-Expected-Last-Subject-Sequence": str(self.revision)}).json()
        return "error" not in ack


def wait_for_bucket(nc, ns, timeout=30.0):
    """The hook-dispatcher creates the bucket; a handler that starts first waits for it."""
    deadline = time.monotonic() + timeout
    while True:
        info = nc.request(f"$JS.API.STREAM.INFO.KV_{ns}_hook_handlers", b"").json()
        if "error" not in info:
            return
        if time.monotonic() > deadline:
            raise NatsError(f"no bucket {ns}_hook_handlers: is the hook-dispatcher running?")
        time.sleep(0.5)


def serve(hook, name, decide, priority=100, timeout_ms=10_000, failure_mode="open", match=None,
          lease_ms=15_000):
    ns = os.environ.get("GEODE_NAMESPACE", "geode")
    # With per-role NATS users a handler reads replies only under its own prefix (_INBOX_handler-{name}).
    nc = Nats(name=name, inbox_prefix=os.environ.get("NATS_INBOX_PREFIX", "_INBOX"))
    subject = f"{ns}.hook.handler.{hook}.{name}"
    sid = nc.subscribe(subject, queue=name)  # subscribe first: a registration nobody answers is an error
    registration = {"hook": hook, "name": name, "priority": priority, "timeout_ms": timeout_ms,
                    "schema_version": "geode.public-hook.v2", "failure_mode": failure_mode, "match": match,
                    "heartbeat_at": 0, "lease_ms": lease_ms}

    def live(stored):  # a dead `open` registration may be replaced; a `closed` one only after `handlers rm`
        return stored.get("failure_mode") == "closed" or stored["heartbeat_at"] + stored["lease_ms"] >= now_ms()

    wait_for_bucket(nc, ns)
    registry = Registry(nc, ns, f"{hook}.{name}")
    registry.write({**registration, "heartbeat_at": now_ms()}, live)
    print(f"{name} serving {subject}", flush=True)

    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))
    next_beat = time.monotonic() + lease_ms / 3000
    while not stopping:
        msg = nc.next_msg(min(0.5, max(next_beat - time.monotonic(), 0)))
        if time.monotonic() >= next_beat:
            registry.write({**registration, "heartbeat_at": now_ms()}, live)
            next_beat = time.monotonic() + lease_ms / 3000
        if msg is None or msg.sid != sid or not msg.reply:
            continue
        if msg.headers.get("Geode-Probe"):  # a replica asking whether anyone else still serves
            nc.publish(msg.reply, json.dumps({"probe": "ok"}))
            continue
        nc.publish(msg.reply, json.dumps(answer(msg, hook, decide)))
    registry.delete()
    nc.close()


def answer(msg, hook, decide):
    """`{"decision": ...}`, or an error reply (recorded by the dispatcher as this handler's error)."""
    try:
        envelope = msg.json()
        if envelope.get("name") != hook:
            return {"error": {"code": "invalid_request", "message": f"this handler serves {hook}"}}
        return {"decision": decide(envelope)}
    except Exception as err:  # noqa: BLE001 - any failure is an error reply, and we keep serving
        print(f"handler failed: {type(err).__name__}", file=sys.stderr, flush=True)
        return {"error": {"code": "internal", "message": type(err).__name__}}


def now_ms():
    return int(time.time() * 1000)
