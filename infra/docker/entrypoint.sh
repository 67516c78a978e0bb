#!/bin/sh
# Container entry point of the one GEODE image.
#   service        run $GEODE_SERVICE (hook-dispatcher, tool-executor, verifier, activity-recorder,
#                  agent-gateway)
#   geode <args>   run the geode CLI, e.g. `geode health verifier`, `geode demo`, `geode replay`
#   anything else  exec'd as given
# Everything runs compiled JavaScript (dist/, built in the image); the working directory is /data,
# so relative state paths (.geode/…) land on the volume.
set -e
case "${1:-service}" in
  service)
    svc="${GEODE_SERVICE:?set GEODE_SERVICE to hook-dispatcher, tool-executor, verifier, activity-recorder or agent-gateway}"
    [ -f "/app/services/$svc/dist/main.js" ] || { echo "unknown service: $svc" >&2; exit 2; }
    exec node "/app/services/$svc/dist/main.js"
    ;;
  geode)
    shift
    exec node /app/packages/cli/bin/geode.mjs "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
