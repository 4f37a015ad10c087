# shellcheck shell=bash
# Certificates for HTTPS benchmarks (source after common.sh), made at bench
# time with the openssl command line: nothing secret is kept in the tree,
# and every run trusts only its own CA.
#
#   kb_tls_certs DIR TYPE HOSTS
#       TYPE rsa (RSA-2048) or ecdsa (P-256). Writes DIR/ca.pem (the CA to
#       trust: kria --ca-file or SSL_CERT_FILE, wget2 --ca-certificate),
#       DIR/server.pem and DIR/server.key: a leaf signed by that CA, valid
#       for 127.0.0.1, localhost and h0.test..h<HOSTS-1>.test (OpenSSL does
#       not match "*.test": a wildcard needs two labels after it).
#       Reused when DIR/.stamp says the same TYPE and HOSTS.
#   kb_tls_desc DIR          one line for reports: key type, signature, version

kb__tls_key() { # kb__tls_key TYPE OUT
	case $1 in
	rsa) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$2" 2>/dev/null ;;
	ecdsa) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$2" 2>/dev/null ;;
	*) kb_die "certificate type $1: rsa or ecdsa" ;;
	esac
}

kb_tls_certs() {
	local dir=$1 type=$2 hosts=$3 i san="DNS:localhost,IP:127.0.0.1"
	[ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$type $hosts" ] && return 0
	command -v openssl >/dev/null || kb_die "openssl not found"
	rm -rf "$dir"
	mkdir -p "$dir"
	for ((i = 0; i < hosts; i++)); do san+=",DNS:h$i.test"; done
	kb__tls_key "$type" "$dir/ca.key"
	openssl req -x509 -new -key "$dir/ca.key" -subj "/CN=kria bench CA ($type)" -days 30 \
		-addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign \
		-out "$dir/ca.pem" 2>/dev/null || kb_die "cannot make the CA certificate"
	kb__tls_key "$type" "$dir/server.key"
	openssl req -new -key "$dir/server.key" -subj "/CN=kria bench server" -out "$dir/server.csr" 2>/dev/null ||
		kb_die "cannot make the certificate request"
	printf 'basicConstraints=CA:false\nsubjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$dir/ext.cnf"
	openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
		-days 30 -extfile "$dir/ext.cnf" -out "$dir/server.pem" 2>/dev/null || kb_die "cannot sign the server certificate"
	openssl verify -CAfile "$dir/ca.pem" "$dir/server.pem" >/dev/null || kb_die "the bench certificate does not verify"
	echo "$type $hosts" >"$dir/.stamp"
}

kb_tls_desc() {
	local dir=$1
	openssl x509 -in "$dir/server.pem" -noout -text 2>/dev/null |
		awk -F': *' '/Public Key Algorithm/ { k = $2 } /Public-Key:/ { b = $2 } /Signature Algorithm/ && !s { s = $2 }
			END { printf "%s %s, signed %s", k, b, s }'
}
