#!/usr/bin/env bash
# Nocni zaloha homelabu: restic -> NAS (lokalne) a Backblaze B2 (offsite).
# Spousti systemd timer backup.timer, promenne prostredi v /etc/restic/env.
set -euo pipefail

PATHS=(/etc /home /srv/docker/volumes /var/lib/postgresql-dumps)
EXCLUDES=/etc/restic/excludes.txt

log() { echo "[$(date -Is)] $*"; }

log "dump postgres"
sudo -u postgres pg_dumpall | gzip > /var/lib/postgresql-dumps/all-$(date +%F).sql.gz
find /var/lib/postgresql-dumps -name '*.sql.gz' -mtime +7 -delete

for repo in "$RESTIC_REPO_NAS" "$RESTIC_REPO_B2"; do
  log "backup -> $repo"
  restic -r "$repo" backup "${PATHS[@]}" --exclude-file="$EXCLUDES" --tag nightly
  restic -r "$repo" forget --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --prune
done

log "hotovo"
