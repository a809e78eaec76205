# Shared by scripts/dev and scripts/test: finds PostgreSQL's server binaries, installing them with apt when missing.
# Sets PG_BIN. Also installs zlib's headers when missing (the build links zlib through compress-nio).

find_postgres_bin() {
  if command -v initdb >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v initdb)")"; return; fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  done
}

ensure_zlib_headers() {
  [ -f /usr/include/zlib.h ] && return
  if [ "$(id -u)" -ne 0 ]; then
    echo "zlib's headers are missing; install the zlib1g-dev package" >&2
    exit 1
  fi
  echo "Installing zlib headers (apt-get install zlib1g-dev)…" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zlib1g-dev >/dev/null
}

ensure_postgres() {
  ensure_zlib_headers
  PG_BIN=$(find_postgres_bin || true)
  if [ -z "$PG_BIN" ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "PostgreSQL server binaries (initdb, pg_ctl) are missing; install the postgresql package" >&2
      exit 1
    fi
    echo "Installing PostgreSQL (apt-get install postgresql)…" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null
    PG_BIN=$(find_postgres_bin)
  fi
  export PG_BIN
}
