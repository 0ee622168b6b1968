# Sourced by the load benchmarks: starts "$BUILD_DIR/server/serenity-server"
# on a free loopback port (plaintext, a queue deep enough for 64 Score
# streams with 64 candidates in flight each, 64 jobs per connection),
# waits for it to listen, sets $server (its pid) and $address, and stops it
# when the sourcing script exits.
port_file=$(mktemp)
"$BUILD_DIR/server/serenity-server" --plaintext --port 0 --port-file "$port_file" --max-queue 4096 \
  --max-jobs-per-connection 64 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$port_file"' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
address="127.0.0.1:$(cat "$port_file")"
