# An OCI registry on loopback for syncd's tests: the CNCF distribution
# registry (build/k8s/bin/registry, tests/k8s/tools/registry) over TLS
# with a throwaway CA and htpasswd basic authentication, and the real
# helm and oras to push charts and artifacts into it. Source it (bash),
# then:
#
#   registry_available     0 when registry, oras and helm are built
#                          (make k8s)
#   registry_start DIR     a registry on 127.0.0.1 (a free port): in DIR
#                          its CA (ca.pem, ca-key.pem), serving
#                          certificate (server.pem, server-key.pem: IP
#                          127.0.0.1 and DNS localhost), htpasswd (user
#                          syncd, a fresh password in DIR/password, bcrypt),
#                          config.yml, storage/, access.log (the requests)
#                          and registry.log (its own log). Waits (30 s)
#                          until /v2/ answers 401; returns non-zero with
#                          one line and the last log lines otherwise,
#                          having stopped it. Started again on the same
#                          DIR (after registry_stop), it keeps the CA,
#                          the password and what was pushed (a new port,
#                          the access log anew)
#   registry_stop          stops it (TERM, then KILL after 5 s); DIR stays
#   registry_requests      every request so far: "COUNT METHOD PATH STATUS"
#                          lines (queries left out), most frequent first
#   registry_count METHOD PATH_REGEX [STATUS]
#                          requests since registry_mark (or the start)
#                          of METHOD ("*" for any) whose path (query
#                          included) matches the extended PATH_REGEX
#                          (anchor it yourself), and STATUS if given:
#                          registry_count HEAD '^/v2/charts/app/manifests/'
#   registry_mark          later counts only look at what came after
#   registry_helm_push CHART_TGZ REPO_PATH
#                          `helm push CHART_TGZ oci://$REGISTRY_HOST/REPO_PATH`
#                          after `helm registry login --password-stdin`
#                          (helm's registry config in DIR); the chart
#                          lands as REPO_PATH/NAME:VERSION. Prints the
#                          manifest's digest (sha256:...)
#   registry_oras_push [OPTION...] REF FILE[:MEDIATYPE]...
#                          `oras push` (password on stdin) of the files
#                          (relative paths: they are the layers' titles)
#                          as REF (REPO:TAG, or HOST/REPO:TAG); OPTIONs
#                          go to oras push (--artifact-type T,
#                          --annotation K=V, ...). Prints the digest
#   registry_digest REPO REFERENCE
#                          HEAD of the manifest with basic auth (curl,
#                          password not on its command line); prints its
#                          Docker-Content-Digest
#   registry_curl ARGS...  curl with the CA and the credentials (not on
#                          curl's command line): registry_curl -I
#                          "https://$REGISTRY_HOST/v2/..."
#
# What registry_start exports: REGISTRY_HOST (127.0.0.1:PORT),
# REGISTRY_URL (https://REGISTRY_HOST), REGISTRY_CA (DIR/ca.pem),
# REGISTRY_USER (syncd), REGISTRY_PASSWORD_FILE (DIR/password, one line),
# REGISTRY_DIR, REGISTRY_ACCESS_LOG, REGISTRY_PID. Binaries:
# $K8S_BIN/registry, oras and helm (default build/k8s/bin of the tree).
# Needs openssl, curl, and perl (bcrypt through libcrypt; else
# `htpasswd -B` of apache2-utils).

K8S_BIN=${K8S_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/k8s/bin}
REGISTRY_PID=
registry_from=1

registry_available() {
	[ -x "$K8S_BIN/registry" ] && [ -x "$K8S_BIN/oras" ] && [ -x "$K8S_BIN/helm" ]
}

