#!/usr/bin/env bash
# Back up Sente: the database, the file storage and the trainer's checkpoints, into
# $SENTE_BACKUP_DIR/<UTC time>/, keeping $SENTE_BACKUP_KEEP days of them (default 14). Reads the
# server's own settings (DATABASE_URL, STORAGE_URL, SENTE_DATA_DIR) from the environment: run it with
# /etc/sente/sente.env loaded (the sente-backup unit does).
#
# - PostgreSQL: pg_dump --format=custom (restore with pg_restore --clean --dbname=...). The password in
#   DATABASE_URL reaches pg_dump through a password file (PGPASSFILE, mode 0600, deleted when the
#   backup ends), never on its command line, which every user of the machine can read (ps).
# - SQLite (the embedded default): SQLite's online backup, consistent while the server runs.
# - Files on disk: rsync, hard-linking what the previous backup has (stored files never change: they
#   are named by their content), so each backup costs only the new files. Files being written
#   (.<name>.<random>.tmp, renamed into place once whole) are left out; one that vanishes while rsync
#   runs (rsync's exit status 24) is no failure.
# - The trainer's checkpoints ($SENTE_DATA_DIR/training), the same way: a restored server's trainer
#   goes on from them instead of starting its lines again.
# - S3 storage: not copied here; keep the bucket's versioning or replication on instead.
#
# Backups hold the database (password hashes, tokens): they are readable by their owner only. A run
# killed halfway leaves a .<time>.partial folder, which the next run deletes.
set -euo pipefail
umask 077

dest=${SENTE_BACKUP_DIR:-${SENTE_DATA_DIR:-./sente-data}/backups}
keep=${SENTE_BACKUP_KEEP:-14}
data=${SENTE_DATA_DIR:-./sente-data}
database=${DATABASE_URL:-sqlite:///$data/sente.sqlite3}
storage=${STORAGE_URL:-file://$(realpath -m "$data/files")}

mkdir -p "$dest"
exec 9>"$dest/.lock"
if ! flock --nonblock 9; then
  echo "backup: another backup into $dest is running" >&2
  exit 1
fi
find "$dest" -mindepth 1 -maxdepth 1 -type d -name '.*.partial' -exec rm -rf {} +

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work="$dest/.$stamp.partial"
passfile=""
mkdir "$work"
trap 'rm -rf "$work"; if [ -n "$passfile" ]; then rm -f "$passfile"; fi' EXIT

# pg_dump's connection: DATABASE_URL without its password, which goes into a password file of its own
# (read from the environment, so that it is on no command line). Prints the URL; writes the file only
# when the URL has a password.
postgres_url() {
  SENTE_BACKUP_PASSFILE="$1" python3 - <<'PY'
import os
from urllib.parse import unquote, urlsplit, urlunsplit

url = urlsplit(os.environ["SENTE_BACKUP_DATABASE_URL"])
user = url.username or ""
host = url.hostname or ""
if ":" in host:
    host = f"[{host}]"
netloc = (user + "@" if user else "") + host + (f":{url.port}" if url.port else "")
if url.password is not None:
    escaped = unquote(url.password).replace("\\", "\\\\").replace(":", "\\:")
    fd = os.open(os.environ["SENTE_BACKUP_PASSFILE"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"*:*:*:*:{escaped}\n")
print(urlunsplit(("postgresql", netloc, url.path, url.query, "")))
PY
}

case "$database" in
  postgres://*|postgresql://*)
    passfile=$(mktemp "${TMPDIR:-/tmp}/sente-backup-pgpass.XXXXXXXX")
    url=$(SENTE_BACKUP_DATABASE_URL="$database" postgres_url "$passfile")
    PGPASSFILE="$passfile" pg_dump --format=custom --no-owner --file="$work/database.pgdump" "$url"
    rm -f "$passfile"
    passfile="" ;;
  sqlite:///*)
    python3 - "${database#sqlite://}" "$work/database.sqlite3" <<'PY'
import sqlite3, sys
source, target = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
with target:
    source.backup(target)
PY
    ;;
  *) echo "backup: DATABASE_URL ${database%%://*}://...: only postgres:// and sqlite:/// are backed up" >&2; exit 2 ;;
esac

# copy FOLDER NAME: FOLDER into $work/NAME, hard-linking what the last backup has unchanged.
copy() {
  local link=() status=0
  [ -d "$dest/latest/$2" ] && link=(--link-dest="$(realpath "$dest/latest/$2")")
  rsync -a --exclude='.*.tmp' "${link[@]}" "$1/" "$work/$2/" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 24 ]; then
    echo "backup: rsync of $1 failed (status $status)" >&2
    return "$status"
  fi
}

case "$storage" in
  file://*) files="${storage#file://}"; if [ -d "$files" ]; then copy "$files" files; fi ;;
  s3://*) echo "backup: files are in $storage: keep the bucket's versioning or replication on" >&2 ;;
esac
if [ -d "$data/training" ]; then copy "$data/training" training; fi

mv "$work" "$dest/$stamp"
trap - EXIT
ln -sfn "$stamp" "$dest/latest"
find "$dest" -mindepth 1 -maxdepth 1 -type d -name '20*' -mtime +"$keep" -exec rm -rf {} +
echo "backup: $dest/$stamp ($(du -sh "$dest/$stamp" | cut -f1))"
