"""A PreToolUse webhook handler in Python's standard library alone (no NATS, no SDK).

Register it, then run it with the secret `geode handlers add` printed:

    GEODE_WEBHOOK_ALLOW=loopback geode handlers add --hook PreToolUse --name py-webhook \
        --url http://127.0.0.1:8808/ --match shell
    GEODE_WEBHOOK_SECRET=geode_whsec_… python3 examples/webhooks/python/guard.py 8808

The hook-dispatcher POSTs each envelope `{schema_version, name, correlation, payload}` with
`Geode-Timestamp` (epoch ms), `Geode-Delivery` (a fresh id per delivery) and
`Geode-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<delivery>.<body>")>`; this endpoint
refuses a request whose signature does not check out or whose timestamp is more than five minutes
off (401), and a delivery id it has already seen (409), then answers `{"decision": …}`: blocks
recursive deletes, strips a leading `sudo`.
"""

import hashlib
import hmac
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["GEODE_WEBHOOK_SECRET"].encode()
MAX_AGE_MS = 5 * 60 * 1000
# Delivery ids seen within MAX_AGE_MS (older deliveries fail the age check anyway), and when.
SEEN = {}
SEEN_LOCK = threading.Lock()


def refusal(headers, body):
    """None for a genuine, fresh, new delivery; else (HTTP status, why)."""
    timestamp = headers.get("Geode-Timestamp", "")
    delivery = headers.get("Geode-Delivery", "")
    signed = f"{timestamp}.{delivery}.".encode() + body
    expected = "sha256=" + hmac.new(SECRET, signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), headers.get("Geode-Signature", "").encode()):
        return 401, "bad signature"
    now = time.time() * 1000
    if not timestamp.isdigit() or abs(now - int(timestamp)) > MAX_AGE_MS:
        return 401, "stale timestamp"
    with SEEN_LOCK:
        for old in [d for d, at in SEEN.items() if now - at > MAX_AGE_MS]:
            del SEEN[old]
        if delivery in SEEN:
            return 409, "replayed delivery"
        SEEN[delivery] = now
    return None


def decide(envelope):
    args = envelope["payload"]["arguments"]
    cmd = str(args.get("cmd", ""))
    if re.search(r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f|\brm\s+-[a-zA-Z]*f[a-zA-Z]*r", cmd):
        return {"action": "block", "reason": "recursive deletes are not allowed here"}
    if cmd.startswith("sudo "):
        return {"action": "rewrite", "updates": {"arguments": {**args, "cmd": cmd[5:]}}, "reason": "no sudo"}
    return None


class Guard(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        refused = refusal(self.headers, body)
        if refused:
            status, why = refused
            print(f"refused: {why}", flush=True)
            return self.answer(status, {"error": why})
        envelope = json.loads(body)
        print(f"call {envelope['name']} {envelope['correlation']['tool_call_id']}", flush=True)
        self.answer(200, {"decision": decide(envelope)})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # one line per call is printed above; no access log
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Guard)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
