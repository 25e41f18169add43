#!/usr/bin/env bash
# Back up Sente: the database and the file storage, into $SENTE_BACKUP_DIR/<UTC time>/, keeping
# $SENTE_BACKUP_KEEP days of them (default 14). Reads the server's own settings (DATABASE_URL,
# STORAGE_URL, SENTE_DATA_DIR) from the environment: run it with /etc/sente/sente.env loaded (the
# sente-backup unit does).
#
# - PostgreSQL: pg_dump --format=custom (restore with pg_restore --clean --dbname=...).
# - SQLite (the embedded default): SQLite's online backup, consistent while the server runs.
# - Files on disk: rsync, hard-linking what the previous backup has (stored files never change: they
#   are named by their content), so each backup costs only the new files.
# - S3 storage: not copied here; keep the bucket's versioning or replication on instead.
set -euo pipefail

dest=${SENTE_BACKUP_DIR:-${SENTE_DATA_DIR:-./sente-data}/backups}
keep=${SENTE_BACKUP_KEEP:-14}
data=${SENTE_DATA_DIR:-./sente-data}
database=${DATABASE_URL:-sqlite:///$data/sente.sqlite3}
storage=${STORAGE_URL:-file://$(realpath -m "$data/files")}

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work="$dest/.$stamp.partial"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

case "$database" in
  postgres://*|postgresql://*)
    pg_dump --format=custom --no-owner --file="$work/database.pgdump" "${database/#postgres:/postgresql:}" ;;
  sqlite:///*)
    python3 - "${database#sqlite://}" "$work/database.sqlite3" <<'PY'
import sqlite3, sys
source, target = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
with target:
    source.backup(target)
PY
    ;;
  *) echo "backup: DATABASE_URL $database: only postgres:// and sqlite:/// are backed up" >&2; exit 2 ;;
esac

case "$storage" in
  file://*)
    files="${storage#file://}"
    link=()
    [ -d "$dest/latest/files" ] && link=(--link-dest="$(realpath "$dest/latest/files")")
    [ -d "$files" ] && rsync -a "${link[@]}" "$files/" "$work/files/" ;;
  s3://*) echo "backup: files are in $storage: keep the bucket's versioning or replication on" >&2 ;;
esac

mv "$work" "$dest/$stamp"
trap - EXIT
ln -sfn "$stamp" "$dest/latest"
find "$dest" -mindepth 1 -maxdepth 1 -type d -name '20*' -mtime +"$keep" -exec rm -rf {} +
echo "backup: $dest/$stamp ($(du -sh "$dest/$stamp" | cut -f1))"
