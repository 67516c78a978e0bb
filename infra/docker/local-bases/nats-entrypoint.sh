#!/bin/sh
# As the official image's: `-…` arguments are nats-server's, anything else runs as given.
set -e
case "${1:-}" in -*) set -- nats-server "$@" ;; esac
exec "$@"
