#!/usr/bin/env bash
# Makes the database kioku runs on, once, as the server's superuser: a login role that is
# neither a superuser nor BYPASSRLS (PostgreSQL exempts those from row-level security, kioku's
# second wall between workspaces), a database it owns, and the pgvector extension (creating it
# needs a superuser). The pgvector image runs this from /docker-entrypoint-initdb.d on its
# first start (compose.yaml mounts it there); run it by hand against any other server with
# PGHOST/PGPORT/PGUSER (a superuser) set. tests/packaging/test_deploy.py runs it.
#   KIOKU_DB_PASSWORD  the role's password (required)
#   KIOKU_DB_USER      the role (default kioku)
#   KIOKU_DB_NAME      the database (default kioku)
set -euo pipefail
: "${KIOKU_DB_PASSWORD:?set KIOKU_DB_PASSWORD}"
user="${KIOKU_DB_USER:-kioku}"
name="${KIOKU_DB_NAME:-kioku}"
admin="${POSTGRES_USER:-${PGUSER:-postgres}}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$admin" --dbname postgres \
  -v user="$user" -v name="$name" -v password="$KIOKU_DB_PASSWORD" <<'SQL'
CREATE ROLE :"user" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE PASSWORD :'password';
CREATE DATABASE :"name" OWNER :"user";
SQL
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$admin" --dbname "$name" \
  -c 'CREATE EXTENSION IF NOT EXISTS vector;'
echo "kioku: role $user owns database $name (pgvector enabled); run kioku migrate as $user"
