#!/bin/sh
# The part of the official postgres image's entry point that the compose file uses: on an empty
# data folder, initdb with POSTGRES_USER and POSTGRES_PASSWORD (scram-sha-256 over TCP, trust on
# the local socket) and create POSTGRES_DB; then the server, listening on every address.
set -eu
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  user=${POSTGRES_USER:-postgres}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  db=${POSTGRES_DB:-$user}
  [ "$db" = postgres ] || echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null
fi
exec "$@"
