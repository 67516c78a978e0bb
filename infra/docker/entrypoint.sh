#!/bin/sh
# Container entry point of the one GEODE image.
#   service        run $GEODE_SERVICE (hook-dispatcher, tool-executor, verifier, activity-recorder,
#                  agent-gateway)
#   geode <args>   run the geode CLI, e.g. `geode health verifier`, `geode demo`, `geode replay`
#   anything else  exec'd as given
# TypeScript runs through tsx's loader (resolved at build time into /app/.tsx-loader); the working
# directory is /data, so relative state paths (.geode/…) land on the volume.
set -e
loader="$(cat /app/.tsx-loader)"
case "${1:-service}" in
  service)
    svc="${GEODE_SERVICE:?set GEODE_SERVICE to hook-dispatcher, tool-executor, verifier, activity-recorder or agent-gateway}"
    [ -f "/app/services/$svc/src/main.ts" ] || { echo "unknown service: $svc" >&2; exit 2; }
    exec node --import "$loader" "/app/services/$svc/src/main.ts"
    ;;
  geode)
    shift
    exec node --import "$loader" /app/packages/cli/src/main.ts "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
