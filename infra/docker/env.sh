#!/bin/sh
# Writes the secrets of a compose deployment (docs/deploy.md) into an env file:
#   sh infra/docker/env.sh [--cluster] [FILE]      (FILE defaults to .env beside docker-compose.yml)
# A generated password for each NATS user of infra/nats/geode.conf (GEODE_NATS_PASS_*), and
# POSTGRES_PASSWORD and GEODE_CONSOLE_TOKEN; `--cluster` adds the settings of the three-node
# profile. A variable the file already has is kept as it is: after an upgrade that adds a NATS user,
# running it again adds only that user's password. Nothing is printed but the names it added.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster=0
file=""
for arg in "$@"; do
  case "$arg" in
    --cluster) cluster=1 ;;
    -*) echo "usage: sh infra/docker/env.sh [--cluster] [FILE]" >&2; exit 2 ;;
    *) file=$arg ;;
  esac
done
file=${file:-$here/.env}

# A letter, then 40 hex digits: nats-server parses a password as a configuration value.
secret() { printf 'p%s' "$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"; }

umask 077
[ -e "$file" ] || echo "# Secrets of this GEODE deployment (infra/docker/env.sh). Never commit this file." > "$file"
added=""
add() {
  grep -q "^$1=" "$file" && return 0
  echo "$1=$2" >> "$file"
  added="$added $1"
}
for var in $(sed -n 's/^ *password: \$\([A-Z0-9_]*\)$/\1/p' "$here/infra/nats/geode.conf"); do
  add "$var" "$(secret)"
done
add POSTGRES_PASSWORD "$(secret)"
add GEODE_CONSOLE_TOKEN "$(secret)"
if [ "$cluster" = 1 ]; then
  # The three-node JetStream cluster: nats is node nats-1, nats-2 and nats-3 join it.
  add COMPOSE_PROFILES cluster
  add GEODE_NATS_CONFIG /etc/nats/nats-1.conf
  add GEODE_NATS_URL nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222
  add GEODE_STREAM_REPLICAS 3
fi
if [ -n "$added" ]; then echo "$file: added$added"; else echo "$file: nothing to add"; fi
