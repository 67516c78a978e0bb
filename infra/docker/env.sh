#!/bin/sh
# Writes the secrets of a compose deployment (docs/deploy.md) into an env file:
#   sh infra/docker/env.sh [--cluster] [FILE]      (FILE defaults to .env beside docker-compose.yml)
# A generated password for each NATS user of infra/nats/geode.conf (GEODE_NATS_PASS_*), and
# POSTGRES_PASSWORD and GEODE_CONSOLE_TOKEN, and the notary's Ed25519 signing key (a compose
# secret: .geode/compose/audit.key beside FILE, its path in GEODE_AUDIT_KEY_PATH; needs openssl;
# an existing key is never replaced); `--cluster` adds the settings of the three-node
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

# The signer key in the note format the notary reads: PRIVATE+KEY+{name}+{8 hex key hash}+
# {base64(0x01 || 32-byte seed)}, the hash the first 4 bytes of sha256(name "\n" 0x01 public key).
audit_key() {
  tmp=$(mktemp -d)
  openssl genpkey -algorithm ed25519 -outform DER -out "$tmp/key.der" 2>/dev/null
  openssl pkey -inform DER -in "$tmp/key.der" -pubout -outform DER -out "$tmp/pub.der" 2>/dev/null
  name=geode-notary
  hash=$({ printf '%s\n\001' "$name"; tail -c 32 "$tmp/pub.der"; } | openssl dgst -sha256 -binary | head -c 4 | od -An -tx1 | tr -d ' \n')
  seed=$({ printf '\001'; tail -c 32 "$tmp/key.der"; } | base64 | tr -d '\n')
  rm -rf "$tmp"
  printf 'PRIVATE+KEY+%s+%s+%s\n' "$name" "$hash" "$seed"
}
# The directory is the owner's alone; the file in it is readable by the container's user (a
# compose secret is a bind mount of the file, which the directory's mode does not guard there).
keydir="$(cd "$(dirname "$file")" && pwd)/.geode/compose"
mkdir -p "$keydir"
chmod 700 "$keydir"
if [ ! -s "$keydir/audit.key" ]; then
  audit_key > "$keydir/audit.key.tmp"
  chmod 644 "$keydir/audit.key.tmp"
  mv "$keydir/audit.key.tmp" "$keydir/audit.key"
  added="$added audit.key"
fi
add GEODE_AUDIT_KEY_PATH "$keydir/audit.key"
if [ "$cluster" = 1 ]; then
  # The three-node JetStream cluster: nats is node nats-1, nats-2 and nats-3 join it.
  add COMPOSE_PROFILES cluster
  add GEODE_NATS_CONFIG /etc/nats/nats-1.conf
  add GEODE_NATS_URL nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222
  add GEODE_STREAM_REPLICAS 3
fi
if [ -n "$added" ]; then echo "$file: added$added"; else echo "$file: nothing to add"; fi
