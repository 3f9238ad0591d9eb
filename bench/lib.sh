# Shell helpers shared by the benchmarks. Source after setting $out (the
# folder for each command's output) and defining stats NAME (save
# /emu/stats as $out/stats-NAME.json).
#
#   now                    seconds since the epoch, with nanoseconds
#   elapsed T0 T1          T1 - T0 in seconds, three decimals
#   timed NAME EXPECTED-EXITS -- CMD...
#                          run CMD with /emu/stats reset, its stdout and
#                          stderr in $out/NAME.{out,err}; sets $wall,
#                          $rss (peak KiB) and $reqs (API requests);
#                          exits the benchmark when CMD's exit status is
#                          not one of EXPECTED-EXITS (space-separated)
#   bench_manifests DIR PER NAMESPACES REV
#                          writes manifests of 10 kinds (ConfigMap,
#                          Secret, Service, ServiceAccount, Deployment,
#                          Role, RoleBinding, NetworkPolicy, PDB,
#                          Ingress) into DIR, one file per (kind,
#                          namespace bench-J), PER objects each; REV goes
#                          into an annotation, so that another REV
#                          changes every object

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

timed() {
	local name=$1 ok=" $2 " t0 t1 rc=0
	shift 3
	reset_stats
	t0=$(now)
	/usr/bin/time -f %M -o "$out/$name.rss" "$@" \
		>"$out/$name.out" 2>"$out/$name.err" || rc=$?
	t1=$(now)
	stats "$name"
	wall=$(elapsed "$t0" "$t1")
	rss=$(tail -n 1 "$out/$name.rss")
	reqs=$(jq .total "$out/stats-$name.json")
	if [[ $ok != *" $rc "* ]]; then
		echo "$name: exit $rc (expected$ok)" >&2
		head -c 3000 "$out/$name.err" >&2
		exit 1
	fi
}

bench_manifests() {
	mkdir -p "$1"
	awk -v dir="$1" -v per="$2" -v nss="$3" -v rev="$4" '
	function head(f, av, kind, name, ns) {
		if (n[f]++) print "---" > f
		print "apiVersion: " av > f
		print "kind: " kind > f
		print "metadata:" > f
		print "  name: " name > f
		print "  namespace: " ns > f
		print "  labels: {app: " name "}" > f
		print "  annotations: {bench.syncd.io/rev: \"" rev "\"}" > f
	}
	BEGIN {
		split("configmap secret service serviceaccount deployment " \
		      "role rolebinding networkpolicy pdb ingress", kinds, " ")
		for (k = 1; k <= 10; k++)
		for (j = 0; j < nss; j++) {
			ns = "bench-" j
			f = dir "/" kinds[k] "-" ns ".yaml"
			for (i = 0; i < per; i++) {
				nm = kinds[k] "-" i
				a = "obj-" i
				if (k == 1) {
					head(f, "v1", "ConfigMap", nm, ns)
					print "data: {key: value-" i ", mode: bench}" > f
				} else if (k == 2) {
					head(f, "v1", "Secret", nm, ns)
					print "type: Opaque" > f
					print "data: {password: c2VjcmV0LXZhbHVl}" > f
				} else if (k == 3) {
					head(f, "v1", "Service", nm, ns)
					print "spec:" > f
					print "  selector: {app: " a "}" > f
					print "  ports:" > f
					print "  - {name: http, port: 80, targetPort: 8080, protocol: TCP}" > f
				} else if (k == 4) {
					head(f, "v1", "ServiceAccount", nm, ns)
				} else if (k == 5) {
					head(f, "apps/v1", "Deployment", nm, ns)
					print "spec:" > f
					print "  replicas: 2" > f
					print "  selector:" > f
					print "    matchLabels: {app: " a "}" > f
					print "  template:" > f
					print "    metadata:" > f
					print "      labels: {app: " a "}" > f
					print "    spec:" > f
					print "      containers:" > f
					print "      - name: web" > f
					print "        image: registry.example.com/web:1." i > f
					print "        ports:" > f
					print "        - {containerPort: 8080, name: http}" > f
					print "        resources:" > f
					print "          requests: {cpu: 100m, memory: 64Mi}" > f
				} else if (k == 6) {
					head(f, "rbac.authorization.k8s.io/v1", "Role", nm, ns)
					print "rules:" > f
					print "- apiGroups: [\"\"]" > f
					print "  resources: [configmaps, secrets]" > f
					print "  verbs: [get, list, watch]" > f
				} else if (k == 7) {
					head(f, "rbac.authorization.k8s.io/v1", "RoleBinding", nm, ns)
					print "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-" i "}" > f
					print "subjects:" > f
					print "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: \"system:serviceaccounts:" ns "\"}" > f
				} else if (k == 8) {
					head(f, "networking.k8s.io/v1", "NetworkPolicy", nm, ns)
					print "spec:" > f
					print "  podSelector:" > f
					print "    matchLabels: {app: " a "}" > f
					print "  policyTypes: [Ingress]" > f
					print "  ingress:" > f
					print "  - from:" > f
					print "    - podSelector: {}" > f
					print "    ports:" > f
					print "    - {port: 8080, protocol: TCP}" > f
				} else if (k == 9) {
					head(f, "policy/v1", "PodDisruptionBudget", nm, ns)
					print "spec:" > f
					print "  minAvailable: 1" > f
					print "  selector:" > f
					print "    matchLabels: {app: " a "}" > f
				} else {
					head(f, "networking.k8s.io/v1", "Ingress", nm, ns)
					print "spec:" > f
					print "  rules:" > f
					print "  - host: h" i ".example.com" > f
					print "    http:" > f
					print "      paths:" > f
					print "      - path: /" > f
					print "        pathType: Prefix" > f
					print "        backend:" > f
					print "          service:" > f
					print "            name: service-" i > f
					print "            port: {number: 80}" > f
				}
			}
			close(f)
		}
	}'
}

