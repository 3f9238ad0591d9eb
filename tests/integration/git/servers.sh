# Real Git servers on 127.0.0.1 for the integration tests and the
# benchmark. Source it after lib.sh (it uses $tmp); every server runs in
# the foreground of a background job, is waited for with a bound, and is
# stopped by gitsrv_stop_all (call it from the EXIT trap).
#
#   gitsrv_env                  nothing from the user's own Git setup: HOME
#                               and XDG_CACHE_HOME in $tmp, no system
#                               config or prompts, no CA variables, a
#                               committer identity, libgit2's own leaks
#                               suppressed under ASan
#   gitsrv_tls_ca DIR           throwaway CA + server certificate for
#                               127.0.0.1/localhost: DIR/ca.pem,
#                               DIR/server.pem (cert + key), DIR/other-ca.pem
#   gitsrv_http_start ROOT USER PASSWORD
#                               lighttpd + git http-backend over TLS with
#                               basic auth, serving the bare repositories
#                               under ROOT at https://127.0.0.1:$http_port/git/
#                               (needs gitsrv_tls_ca "$tmp/tls" first)
#   gitsrv_repo_start NAME      both of the above with user alice, password
#                               s3cret-pass-8c1f, and one bare repository NAME.git
#                               (default branch main) with a work tree
#                               $work; sets $repo_url (https, no
#                               credentials), writes $tmp/password; then
#                               gitsrv_push MESSAGE commits $work, pushes
#                               it (CA of $tmp/tls) and prints the commit
#   gitsrv_http_requests        "TOTAL POSTS": HTTP requests the server has
#                               read so far, and how many were POSTs (a
#                               fetch); a ref listing is a GET
#   gitsrv_ssh_start            sshd on a high port as the current user with a
#                               throwaway ed25519 host key; $ssh_port,
#                               $ssh_user, $tmp/ssh/id_user (the user key,
#                               authorized), $tmp/ssh/known_hosts (the right
#                               host key), $tmp/ssh/host_key.pub
#   gitsrv_ssh_restart_new_host_key
#                               the same sshd address with another host key
#   gitsrv_stop_all
#
# Each start function returns 1 (with the reason in $gitsrv_why) when the
# server cannot be started here, so that callers can skip cleanly.

gitsrv_pids=()
gitsrv_why=

