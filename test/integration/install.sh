#!/usr/bin/env bash
# make install / make uninstall, and the installed service run the way
# systemd runs it:
#  - make install DESTDIR=$T/root PREFIX=/usr installs this build's kria
#    (no compiling, no other build directory), kria(1), the reference
#    configuration, /etc/kria/kria.conf (0600) and the unit with the
#    installed paths; a second install keeps an existing kria.conf;
#  - the installed unit passes systemd-analyze verify with no warning;
#  - as the unit would: an unprivileged uid of its own, no groups, a state
#    directory (0700) it owns, a credentials directory (0500) holding a
#    copy (0400) of the root-only kria.conf, the unit's own ExecStart line
#    with %d and ${STATE_DIRECTORY} filled in, umask 0077: kria reads the
#    configuration, crawls a local site to the end and writes its database,
#    crawl.log and WARC files there; the same uid cannot read
#    /etc/kria/kria.conf itself (why the unit passes a credential);
#  - make uninstall removes every file install put there, except a
#    kria.conf that was edited (and says so).
. "$(dirname "$0")/lib.sh"

[ -x "$KRIA" ] || bail "kria is not built ($KRIA)"
command -v make >/dev/null || bail "make not installed"

ROOT=$T/root
# This build directory as the Makefile names it: build, or build-san with
# SANITIZE=1 (relative to the top when it is inside it, as make made it).
bdir=${KRIA_BUILD%/}
[[ $bdir == "$KRIA_TOP"/* ]] && bdir=${bdir#"$KRIA_TOP"/}
case $bdir in
  *-san) margs=(SANITIZE=1 "BUILD=${bdir%-san}") ;;
  *) margs=("BUILD=$bdir") ;;
esac
# mk ARGS...: the top Makefile, as a user types it, with no make above.
mk() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$KRIA_TOP" \
    "${margs[@]}" DESTDIR="$ROOT" PREFIX=/usr "$@"
}

# ---- install --------------------------------------------------------------
mk install >"$T/install.out" 2>&1
is "$?" 0 "make install DESTDIR=... PREFIX=/usr: exit 0"
unlike "$(cat "$T/install.out")" "(^|[[:space:]])-c -o " "make install compiles nothing (this build is up to date)"
check "the installed binary is this build's ($KRIA)" cmp -s "$KRIA" "$ROOT/usr/bin/kria"

files=$(cd "$ROOT" && find . -type f -printf '%m %P\n' | sort)
want="600 etc/kria/kria.conf
644 usr/lib/systemd/system/kria.service
644 usr/share/doc/kria/kria.conf.example
644 usr/share/man/man1/kria.1
755 usr/bin/kria"
is "$files" "$want" "the installed files and their modes"
check "kria.conf.example is config/kria.conf" cmp -s "$KRIA_TOP/config/kria.conf" "$ROOT/usr/share/doc/kria/kria.conf.example"
check "/etc/kria/kria.conf is config/kria.conf" cmp -s "$KRIA_TOP/config/kria.conf" "$ROOT/etc/kria/kria.conf"
is "$("$ROOT/usr/bin/kria" version)" "$("$KRIA" version)" "the installed kria runs"

UNIT=$ROOT/usr/lib/systemd/system/kria.service
exec_line=$(sed -n 's/^ExecStart=//p' "$UNIT")
like "$exec_line" '^/usr/bin/kria crawl -c %d/kria\.conf ' "the unit runs the installed /usr/bin/kria with its credential"
check "the unit loads /etc/kria/kria.conf as a credential" grep -qx 'LoadCredential=kria.conf:/etc/kria/kria.conf' "$UNIT"
unlike "$(grep -v '^#' "$UNIT")" '/usr/local' "no /usr/local path is left in the unit (PREFIX=/usr)"
check "the man page names the installed example configuration" \
  grep -qx '\.I /usr/share/doc/kria/kria\.conf\.example' "$ROOT/usr/share/man/man1/kria.1"
unlike "$(grep -v '^\.\\"' "$ROOT/usr/share/man/man1/kria.1")" '/usr/local' "no /usr/local path is left in the man page"
if command -v man >/dev/null; then
  like "$(MANPATH=$ROOT/usr/share/man MANWIDTH=80 man kria 2>/dev/null | head -5)" 'kria - adaptive-revisit web crawler' \
    "man kria finds the installed page"
else
  skip "man not installed" "man kria finds the installed page"
fi

# An existing configuration is never overwritten.
echo "# mine" >>"$ROOT/etc/kria/kria.conf"
mk install >"$T/install2.out" 2>&1
is "$?" 0 "make install again: exit 0"
is "$(tail -1 "$ROOT/etc/kria/kria.conf")" "# mine" "... keeps the existing /etc/kria/kria.conf"
like "$(cat "$T/install2.out")" 'keeping .*/etc/kria/kria\.conf' "... and says so"

# ---- systemd-analyze verify ------------------------------------------------
# verify wants ExecStart's binary at its path: the copy points into $ROOT.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$T/verify"
  sed -e "s|^ExecStart=/usr/bin/kria|ExecStart=$ROOT/usr/bin/kria|" \
    -e "s|:/etc/kria/|:$ROOT/etc/kria/|" "$UNIT" >"$T/verify/kria.service"
  systemd-analyze verify "$T/verify/kria.service" >"$T/verify.out" 2>&1
  is "$?" 0 "systemd-analyze verify of the installed unit: exit 0"
  is "$(cat "$T/verify.out")" "" "... no warning"
  sed "s|^ExecStart=[^ ]*|ExecStart=$ROOT/usr/bin/nokria|" "$T/verify/kria.service" >"$T/verify/nokria.service"
  systemd-analyze verify "$T/verify/nokria.service" >"$T/verify-bad.out" 2>&1
  like "$(cat "$T/verify-bad.out")" 'nokria' "verify does complain about a missing binary (the check can fail)"
else
  skip "systemd-analyze not installed" "systemd-analyze verify of the installed unit"
fi

# ---- the service's view: a dynamic uid, a credential, a state directory ----
run_as_service() {
  if [ "$(id -u)" != 0 ]; then
    skip "not root: cannot switch to another uid" "the installed service runs as an unprivileged uid"
    return
  fi
  command -v setpriv >/dev/null || { skip "setpriv not installed" "the installed service runs as an unprivileged uid"; return; }
  [ -x "$KTS" ] || bail "kts not built: $KTS"
  # A uid and gid nobody has, from the range DynamicUser= allocates from.
  local uid
  for uid in $(seq $((61184 + $$ % 4000)) 65519); do
    getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null || break
  done
  local as=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs)
  chmod 0711 "$T" # others may pass through, as through /var/lib and /run
  if ! "${as[@]}" test -x "$ROOT/usr/bin/kria"; then
    skip "uid $uid cannot reach $T (a private TMPDIR?)" "the installed service runs as an unprivileged uid"
    return
  fi

  cat >"$T/routes.ini" <<'EOF'
[route "/robots.txt"]
content-type = text/plain
body = User-agent: *\nAllow: /\n

[route "/"]
body = <html><body><a href="/p/0">start</a></body></html>

[site]
pages = 20
links = 3
body-size = 2K
EOF
  kts_start "$T/routes.ini" || bail "kts did not start"

  # What an administrator writes: kria.conf stays root's 0600 (it may hold
  # the status token); the seeds file is 0644 for the crawl to read.
  echo "$KTS_URL/" >"$ROOT/etc/kria/seeds.txt"
  chmod 0644 "$ROOT/etc/kria/seeds.txt"
  cat >"$ROOT/etc/kria/kria.conf" <<EOF
[crawl]
seeds = $ROOT/etc/kria/seeds.txt
revisit = false
progress-interval = 0
[http]
allow-private-addresses = true
[politeness]
min-delay = 0
max-delay = 0
delay-factor = 0
[limits]
max-time = 60s
[warc]
prefix = fromcredential
[status]
token = a-secret-token-0123456789
EOF
  is "$(stat -c '%a %u' "$ROOT/etc/kria/kria.conf")" "600 0" "/etc/kria/kria.conf: root's, 0600"

  # What systemd sets up before ExecStart (StateDirectory=kria with
  # StateDirectoryMode=0700, LoadCredential=kria.conf:...).
  local state=$T/var/lib/kria cred=$T/run/credentials/kria.service
  mkdir -p "$T/var/lib" "$T/run/credentials"
  chmod 0755 "$T/var" "$T/var/lib" "$T/run" "$T/run/credentials"
  install -d -m 0700 -o "$uid" -g "$uid" "$state"
  install -d -m 0500 -o "$uid" -g "$uid" "$cred"
  install -m 0400 -o "$uid" -g "$uid" "$ROOT/etc/kria/kria.conf" "$cred/kria.conf"

  # Without the credential the configuration is out of reach.
  (cd "$state" && "${as[@]}" "$ROOT/usr/bin/kria" crawl -c "$ROOT/etc/kria/kria.conf" \
    -o crawl.state-dir="$state" >"$T/direct.out" 2>&1)
  is "$?" 2 "uid $uid cannot use /etc/kria/kria.conf itself (exit 2)"
  like "$(cat "$T/direct.out")" 'kria\.conf.*(Permission denied|EACCES|permission)' "... for want of permission"

  # The unit's ExecStart, as systemd expands it.
  local line=${exec_line//%d/$cred}
  line=${line//"\${STATE_DIRECTORY}"/$state}
  line=${line/#\/usr\/bin\/kria/$ROOT/usr/bin/kria}
  local argv
  read -r -a argv <<<"$line"
  (cd "$state" && umask 0077 && STATE_DIRECTORY=$state CREDENTIALS_DIRECTORY=$cred \
    timeout 120 "${as[@]}" "${argv[@]}" >"$T/svc.out" 2>&1)
  local rc=$?
  is "$rc" 0 "as uid $uid with the unit's ExecStart: the crawl ends (exit 0)"
  [ "$rc" = 0 ] || diag "$(tail -20 "$T/svc.out")"

  is "$(stat -c '%u %a' "$state/kria.db" 2>&1)" "$uid 600" "the state database is the uid's, 0600"
  check "crawl.log is written" test -s "$state/logs/crawl.log"
  is "$(stat -c %u "$state/logs/crawl.log" 2>&1)" "$uid" "crawl.log is the uid's"
  local n
  n=$(grep -c " $KTS_URL/p/" "$state/logs/crawl.log" 2>/dev/null)
  check "crawl.log has the site's pages ($n)" test "${n:-0}" -ge 20
  local warcs=("$state"/warcs/fromcredential-*.warc.gz)
  check "WARC files in the state directory, named by the credential's warc.prefix" test -s "${warcs[0]}"
  is "$(stat -c %u "${warcs[0]}" 2>&1)" "$uid" "the WARC file is the uid's"
  n=$("$KRIA" cdx "${warcs[@]}" 2>/dev/null | grep -c '"status": "200"')
  check "the WARCs hold the site's responses ($n)" test "${n:-0}" -ge 20

  kts_stop "$KTS_PID"
  # The crawl's files are the uid's: hand them back before $T goes.
  chown -R 0:0 "$T/var" "$T/run"
}
run_as_service

# ---- uninstall ---------------------------------------------------------------
mk uninstall >"$T/uninstall.out" 2>&1
is "$?" 0 "make uninstall: exit 0"
like "$(cat "$T/uninstall.out")" 'keeping .*/etc/kria/kria\.conf \(edited\)' "it keeps the edited kria.conf, and says so"
left=$(cd "$ROOT" && find . -type f -printf '%P\n' | sort | tr '\n' ' ')
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  is "$left" "etc/kria/kria.conf etc/kria/seeds.txt " "nothing install put there is left but the edited configuration (and the seeds)"
else
  is "$left" "etc/kria/kria.conf " "nothing install put there is left but the edited configuration"
fi
rm -f "$ROOT/etc/kria/kria.conf" "$ROOT/etc/kria/seeds.txt"

# Install and uninstall on a clean tree leave no file and no kria directory.
mk install >"$T/install3.out" 2>&1
is "$?" 0 "make install on a clean tree: exit 0"
mk uninstall >"$T/uninstall3.out" 2>&1
is "$?" 0 "make uninstall: exit 0"
is "$(cd "$ROOT" && find . -type f | wc -l)" 0 "make uninstall leaves no file (the unedited kria.conf goes too)"
is "$(cd "$ROOT" && find . -type d -name kria | sort | tr '\n' ' ')" "" "... and no kria directory"
done_testing
