#!/bin/sh
# One HTTP request on stdin, its answer on stdout. Checks Geode-Signature (HMAC-SHA256 of
# "<Geode-Timestamp>.<body>" with the secret), then blocks any PreToolUse call whose envelope
# mentions `rm -rf`; anything else gets no decision.
set -eu
answer() { # status, JSON body (ASCII)
  printf 'HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "${#2}" "$2"
}
read -r _request_line
length=0 timestamp="" signature=""
while IFS= read -r line; do
  line=$(printf '%s' "$line" | tr -d '\r')
  [ -z "$line" ] && break
  value=${line#*:}
  value=${value# }
  case $(printf '%s' "${line%%:*}" | tr 'A-Z' 'a-z') in
    content-length) length=$value ;;
    geode-timestamp) timestamp=$value ;;
    geode-signature) signature=$value ;;
  esac
done
body=$(head -c "$length")
expected="sha256=$(printf '%s.%s' "$timestamp" "$body" | openssl dgst -sha256 -hmac "$GEODE_WEBHOOK_SECRET" | awk '{print $NF}')"
if [ "$signature" != "$expected" ]; then
  echo "refused: bad signature" >&2
  answer "401 Unauthorized" '{"error":"bad signature"}'
  exit 0
fi
echo "call" >&2
case $body in
  *'rm -rf'*) answer "200 OK" '{"decision":{"action":"block","reason":"the shell guard says no"}}' ;;
  *) answer "200 OK" '{"decision":null}' ;;
esac
