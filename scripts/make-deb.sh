#!/usr/bin/env bash
# Builds the Debian package of LM Warden (`make deb`) from an already built tree with dpkg-deb:
# /usr/bin/lm-warden, the systemd unit, a commented /etc/lm-warden/warden.yaml (a conffile), the maintainer
# scripts (system user, unit enabled), the docs, dashboards and alert rules. Usage: make-deb.sh BUILD [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: make-deb.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$build}
version=$(sed -n 's/.*kVersion = "\(.*\)".*/\1/p' "$here/src/app/version.hpp")
arch=$(dpkg --print-architecture)
stage="$build/deb/lm-warden_${version}_${arch}"
rm -rf "$build/deb"
mkdir -p "$stage/DEBIAN"

put() {  # put MODE SOURCE DEST: one file into the package tree
  install -D -m "$1" "$2" "$stage$3"
}
put 0755 "$build/lm-warden" /usr/bin/lm-warden
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/lm-warden"
put 0644 "$here/deploy/warden.yaml" /etc/lm-warden/warden.yaml
put 0644 "$here/deploy/systemd/lm-warden.service" /lib/systemd/system/lm-warden.service
doc=/usr/share/doc/lm-warden
mkdir -p "$stage/usr/share/man/man1"
put 0644 "$here/deploy/debian/copyright" "$doc/copyright"
for f in README.md docs/deployment.md docs/config.md docs/api.md docs/engines.md; do
  put 0644 "$here/$f" "$doc/$(basename "$f")"
done
put 0644 "$here/config/warden.example.yaml" "$doc/examples/warden.example.yaml"
for f in "$here"/deploy/grafana/*.json "$here"/deploy/prometheus/*.yml "$here"/deploy/haproxy/*.cfg; do
  [ -e "$f" ] && put 0644 "$f" "/usr/share/lm-warden/$(basename "$(dirname "$f")")/$(basename "$f")"
done
{
  echo "lm-warden ($version) unstable; urgency=medium"
  echo
  echo "  * Built from the project's sources by make deb."
  echo
  echo " -- LM Warden maintainers <maintainers@lm-warden.example>  $(date -R -u -d "@$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n >"$stage$doc/changelog.gz"  # a native package: changelog.gz
chmod 0644 "$stage$doc/changelog.gz"
gzip -9n <"$here/deploy/man/lm-warden.1" >"$stage/usr/share/man/man1/lm-warden.1.gz"
chmod 0644 "$stage/usr/share/man/man1/lm-warden.1.gz"

# Dependencies: the shared libraries the binary links, as dpkg-shlibdeps names their packages.
shlib=$(mktemp -d)
trap 'rm -rf "$shlib"' EXIT
mkdir -p "$shlib/debian"
printf 'Source: lm-warden\n\nPackage: lm-warden\nArchitecture: any\n' >"$shlib/debian/control"
depends=$(cd "$shlib" && dpkg-shlibdeps -O "$stage/usr/bin/lm-warden" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

for s in postinst prerm postrm; do
  install -m 0755 "$here/deploy/debian/$s" "$stage/DEBIAN/$s"
done
echo /etc/lm-warden/warden.yaml >"$stage/DEBIAN/conffiles"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
  "$here/deploy/debian/control.in" >"$stage/DEBIAN/control"
find "$stage" -type d -exec chmod 0755 {} +
mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/lm-warden_${version}_${arch}.deb" >/dev/null
echo "$out/lm-warden_${version}_${arch}.deb"