# registry_port: a port nobody listens on, below the kernel's ephemeral
# range (so that no outgoing connection holds it meanwhile).
registry_port() {
	local low base=40000 span=20000 p
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	if [ "${low:-0}" -gt 22000 ]; then
		base=$((low - 12000))
		span=12000
	fi
	for _ in $(seq 50); do
		p=$((base + RANDOM % span))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# registry_bcrypt USER < PASSWORD: one htpasswd line, bcrypt (cost 4:
# the registry checks it on every request).
registry_bcrypt() {
	local line
	line=$(perl -e '
		my @c = ("." , "/", "A".."Z", "a".."z", "0".."9");
		open(my $r, "<", "/dev/urandom") or exit 1;
		read($r, my $b, 21) == 21 or exit 1;
		my $salt = join("", map { $c[ord($_) % 64] } split(//, $b));
		$salt .= (".", "O", "e", "u")[ord(substr($b, 0, 1)) % 4];
		chomp(my $pw = <STDIN>);
		my $h = crypt($pw, "\$2b\$04\$" . $salt);
		exit 1 unless defined $h && $h =~ /^\$2b\$04\$.{53}$/;
		print "$ARGV[0]:$h\n";' "$1" 2>/dev/null)
	if [ -z "$line" ] && command -v htpasswd >/dev/null 2>&1; then
		line=$(htpasswd -niB -C 4 "$1" 2>/dev/null)
	fi
	[ -n "$line" ] || return 1
	echo "$line"
}

registry_fail() {
	echo "registry: $1" >&2
	if [ -s "$REGISTRY_DIR/registry.log" ]; then
		echo "registry: last lines of its log:" >&2
		tail -n 15 "$REGISTRY_DIR/registry.log" | sed 's/^/    /' >&2
	fi
	registry_stop
	return 1
}

registry_certs() {
	(
		cd "$REGISTRY_DIR" || exit 1
		set -e
		openssl ecparam -name prime256v1 -genkey -noout -out ca-key.pem 2>/dev/null
		openssl req -x509 -new -key ca-key.pem -days 2 -subj /CN=syncd-registry-ca \
			-out ca.pem 2>/dev/null
		openssl ecparam -name prime256v1 -genkey -noout -out server-key.pem 2>/dev/null
		openssl req -new -key server-key.pem -subj /CN=127.0.0.1 -out server.csr 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem \
			-CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
		rm -f server.csr server.ext ca.srl
		chmod 0600 ca-key.pem server-key.pem
	)
}

registry_start() {
	local attempt
	for attempt in 1 2 3; do
		registry_clash=0
		registry_start_once "$1" && return 0
		[ "$registry_clash" = 1 ] || return 1
	done
	return 1
}

registry_start_once() {
	local t port n code
	REGISTRY_DIR=$(mkdir -p "$1" && cd "$1" && pwd) || return 1
	if ! registry_available; then
		echo "registry: registry, oras or helm is not built in $K8S_BIN (run make k8s)" >&2
		return 1
	fi
	for t in openssl curl perl; do
		if ! command -v "$t" >/dev/null; then
			echo "registry: $t is not installed" >&2
			return 1
		fi
	done
	[ -s "$REGISTRY_DIR/ca.pem" ] || registry_certs ||
		{ echo "registry: openssl could not make the CA and certificate" >&2; return 1; }
	REGISTRY_USER=syncd
	REGISTRY_PASSWORD_FILE=$REGISTRY_DIR/password
	if [ ! -s "$REGISTRY_PASSWORD_FILE" ]; then
		(umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' |
			head -c 24 >"$REGISTRY_PASSWORD_FILE" && echo >>"$REGISTRY_PASSWORD_FILE")
	fi
	if declare -F canary_plant >/dev/null; then
		canary_plant "the registry password" "$(head -n 1 "$REGISTRY_PASSWORD_FILE")"
		# helm's and oras's logins keep it too (registry_tools_env).
		canary_input "$REGISTRY_PASSWORD_FILE" "$REGISTRY_DIR/helm" \
			"$REGISTRY_DIR/docker"
	fi
	if ! registry_bcrypt "$REGISTRY_USER" <"$REGISTRY_PASSWORD_FILE" >"$REGISTRY_DIR/htpasswd"; then
		echo "registry: no bcrypt: neither perl's crypt nor htpasswd (apache2-utils) made a hash" >&2
		return 1
	fi
	port=$(registry_port) || { echo "registry: no free port" >&2; return 1; }
	REGISTRY_HOST=127.0.0.1:$port
	REGISTRY_URL=https://$REGISTRY_HOST
	REGISTRY_CA=$REGISTRY_DIR/ca.pem
	REGISTRY_ACCESS_LOG=$REGISTRY_DIR/access.log
	mkdir -p "$REGISTRY_DIR/storage"
	cat >"$REGISTRY_DIR/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: false
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/storage
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $REGISTRY_HOST
  secret: $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  tls:
    certificate: $REGISTRY_DIR/server.pem
    key: $REGISTRY_DIR/server-key.pem
  draintimeout: 1s
auth:
  htpasswd:
    realm: syncd-test-registry
    path: $REGISTRY_DIR/htpasswd
health:
  storagedriver:
    enabled: false
EOF
	: >"$REGISTRY_ACCESS_LOG"
	registry_from=1
	# OTEL_*: no trace exporter (it would try localhost:4318).
	OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \
		setsid "$K8S_BIN/registry" serve "$REGISTRY_DIR/config.yml" \
		>"$REGISTRY_ACCESS_LOG" 2>"$REGISTRY_DIR/registry.log" </dev/null &
	REGISTRY_PID=$!
	n=300
	while [ "$n" -gt 0 ]; do
		code=$(curl -sS --max-time 2 --cacert "$REGISTRY_CA" -o /dev/null \
			-w '%{http_code}' "$REGISTRY_URL/v2/" 2>/dev/null)
		[ "$code" = 401 ] && break
		if ! kill -0 "$REGISTRY_PID" 2>/dev/null; then
			if grep -q 'address already in use' "$REGISTRY_DIR/registry.log" 2>/dev/null; then
				echo "registry: port $port was taken meanwhile; trying another" >&2
				registry_clash=1
				registry_stop
				return 1
			fi
			registry_fail "exited before /v2/ answered 401"
			return 1
		fi
		sleep 0.1
		n=$((n - 1))
	done
	if [ "$code" != 401 ]; then
		registry_fail "/v2/ did not answer 401 within 30 s (last: ${code:-none})"
		return 1
	fi
	export REGISTRY_HOST REGISTRY_URL REGISTRY_CA REGISTRY_USER \
		REGISTRY_PASSWORD_FILE REGISTRY_DIR REGISTRY_ACCESS_LOG REGISTRY_PID
}

registry_stop() {
	local p=$REGISTRY_PID n=50
	[ -n "$p" ] || return 0
	kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
	while kill -0 "$p" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	REGISTRY_PID=
	return 0
}

# registry_curl ARGS...: curl with the CA and basic auth; the credentials
# go through a config on stdin, so stdin is not the caller's.
registry_curl() {
	printf 'user = "%s:%s"\n' "$REGISTRY_USER" "$(head -n 1 "$REGISTRY_PASSWORD_FILE")" |
		curl -sS --max-time 30 --cacert "$REGISTRY_CA" -K - "$@"
}

# registry_barrier: the access log holds every request answered before
# this call (the registry writes a request's line once it has answered;
# a marker request is made and waited for).
registry_barrier() {
	local marker=barrier-$RANDOM$RANDOM n=50
	curl -sS --max-time 5 --cacert "$REGISTRY_CA" -o /dev/null \
		"$REGISTRY_URL/v2/$marker/tags/list" 2>/dev/null || true
	while [ "$n" -gt 0 ] && ! grep -q "/v2/$marker/" "$REGISTRY_ACCESS_LOG"; do
		sleep 0.1
		n=$((n - 1))
	done
}

# registry_lines: "METHOD PATH STATUS" of each request since the mark
# (combined log format: ... "METHOD PATH PROTO" STATUS SIZE ...), the
# barriers left out.
registry_lines() {
	registry_barrier
	tail -n "+${1:-1}" "$REGISTRY_ACCESS_LOG" |
		sed -n 's/^[^"]*"\([A-Z]*\) \([^ "]*\) [^"]*" \([0-9][0-9][0-9]\) .*/\1 \2 \3/p' |
		grep -v '^GET /v2/barrier-[0-9]*/tags/list ' || :
}

registry_requests() {
	registry_lines 1 | sed 's/?[^ ]* / /' | sort | uniq -c | sort -rn
}

registry_mark() {
	registry_barrier
	registry_from=$(($(wc -l <"$REGISTRY_ACCESS_LOG") + 1))
}

registry_count() {
	registry_lines "$registry_from" |
		awk -v m="$1" -v re="$2" -v s="${3:-}" \
			'(m == "*" || $1 == m) && $2 ~ re && (s == "" || $3 == s) { n++ }
			END { print n + 0 }'
}

# registry_tools_env: a home for helm and oras of their own, in DIR.
registry_tools_env() {
	mkdir -p "$REGISTRY_DIR/helm" "$REGISTRY_DIR/docker"
	echo "HELM_CONFIG_HOME=$REGISTRY_DIR/helm/config"
	echo "HELM_CACHE_HOME=$REGISTRY_DIR/helm/cache"
	echo "HELM_DATA_HOME=$REGISTRY_DIR/helm/data"
	echo "HELM_REGISTRY_CONFIG=$REGISTRY_DIR/helm/registry.json"
	echo "DOCKER_CONFIG=$REGISTRY_DIR/docker"
}

registry_helm_push() {
	local tgz=$1 path=${2#/} out env
	mapfile -t env < <(registry_tools_env)
	if ! out=$(env "${env[@]}" timeout 60 "$K8S_BIN/helm" registry login "$REGISTRY_HOST" \
		--username "$REGISTRY_USER" --password-stdin --ca-file "$REGISTRY_CA" \
		<"$REGISTRY_PASSWORD_FILE" 2>&1); then
		echo "registry: helm registry login failed: $out" >&2
		return 1
	fi
	if ! out=$(env "${env[@]}" timeout 120 "$K8S_BIN/helm" push "$tgz" \
		"oci://$REGISTRY_HOST/$path" --ca-file "$REGISTRY_CA" 2>&1); then
		echo "registry: helm push $tgz failed: $out" >&2
		return 1
	fi
	echo "$out" | sed -n 's/^Digest: \(sha256:[0-9a-f]*\)$/\1/p'
}

registry_oras_push() {
	local opts=() ref out env
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
		opts+=("$1")
		shift
		case ${opts[-1]} in
		--*=*) ;;
		--artifact-type | --annotation | -a | --annotation-file | --config | \
			--export-manifest | --image-spec | --concurrency | -H | --header | \
			--artifact-platform | --resolve)
			opts+=("$1")
			shift
			;;
		esac
	done
	ref=$1
	shift
	[ "${ref#"$REGISTRY_HOST"/}" = "$ref" ] && ref=$REGISTRY_HOST/$ref
	mapfile -t env < <(registry_tools_env)
	if ! out=$(env "${env[@]}" timeout 120 "$K8S_BIN/oras" push \
		--ca-file "$REGISTRY_CA" --registry-config "$REGISTRY_DIR/docker/config.json" \
		--username "$REGISTRY_USER" --password-stdin \
		--format go-template='{{.digest}}' \
		"${opts[@]+"${opts[@]}"}" "$ref" "$@" <"$REGISTRY_PASSWORD_FILE" 2>&1); then
		echo "registry: oras push $ref failed: $out" >&2
		return 1
	fi
	echo "$out" | grep -o 'sha256:[0-9a-f]\{64\}' | tail -n 1
}

registry_digest() {
	local accept='application/vnd.oci.image.manifest.v1+json'
	accept+=',application/vnd.oci.image.index.v1+json'
	accept+=',application/vnd.docker.distribution.manifest.v2+json'
	accept+=',application/vnd.docker.distribution.manifest.list.v2+json'
	registry_curl -I -H "Accept: $accept" "$REGISTRY_URL/v2/$1/manifests/$2" |
		tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: *//p'
}
