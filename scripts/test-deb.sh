#!/usr/bin/env bash
# Builds the Debian package and checks it as an operator would meet it: its
# contents, lintian (no errors; warnings printed), then installed on this
# machine: systemd-analyze verify on the unit, `dataplaned --check` on the
# shipped config, dpctl and the man pages; purged at the end. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=$(scripts/deb.sh | sed -n 's/^deb: //p')
[ -f "$deb" ] || { echo "deb: no package built"; exit 1; }

echo "== deb: contents"
contents=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for f in /usr/sbin/dataplaned /usr/bin/dpctl \
    /usr/share/man/man8/dataplaned.8.gz /usr/share/man/man8/dpctl.8.gz \
    /usr/share/bash-completion/completions/dpctl /usr/share/bash-completion/completions/dataplaned \
    /usr/share/zsh/vendor-completions/_dpctl /usr/share/zsh/vendor-completions/_dataplaned \
    /etc/dataplane/dataplaned.toml /etc/sysctl.d/80-dataplane.conf \
    /lib/systemd/system/dataplaned.service /usr/share/dataplane/grafana/dataplane.json \
    /usr/share/doc/dataplane/copyright /usr/share/doc/dataplane/changelog.Debian.gz; do
    grep -qxF "$f" <<<"$contents" || { echo "deb: $f missing"; exit 1; }
done
dpkg-deb --field "$deb" Depends | grep -q 'librte-ethdev' || { echo "deb: no DPDK dependency"; exit 1; }
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = "$(printf '/etc/dataplane/dataplaned.toml\n/etc/sysctl.d/80-dataplane.conf')" ] ||
    { echo "deb: conffiles"; exit 1; }

echo "== deb: lintian"
report=$(lintian --tag-display-limit 0 --allow-root "$deb" 2>&1 || true)
printf '%s\n' "$report"
if grep -q '^E: ' <<<"$report"; then
    echo "deb: lintian reports errors"; exit 1
fi

echo "== deb: installed"
cleanup() { dpkg --purge dataplane >/dev/null 2>&1 || true; }
trap cleanup EXIT
dpkg -i "$deb" >/dev/null
systemd-analyze verify /lib/systemd/system/dataplaned.service
/usr/sbin/dataplaned --check -c /etc/dataplane/dataplaned.toml
/usr/bin/dpctl --help >/dev/null
man -w dataplaned dpctl >/dev/null
# dpctl finds the packaged socket path by default (nothing runs: a clear error)
if out=$(/usr/bin/dpctl show version 2>&1); then echo "deb: dpctl answered with no daemon"; exit 1; fi
grep -q '/run/dataplane/dataplaned.sock' <<<"$out" || { echo "deb: dpctl said: $out"; exit 1; }
dpkg --purge dataplane >/dev/null
[ ! -e /etc/dataplane ] || { echo "deb: purge left /etc/dataplane"; exit 1; }
echo "deb: ok ($deb)"
