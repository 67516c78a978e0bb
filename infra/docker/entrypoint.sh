#!/bin/sh
# Container entry point of the one GEODE image.
#   service        run $GEODE_SERVICE (hook-dispatcher, tool-executor, verifier, activity-recorder,
#                  agent-gateway, policy-guard, mcp-bridge); node becomes PID 1 and drains on SIGTERM
#   health         the image's health check: `geode health $GEODE_SERVICE` (exit 0 when it answers
#                  ok); a container that runs no service has nothing to check
#   geode <args>   run the geode CLI, e.g. `geode health verifier`, `geode demo`, `geode replay`
#   anything else  exec'd as given
# Everything runs compiled JavaScript (dist/, built in the image); the working directory is /data,
# so relative state paths (.geode/…) land on the volume.
set -e
case "${1:-service}" in
  service)
    svc="${GEODE_SERVICE:?set GEODE_SERVICE to the service this container runs (one of the folders under /app/services)}"
    [ -f "/app/services/$svc/dist/main.js" ] || { echo "unknown service: $svc" >&2; exit 2; }
    exec node "/app/services/$svc/dist/main.js"
    ;;
  health)
    [ -n "${GEODE_SERVICE:-}" ] || { echo "no service in this container (GEODE_SERVICE is unset)"; exit 0; }
    exec node /app/packages/cli/bin/geode.mjs health "$GEODE_SERVICE"
    ;;
  geode)
    shift
    exec node /app/packages/cli/bin/geode.mjs "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
