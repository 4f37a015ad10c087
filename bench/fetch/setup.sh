# shellcheck shell=bash
# Shared by bench/fetch/run.sh and profile.sh (source after lib/common.sh and
# lib/nginx.sh): the clients and the site + server + URL list setup.
#
#   fetch_kria_caps         sets KRIA_OK (kria has `fetch --input`),
#                           KRIA_CONNS (it has `--connections`) and
#                           KRIA_DEFAULT_CONNS (its default, when stated)
#   client_cmd NAME         sets CMD (array) for client NAME on $LIST
#   fetch_setup PAGES DIR   site of PAGES pages, nginx, DIR/urls.txt in LIST,
#                           one unmeasured warm-up pass; with FETCH_TLS (rsa,
#                           ecdsa) nginx serves it over HTTPS too, with a CA
#                           made in DIR/tls (TLS_CA), URLs in LIST_HTTPS

fetch_kria_caps() {
	local khelp
	KRIA_OK=0 KRIA_CONNS=0 KRIA_DEFAULT_CONNS=""
	[ -x "$KRIA" ] || return 0
	khelp=$("$KRIA" fetch --help 2>&1 || true)
	if grep -q -- '--input' <<<"$khelp"; then
		KRIA_OK=1
		grep -q -- '--connections' <<<"$khelp" && KRIA_CONNS=1
		# the default, from "--connections N  ... (64)"
		KRIA_DEFAULT_CONNS=$(grep -- '--connections' <<<"$khelp" | grep -o '([0-9]*)' | tr -d '()' | head -1)
	fi
	return 0
}

client_cmd() {
	case $1 in
	# nginx is on loopback: opt in to private addresses (refused by default)
	kria) CMD=("$KRIA" fetch --allow-private --input "$LIST") ;;
	kria-c*) CMD=("$KRIA" fetch --allow-private --input "$LIST" --connections "${1#kria-c}") ;;
	wget) CMD=(wget -q -i "$LIST" -O /dev/null) ;;
	wget2-t1) CMD=(wget2 --max-threads=1 -q -i "$LIST" -O /dev/null) ;;
	wget2) CMD=(wget2 -q -i "$LIST" -O /dev/null) ;;
	# the same over HTTPS (--tls), trusting the run's CA
	kria-https) CMD=("$KRIA" fetch --allow-private --ca-file "${TLS_CA:-}" --input "${LIST_HTTPS:-}") ;;
	kria-https-c*) CMD=("$KRIA" fetch --allow-private --ca-file "${TLS_CA:-}" --input "${LIST_HTTPS:-}" --connections "${1#kria-https-c}") ;;
	wget-https) CMD=(wget -q --ca-certificate="${TLS_CA:-}" -i "${LIST_HTTPS:-}" -O /dev/null) ;;
	wget2-t1-https) CMD=(wget2 --max-threads=1 -q --ca-certificate="${TLS_CA:-}" -i "${LIST_HTTPS:-}" -O /dev/null) ;;
	wget2-https) CMD=(wget2 -q --ca-certificate="${TLS_CA:-}" -i "${LIST_HTTPS:-}" -O /dev/null) ;;
	*) kb_die "unknown client $1 (kria, kria-cN, wget, wget2-t1, wget2; with --tls the same + -https)" ;;
	esac
}

fetch_setup() {
	local pages=$1 dir=$2
	kb_build_tools
	SITE=$KB_OUT/site-p$pages
	kb_log "site: $pages pages in $SITE"
	kb_site "$SITE" -H 1 -p "$pages"
	export KB_NGINX_FILES=$pages
	if [ -n "${FETCH_TLS:-}" ]; then
		kb_tls_certs "$dir/tls" "$FETCH_TLS" 1
		TLS_CA=$dir/tls/ca.pem
		export KB_NGINX_TLS_DIR=$dir/tls
	fi
	kb_nginx_start "$KB_OUT/fetch/nginx" "$SITE/h0.test"
	LIST=$dir/urls.txt
	awk -v base="http://127.0.0.1:$KB_NGINX_PORT" -F'\t' '{ print base $2 }' "$SITE/paths.txt" >"$LIST"
	[ "$(wc -l <"$LIST")" -eq "$pages" ] || kb_die "URL list has the wrong length"
	if [ -n "${FETCH_TLS:-}" ]; then
		LIST_HTTPS=$dir/urls-https.txt
		awk -v base="https://127.0.0.1:$KB_NGINX_TLS_PORT" -F'\t' '{ print base $2 }' "$SITE/paths.txt" >"$LIST_HTTPS"
	fi
	kb_log "warm-up: one unmeasured pass (page cache, nginx open-file cache)"
	wget2 -q -i "$LIST" -O /dev/null || kb_die "warm-up pass failed"
}
