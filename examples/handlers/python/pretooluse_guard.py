"""A PreToolUse guard in Python with no NATS library: blocks recursive deletes, strips `sudo`.

Run it next to a hook-dispatcher (NATS_URL, GEODE_NAMESPACE as for every component):

    python3 examples/handlers/python/pretooluse_guard.py

It registers `PreToolUse.py-guard` for the `shell` tools only (`match`), so other tools never
reach it. GEODE_HANDLER_LEASE_MS changes its lease (default 15,000 ms; heartbeat every lease/3).
"""

import os
import re

from geode_handler import serve


def decide(envelope):
    args = envelope["payload"]["arguments"]
    cmd = str(args.get("cmd", ""))
    if re.search(r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f|\brm\s+-[a-zA-Z]*f[a-zA-Z]*r", cmd):
        return {"action": "block", "reason": "recursive deletes are not allowed here"}
    if cmd.startswith("sudo "):
        return {"action": "rewrite", "updates": {"arguments": {**args, "cmd": cmd[5:]}}, "reason": "no sudo"}
    return None  # no decision: the chain goes on, and nothing is granted


if __name__ == "__main__":
    serve("PreToolUse", "py-guard", decide, priority=20, timeout_ms=2_000,
          match={"tool_name": ["shell", "shell.*"]},
          lease_ms=int(os.environ.get("GEODE_HANDLER_LEASE_MS", "15000")))
