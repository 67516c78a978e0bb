"""A NATS client in a few dozen lines of Python's standard library: the text protocol over a socket.

Enough for a hook handler (docs/raw-nats.md): CONNECT, SUB with a queue group, PUB and HPUB (with
headers), request/reply through an inbox, PING/PONG, and parsing MSG and HMSG. No TLS, one server
(the first of a comma-separated NATS_URL), no reconnect: a handler that loses its server exits and
is restarted by whatever runs it (its registration's lease covers the gap).
"""

import json
import os
import secrets
import socket
import time
from urllib.parse import urlsplit


class Msg:
    """One delivered message. `status` is set for server status messages (e.g. "503" no responders)."""

    def __init__(self, subject, sid, reply, headers, status, data):
        self.subject, self.sid, self.reply = subject, sid, reply
        self.headers, self.status, self.data = headers, status, data

    def json(self):
        return json.loads(self.data)


def encode_headers(headers):
    lines = ["NATS/1.0"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def parse_headers(block):
    """`NATS/1.0[ <status>[ <description>]]\\r\\nKey: Value\\r\\n...` -> (status or None, {key: value})."""
    lines = block.decode().split("\r\n")
    first = lines[0].split(" ", 2)
    status = first[1] if len(first) > 1 and first[1] else None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip()] = value.strip()
    return status, headers


class NatsError(Exception):
    pass


class Nats:
    def __init__(self, url=None, name="python-handler", inbox_prefix="_INBOX"):
        url = (url or os.environ.get("NATS_URL") or "nats://127.0.0.1:4222").split(",")[0].strip()
        parts = urlsplit(url if "://" in url else f"nats://{url}")
        self.sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4222), timeout=10)
        self.buf = b""
        self.sids = 0
        self.pending = []  # messages read while waiting for something else (a PONG, a reply)
        info = json.loads(self._line().split(" ", 1)[1])
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "lang": "python-stdlib", "version": "0.1", "name": name}
        user = parts.username or os.environ.get("NATS_USER")
        password = parts.password or os.environ.get("NATS_PASS")
        token = os.environ.get("NATS_TOKEN")
        if user and password:
            connect.update(user=user, **{"pass": password})
        elif user or token:
            connect["auth_token"] = user or token
        if not info.get("headers"):
            raise NatsError("this nats-server does not support headers (2.2 or later needed)")
        self._send(f"CONNECT {json.dumps(connect)}\r\nPING\r\n".encode())
        self._wait_pong()
        # Replies to our requests come to one wildcard inbox subscription.
        self.inbox = f"{inbox_prefix}.{secrets.token_hex(8)}"
        self.inbox_sid = self.subscribe(f"{self.inbox}.*")

    # ---- writing ----
    def _send(self, data):
        self.sock.sendall(data)

    def subscribe(self, subject, queue=None):
        self.sids += 1
        self._send(f"SUB {subject}{' ' + queue if queue else ''} {self.sids}\r\n".encode())
        return self.sids

    def publish(self, subject, data=b"", reply=None, headers=None):
        data = data.encode() if isinstance(data, str) else data
        r = f" {reply}" if reply else ""
        if headers:
            h = encode_headers(headers)
            self._send(f"HPUB {subject}{r} {len(h)} {len(h) + len(data)}\r\n".encode() + h + data + b"\r\n")
        else:
            self._send(f"PUB {subject}{r} {len(data)}\r\n".encode() + data + b"\r\n")

    def request(self, subject, data=b"", headers=None, timeout=5.0):
        """Publishes with a reply inbox and returns the reply Msg; raises NatsError on 503 or timeout."""
        reply = f"{self.inbox}.{secrets.token_hex(4)}"
        self.publish(subject, data, reply, headers)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_msg(deadline - time.monotonic())
            if msg is None:
                raise NatsError(f"timeout waiting for a reply on {subject}")
            if msg.subject != reply:
                self.pending.append(msg)  # someone else's message: keep it for next_msg()
            elif msg.status == "503":
                raise NatsError(f"no responders on {subject}")
            else:
                return msg

    # ---- reading ----
    def next_msg(self, timeout):
        """The next message of a subscription (not a reply inbox), or None after `timeout` seconds."""
        if self.pending:
            return self.pending.pop(0)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read_msg(deadline - time.monotonic())
            if msg is None or msg.sid != self.inbox_sid:
                return msg

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise NatsError("connection closed by the server")
        self.buf += chunk

    def _line(self, deadline=None):
        deadline = deadline or time.monotonic() + 10
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def _bytes(self, n, deadline):
        while len(self.buf) < n + 2:
            self._fill(deadline)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _wait_pong(self):
        while True:
            msg = self._read_msg(10, want_pong=True)
            if msg == "PONG":
                return
            if msg is None:
                raise NatsError("no PONG from the server")
            self.pending.append(msg)

    def _read_msg(self, timeout, want_pong=False):
        """Reads protocol lines until a message arrives (or a PONG when `want_pong`); None on timeout."""
        deadline = time.monotonic() + max(timeout, 0)
        try:
            while True:
                line = self._line(deadline)
                op, _, rest = line.partition(" ")
                if op == "PING":
                    self._send(b"PONG\r\n")
                elif op == "PONG":
                    if want_pong:
                        return "PONG"
                elif op == "-ERR":
                    raise NatsError(rest)
                elif op == "MSG":  # MSG <subject> <sid> [reply] <bytes>
                    args = rest.split(" ")
                    reply = args[2] if len(args) == 4 else None
                    data = self._bytes(int(args[-1]), deadline + 10)
                    return Msg(args[0], int(args[1]), reply, {}, None, data)
                elif op == "HMSG":  # HMSG <subject> <sid> [reply] <header bytes> <total bytes>
                    args = rest.split(" ")
                    reply = args[2] if len(args) == 5 else None
                    hlen, total = int(args[-2]), int(args[-1])
                    raw = self._bytes(total, deadline + 10)
                    status, headers = parse_headers(raw[:hlen])
                    return Msg(args[0], int(args[1]), reply, headers, status, raw[hlen:])
                # +OK and INFO updates need nothing
        except socket.timeout:
            return None

    def close(self):
        try:
            self._send(b"PING\r\n")
            self._wait_pong()  # everything we sent has been processed
        finally:
            self.sock.close()
