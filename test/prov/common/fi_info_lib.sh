# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the <provider>_fi_info.sh tests: Debian's unmodified fi_info
# (libfabric-bin) run on our library, and the checks every provider's
# listing shares.  Exits 77 (skip) when fi_info is not installed.
. "$(dirname "$0")/../common/debian_bin.sh"
need_tool fi fi_info
our_lib
run() { LD_LIBRARY_PATH=$libdir timeout 30 "$fi" "$@" 2>&1; }
status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; status=1; }

# listing PROV: `fi_info -p PROV` answers, lists only PROV, RDM endpoints only.
listing() {
	out=$(run -p "$1")
	rc=$?
	if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q "provider: $1"; then
		pass "fi_info -p $1 lists $1"
	else
		fail "fi_info -p $1 (exit $rc)"
		printf '%s\n' "$out" | sed 's/^/  /'
	fi
	other=$(printf '%s\n' "$out" | grep 'provider:' | grep -v "provider: $1\$" || true)
	[ -z "$other" ] && pass "fi_info -p $1 lists only $1" || fail "fi_info -p $1 also lists: $other"
	types=$(printf '%s\n' "$out" | grep 'type:' | sort -u | sed 's/^ *//')
	[ "$types" = "type: FI_EP_RDM" ] && pass "$1 offers FI_EP_RDM only" || fail "$1 offers: $types"
}

# has_caps PROV CAP...: the first entry of `fi_info -p PROV -v` has every CAP.
has_caps() {
	p=$1
	shift
	caps=$(run -p "$p" -v | grep -m1 '^    caps:')
	for cap in "$@"; do
		printf '%s\n' "$caps" | grep -q "$cap" || fail "$p lacks $cap"
	done
}
