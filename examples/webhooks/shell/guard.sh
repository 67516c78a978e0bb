#!/bin/sh
# One HTTP request on stdin, its answer on stdout. Checks Geode-Signature (HMAC-SHA256 of
# "<Geode-Timestamp>.<Geode-Delivery>.<body>" with the secret) and the timestamp's age (5 minutes
# either way), drops a delivery id it has seen (one directory per id under GEODE_WEBHOOK_SEEN_DIR),
# then blocks any PreToolUse call whose envelope mentions `rm -rf`; anything else gets no decision.
set -eu
MAX_AGE_MS=300000
seen=${GEODE_WEBHOOK_SEEN_DIR:-${TMPDIR:-/tmp}/geode-webhook-seen}
answer() { # status, JSON body (ASCII)
  printf 'HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "${#2}" "$2"
}
refuse() { # status, why
  echo "refused: $2" >&2
  answer "$1" "{\"error\":\"$2\"}"
  exit 0
}
read -r _request_line
length=0 timestamp="" delivery="" signature=""
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  value=${line#*:}
  value=${value# }
  case $(printf '%s' "${line%%:*}" | tr 'A-Z' 'a-z') in
    content-length) length=$value ;;
    geode-timestamp) timestamp=$value ;;
    geode-delivery) delivery=$value ;;
    geode-signature) signature=$value ;;
  esac
done
body=$(head -c "$length")
expected="sha256=$(printf '%s.%s.%s' "$timestamp" "$delivery" "$body" | openssl dgst -sha256 -hmac "$GEODE_WEBHOOK_SECRET" | awk '{print $NF}')"
[ "$signature" = "$expected" ] || refuse "401 Unauthorized" "bad signature"
case $timestamp in '' | *[!0-9]*) refuse "401 Unauthorized" "stale timestamp" ;; esac
age=$(($(date +%s) * 1000 - timestamp))
[ "${age#-}" -le "$MAX_AGE_MS" ] || refuse "401 Unauthorized" "stale timestamp"
# The id is signed, so it is safe as a directory name once it has the expected shape; mkdir is
# atomic, so two concurrent copies of this script cannot both accept one delivery.
case $delivery in '' | *[!0-9a-f-]*) refuse "401 Unauthorized" "bad delivery id" ;; esac
mkdir -p "$seen"
find "$seen" -mindepth 1 -maxdepth 1 -mmin +10 -exec rmdir {} + 2>/dev/null || true
mkdir "$seen/$delivery" 2>/dev/null || refuse "409 Conflict" "replayed delivery"
echo "call" >&2
case $body in
  *'rm -rf'*) answer "200 OK" '{"decision":{"action":"block","reason":"the shell guard says no"}}' ;;
  *) answer "200 OK" '{"decision":null}' ;;
esac