# A TCP port nobody listens on, in the dynamic range.
gitsrv_free_port() {
	local p i
	for i in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# gitsrv_wait_port PORT PID: up to 10 s for PORT to accept connections
# while PID is alive.
gitsrv_wait_port() {
	local i
	for i in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

gitsrv_forget() {
	local keep=() p
	for p in "${gitsrv_pids[@]+"${gitsrv_pids[@]}"}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	gitsrv_pids=("${keep[@]+"${keep[@]}"}")
}

gitsrv_kill() {
	[ -n "${1:-}" ] || return 0
	kill "$1" 2>/dev/null
	local i
	for i in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	gitsrv_forget "$1"
}

gitsrv_stop_all() {
	local p
	for p in "${gitsrv_pids[@]+"${gitsrv_pids[@]}"}"; do
		gitsrv_kill "$p"
	done
	if [ -n "${SSH_AGENT_PID:-}" ]; then
		kill "$SSH_AGENT_PID" 2>/dev/null
		unset SSH_AGENT_PID SSH_AUTH_SOCK
	fi
}

# The address is in the certificate twice: as an IP entry (OpenSSL,
# curl) and as a DNS entry, which is all mbedTLS 2 (libgit2's TLS library
# on Debian 12) compares a host name with.
gitsrv_tls_ca() {
	local d=$1
	mkdir -p "$d"
	cat >"$d/server.ext" <<-EOF
		basicConstraints = CA:FALSE
		keyUsage = digitalSignature, keyEncipherment
		extendedKeyUsage = serverAuth
		subjectAltName = IP:127.0.0.1, DNS:localhost, DNS:127.0.0.1
	EOF
	{
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/CN=syncd test CA" -keyout "$d/ca.key" \
			-out "$d/ca.pem" &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/CN=some other CA" -keyout "$d/other-ca.key" \
			-out "$d/other-ca.pem" &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
			-keyout "$d/server.key" -out "$d/server.csr" &&
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" \
			-CAkey "$d/ca.key" -CAcreateserial -days 2 \
			-extfile "$d/server.ext" -out "$d/server.crt"
	} >"$d/openssl.log" 2>&1 || {
		gitsrv_why="openssl could not make the test CA"
		return 1
	}
	cat "$d/server.crt" "$d/server.key" >"$d/server.pem"
}

gitsrv_http_start() {
	local root=$1 user=$2 password=$3 d="$tmp/http" backend port pid try
	gitsrv_why=
	if ! command -v lighttpd >/dev/null 2>&1; then
		gitsrv_why="lighttpd is not installed (apt-get install lighttpd lighttpd-mod-openssl)"
		return 1
	fi
	backend=$(git --exec-path)/git-http-backend
	if [ ! -x "$backend" ]; then
		gitsrv_why="git http-backend not found at $backend"
		return 1
	fi
	mkdir -p "$d/www"
	# The server's own files (its request log holds the credentials
	# syncd sent) are its input, not syncd's output.
	canary_plant "a Git HTTP password" "$password"
	canary_input "$d"
	# apr1 is one of the hashes lighttpd's htpasswd backend reads.
	printf '%s:%s\n' "$user" "$(printf '%s' "$password" |
		openssl passwd -apr1 -stdin)" >"$d/htpasswd"
	for try in 1 2 3; do
		port=$(gitsrv_free_port) || break
		cat >"$d/lighttpd.conf" <<-EOF
			server.modules = ("mod_auth", "mod_authn_file", "mod_cgi",
			                  "mod_setenv", "mod_alias", "mod_openssl")
			server.bind = "127.0.0.1"
			server.port = $port
			server.document-root = "$d/www"
			server.errorlog = "$d/error.log"
			debug.log-request-header = "enable"
			server.max-request-size = 65536
			ssl.engine = "enable"
			ssl.pemfile = "$d/../tls/server.pem"
			auth.backend = "htpasswd"
			auth.backend.htpasswd.userfile = "$d/htpasswd"
			auth.require = ("/git/" => ("method" => "basic",
			                            "realm" => "git",
			                            "require" => "valid-user"))
			alias.url = ("/git/" => "$backend/")
			\$HTTP["url"] =~ "^/git/" {
			  cgi.assign = ("" => "")
			  setenv.add-environment = ("GIT_PROJECT_ROOT" => "$root",
			                            "GIT_HTTP_EXPORT_ALL" => "1")
			}
		EOF
		if ! lighttpd -tt -f "$d/lighttpd.conf" >"$d/check.log" 2>&1; then
			gitsrv_why="lighttpd rejects the test configuration: $(head -n 3 "$d/check.log" | tr '\n' ' ')"
			return 1
		fi
		lighttpd -D -f "$d/lighttpd.conf" >"$d/out.log" 2>&1 &
		pid=$!
		gitsrv_pids+=("$pid")
		if gitsrv_wait_port "$port" "$pid"; then
			http_port=$port
			http_pid=$pid
			return 0
		fi
		gitsrv_kill "$pid"
	done
	gitsrv_why="lighttpd did not start: $(tail -n 3 "$d/error.log" "$d/out.log" 2>/dev/null | tr '\n' ' ')"
	return 1
}

gitsrv_env() {
	export HOME="$tmp/home" XDG_CACHE_HOME="$tmp/xdg-cache"
	export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
	unset GIT_SSL_CAINFO GIT_SSL_CAPATH
	export GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.com
	export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.com
	mkdir -p "$HOME"
	# Under ASan: leaks inside libgit2 1.5.1 itself are not ours to fix.
	export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top/tests/integration/git/lsan.supp"
}

gitsrv_repo_start() {
	local name=$1
	mkdir -p "$tmp/repos"
	printf 's3cret-pass-8c1f\n' >"$tmp/password"
	canary_input "$tmp/password"
	gitsrv_tls_ca "$tmp/tls" && gitsrv_http_start "$tmp/repos" alice s3cret-pass-8c1f ||
		return 1
	git init -q --bare "$tmp/repos/$name.git" &&
		git -C "$tmp/repos/$name.git" symbolic-ref HEAD refs/heads/main &&
		git init -q -b main "$tmp/work" || {
		gitsrv_why="git init failed"
		return 1
	}
	work=$tmp/work
	gitsrv_repo=$name
	repo_url=https://127.0.0.1:$http_port/git/$name.git
}

gitsrv_push() {
	git -C "$work" add -A &&
		git -C "$work" -c user.name=Tester -c user.email=tester@example.com \
			commit -q -m "$1" &&
		git -C "$work" -c http.sslCAInfo="$tmp/tls/ca.pem" push -q \
			"https://alice:s3cret-pass-8c1f@127.0.0.1:$http_port/git/$gitsrv_repo.git" main &&
		git -C "$work" rev-parse HEAD
}

# lighttpd buffers its access log for seconds; the request headers it
# logs for debugging go to the error log at once, so requests are counted
# there (HTTP/1.x: "rqst: GET /...", HTTP/2: "rqst: :method: GET"). The
# log holds the test's throwaway Authorization header, in $tmp only.
gitsrv_http_requests() {
	awk '/ rqst: (:method: )?(GET|POST|HEAD|PUT|OPTIONS)( |$)/ { n++ }
	     / rqst: (:method: )?POST( |$)/ { p++ }
	     END { print n + 0, p + 0 }' "$tmp/http/error.log"
}

# sshd_config for port $1 and host key $2.
gitsrv_ssh_config() {
	local d="$tmp/ssh"
	cat >"$d/sshd_config" <<-EOF
		Port $1
		ListenAddress 127.0.0.1
		HostKey $2
		PidFile $d/sshd.pid
		AuthorizedKeysFile $d/authorized_keys
		AllowUsers $ssh_user
		UsePAM no
		StrictModes no
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		PermitRootLogin prohibit-password
		AllowAgentForwarding no
		AllowTcpForwarding no
		X11Forwarding no
		PrintMotd no
		LogLevel VERBOSE
	EOF
}

gitsrv_sshd_run() {
	local d="$tmp/ssh" try port pid
	for try in 1 2 3; do
		port=${ssh_port:-$(gitsrv_free_port)} || break
		gitsrv_ssh_config "$port" "$1"
		"$gitsrv_sshd" -D -e -f "$d/sshd_config" >>"$d/sshd.log" 2>&1 &
		pid=$!
		gitsrv_pids+=("$pid")
		if gitsrv_wait_port "$port" "$pid"; then
			ssh_port=$port
			ssh_pid=$pid
			return 0
		fi
		gitsrv_kill "$pid"
		[ -n "${ssh_fixed_port:-}" ] && break
	done
	gitsrv_why="sshd did not start: $(tail -n 3 "$d/sshd.log" | tr '\n' ' ')"
	return 1
}

gitsrv_ssh_start() {
	local d="$tmp/ssh"
	gitsrv_why=
	gitsrv_sshd=$(command -v sshd || echo /usr/sbin/sshd)
	if [ ! -x "$gitsrv_sshd" ]; then
		gitsrv_why="sshd is not installed (apt-get install openssh-server)"
		return 1
	fi
	ssh_user=$(id -un)
	# As root, sshd insists on its privilege separation directory.
	if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then
		mkdir -p /run/sshd && chmod 755 /run/sshd
	fi
	mkdir -p "$d"
	chmod 700 "$d"
	ssh-keygen -q -t ed25519 -N '' -C host -f "$d/host_key" &&
		ssh-keygen -q -t ed25519 -N '' -C other-host -f "$d/other_host_key" &&
		ssh-keygen -q -t ed25519 -N '' -C user -f "$d/id_user" &&
		ssh-keygen -q -t ed25519 -N '' -C agent -f "$d/id_agent" &&
		ssh-keygen -q -t ed25519 -N 'test passphrase' -C enc \
			-f "$d/id_enc" || {
		gitsrv_why="ssh-keygen failed"
		return 1
	}
	cat "$d/id_user.pub" "$d/id_agent.pub" "$d/id_enc.pub" \
		>"$d/authorized_keys"
	ssh_port=
	gitsrv_sshd_run "$d/host_key" || return 1
	printf '[127.0.0.1]:%s %s\n' "$ssh_port" \
		"$(cut -d' ' -f1,2 "$d/host_key.pub")" >"$d/known_hosts"
	printf '[127.0.0.1]:%s %s\n' "$ssh_port" \
		"$(cut -d' ' -f1,2 "$d/other_host_key.pub")" >"$d/known_hosts.other"
	: >"$d/known_hosts.empty"
}

# Same port, the other host key (a "changed" server).
gitsrv_ssh_restart_new_host_key() {
	gitsrv_kill "$ssh_pid"
	ssh_fixed_port=1 gitsrv_sshd_run "$tmp/ssh/other_host_key"
}

gitsrv_ssh_restart_old_host_key() {
	gitsrv_kill "$ssh_pid"
	ssh_fixed_port=1 gitsrv_sshd_run "$tmp/ssh/host_key"
}
