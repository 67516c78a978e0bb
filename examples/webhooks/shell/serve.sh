#!/bin/sh
# A webhook handler in shell: socat accepts on 127.0.0.1:<port> and runs guard.sh once per
# connection (Debian: apt-get install socat openssl). GEODE_WEBHOOK_SECRET is the secret that
# `geode handlers add` printed.
#   GEODE_WEBHOOK_SECRET=geode_whsec_… examples/webhooks/shell/serve.sh 8809
set -eu
: "${GEODE_WEBHOOK_SECRET:?set GEODE_WEBHOOK_SECRET}"
here=$(cd "$(dirname "$0")" && pwd)
echo "listening on 127.0.0.1:$1"
exec socat "TCP-LISTEN:$1,bind=127.0.0.1,reuseaddr,fork" "EXEC:$here/guard.sh"
