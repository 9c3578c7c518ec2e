#!/bin/sh
set -eu
if [ "${1:-}" = redis-server ]; then
    shift
    set -- redis-server --protected-mode no "$@"
fi
exec "$@"
