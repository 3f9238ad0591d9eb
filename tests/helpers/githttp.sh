# Smart HTTP Git server for the soak and the peer benchmark: lighttpd
# running git http-backend as a CGI, plain HTTP on one address.
#
#   githttp_conf DIR ADDR PORT ROOT
#
# writes DIR/lighttpd.conf serving the bare repositories under ROOT at
# http://ADDR:PORT/git/NAME.git (DIR/www its empty document root,
# DIR/error.log its log, with every request's headers). The caller starts
# it: setsid lighttpd -D -f DIR/lighttpd.conf.

githttp_conf() {
	local dir=$1 addr=$2 port=$3 root=$4
	mkdir -p "$dir/www"
	cat >"$dir/lighttpd.conf" <<CONF
server.modules = ("mod_cgi", "mod_setenv", "mod_alias")
server.bind = "$addr"
server.port = $port
server.document-root = "$dir/www"
server.errorlog = "$dir/error.log"
debug.log-request-header = "enable"
alias.url = ("/git/" => "$(git --exec-path)/git-http-backend/")
\$HTTP["url"] =~ "^/git/" {
  cgi.assign = ("" => "")
  setenv.add-environment = ("GIT_PROJECT_ROOT" => "$root",
                            "GIT_HTTP_EXPORT_ALL" => "1")
}
CONF
}
