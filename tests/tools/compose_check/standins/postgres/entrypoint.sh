#!/bin/sh
# Make the cluster on first start (user, password, database from the
# environment), then run PostgreSQL as the postgres user, listening on every
# address with passwords required from other containers.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
    chown postgres "$password_file"
    as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$password_file" \
        -E UTF8 --auth-local=trust --auth-host=scram-sha-256
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    as_postgres pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start
    if [ "$POSTGRES_DB" != postgres ]; then
        as_postgres psql -U "$POSTGRES_USER" -d postgres -v ON_ERROR_STOP=1 \
            -c "create database \"$POSTGRES_DB\""
    fi
    as_postgres pg_ctl -D "$PGDATA" -w -m fast stop
fi
if [ "${1:-}" = postgres ]; then
    shift
    exec setpriv --reuid=postgres --regid=postgres --init-groups \
        postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
