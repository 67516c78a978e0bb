"""A PreToolUse webhook handler in Python's standard library alone (no NATS, no SDK).

Register it, then run it with the secret `geode handlers add` printed:

    geode handlers add --hook PreToolUse --name py-webhook --url http://127.0.0.1:8808/ --match shell
    GEODE_WEBHOOK_SECRET=geode_whsec_… python3 examples/webhooks/python/guard.py 8808

The agent gateway POSTs each envelope `{schema_version, name, correlation, payload}` with
`Geode-Timestamp` (epoch ms) and `Geode-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`;
this endpoint refuses a request whose signature does not check out, or that is older than five
minutes, and answers `{"decision": …}`: blocks recursive deletes, strips a leading `sudo`.
"""

import hashlib
import hmac
import json
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["GEODE_WEBHOOK_SECRET"].encode()
MAX_AGE_MS = 5 * 60 * 1000


def signed(headers, body):
    timestamp = headers.get("Geode-Timestamp", "")
    expected = "sha256=" + hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = timestamp.isdigit() and abs(time.time() * 1000 - int(timestamp)) <= MAX_AGE_MS
    return fresh and hmac.compare_digest(expected, headers.get("Geode-Signature", ""))


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
        if not signed(self.headers, body):
            print("refused: bad signature", flush=True)
            return self.answer(401, {"error": "bad signature"})
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
