#!/usr/bin/env bash
# Fetches CPython's own pickle test suite (Lib/test/pickletester.py and the test.support
# package it imports) for the interpreter's X.Y from Debian's packages, as `apt-get download`
# plus `dpkg-deb -x` do, into DEST/test (never committed). pickletester.py is in
# libpythonX.Y-testsuite, test/__init__.py and test/support/ in libpythonX.Y-stdlib.
#
#   fetch_pickletester.sh PYTHON DEST
#
# Idempotent: DEST/.fetched names the package version once the copy is complete.
set -euo pipefail

python=$1
dest=$2
fail() {
    echo "fetch_pickletester: $*" >&2
    echo "fetch_pickletester: tests/pickle_reader/test_cpython_pickletester.py needs it (docs/pickle_reader.md)" >&2
    exit 1
}

minor=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
suite=libpython$minor-testsuite
stdlib=libpython$minor-stdlib
stamp=$dest/.fetched
if [ -f "$stamp" ] && [ -f "$dest/test/pickletester.py" ] && grep -q "^$suite " "$stamp"; then
    exit 0
fi
for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: the suite comes from Debian's $suite package"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
download() {
    (cd "$work" && apt-get download "$suite" "$stdlib") >"$work/apt.log" 2>&1
}
if ! download; then
    # The package lists may be missing or stale (a fresh machine): refresh them once.
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null 2>&1 || true
    fi
    download || {
        cat "$work/apt.log" >&2
        fail "apt-get download $suite $stdlib failed (no package lists, no network, or no such package for Python $minor)"
    }
fi

# The tests must be those of this interpreter's X.Y (a patch release may differ).
version=$(dpkg-deb -f "$work"/"$suite"_*.deb Version)
case "$version" in
    "$minor".*) ;;
    *) fail "$suite is version $version, not Python $minor" ;;
esac

for deb in "$work"/*.deb; do
    dpkg-deb -x "$deb" "$work/root"
done
lib=$work/root/usr/lib/python$minor/test
[ -f "$lib/pickletester.py" ] && [ -f "$lib/support/__init__.py" ] \
    || fail "$suite $version has no test/pickletester.py or test/support/"

# Build the copy next to DEST, then swap it in whole.
mkdir -p "$(dirname "$dest")"
new=$(mktemp -d "$dest.new.XXXXXX")
mkdir -p "$new/test"
cp "$lib/__init__.py" "$lib/pickletester.py" "$new/test/"
cp -r "$lib/support" "$new/test/support"
echo "$suite $version" >"$new/.fetched"
rm -rf "$dest"
mv "$new" "$dest"
echo "fetch_pickletester: $suite $version -> $dest/test"
