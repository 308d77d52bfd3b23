#!/usr/bin/env bash
# Builds the Debian package target/debian/dataplane_VERSION-1_ARCH.deb from a
# release build: the binaries (stripped), man pages, completions, the unit,
# the annotated config (a conffile), hugepages through sysctl.d, the Grafana
# dashboard and the docs. Dependencies come from dpkg-shlibdeps. `make deb`.
# DEB_PROFILE=dev packages the debug build instead (make test checks the
# packaging with the binaries its tests already built).
set -euo pipefail
cd "$(dirname "$0")/.."

MAINTAINER=${DEB_MAINTAINER:-"dataplane maintainers <maintainers@dataplane.example.org>"}
upstream=$(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="ctl"))')
version="$upstream-1"
arch=$(dpkg --print-architecture)
date=$(git log -1 --format=%aD 2>/dev/null || date -R)

profile=${DEB_PROFILE:-release}
if [ "$profile" = dev ]; then
    # The whole workspace with every target, as `cargo test --workspace` built
    # it: the same features, so its binaries are reused rather than rebuilt.
    cargo build --profile dev --workspace --all-targets
else
    cargo build --profile "$profile" -p ctl -p dpctl
fi
bin=target/$([ "$profile" = dev ] && echo debug || echo "$profile")
out=target/debian
root="$out/dataplane_${version}_$arch"
rm -rf "$root"
install -d "$root/DEBIAN" "$root/usr/sbin" "$root/usr/bin" "$root/usr/share/man/man8" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/doc/dataplane" "$root/usr/share/dataplane/grafana" \
    "$root/etc/dataplane" "$root/etc/sysctl.d" "$root/lib/systemd/system"

install -m 0755 "$bin/dataplaned" "$root/usr/sbin/dataplaned"
install -m 0755 "$bin/dpctl" "$root/usr/bin/dpctl"
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$root/usr/sbin/dataplaned" "$root/usr/bin/dpctl"
for b in dataplaned dpctl; do
    "$bin/$b" --man | gzip -9n > "$root/usr/share/man/man8/$b.8.gz"
    "$bin/$b" --completions bash > "$root/usr/share/bash-completion/completions/$b"
    "$bin/$b" --completions zsh > "$root/usr/share/zsh/vendor-completions/_$b"
done
install -m 0644 packaging/dataplaned.toml "$root/etc/dataplane/dataplaned.toml"
install -m 0644 packaging/80-dataplane.conf "$root/etc/sysctl.d/80-dataplane.conf"
install -m 0644 packaging/dataplaned.service "$root/lib/systemd/system/dataplaned.service"
install -m 0644 packaging/grafana/dataplane.json "$root/usr/share/dataplane/grafana/dataplane.json"
install -m 0644 packaging/debian/copyright "$root/usr/share/doc/dataplane/copyright"
gzip -9n < README.md > "$root/usr/share/doc/dataplane/README.md.gz"
sed -e "s/@VERSION@/$version/g" -e "s/@UPSTREAM@/$upstream/g" -e "s/@MAINTAINER@/$MAINTAINER/g" \
    -e "s/@DATE@/$date/g" packaging/debian/changelog | gzip -9n > "$root/usr/share/doc/dataplane/changelog.Debian.gz"
chmod 0644 "$root"/usr/share/man/man8/* "$root"/usr/share/bash-completion/completions/* \
    "$root"/usr/share/zsh/vendor-completions/* "$root"/usr/share/doc/dataplane/*

# Shared-library dependencies, as debhelper would compute them.
shlib="$out/shlibdeps"
rm -rf "$shlib" && install -d "$shlib/debian"
printf 'Source: dataplane\n\nPackage: dataplane\nArchitecture: any\n' > "$shlib/debian/control"
depends=$(cd "$shlib" && dpkg-shlibdeps -O -e"../../../$root/usr/sbin/dataplaned" \
    -e"../../../$root/usr/bin/dpctl" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@MAINTAINER@/$MAINTAINER/" \
    -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" packaging/debian/control > "$root/DEBIAN/control"
for s in postinst prerm postrm; do
    install -m 0755 "packaging/debian/$s" "$root/DEBIAN/$s"
done
printf '/etc/dataplane/dataplaned.toml\n/etc/sysctl.d/80-dataplane.conf\n' > "$root/DEBIAN/conffiles"
(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
    sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
deb="$out/dataplane_${version}_$arch.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "deb: $deb"
