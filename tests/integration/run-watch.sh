#!/usr/bin/env bash
# syncd run with watches, fight detection and SIGHUP reloads, against
# kube-emu (TLS, token) and a file:// repository made here.
#
# - With resync and poll intervals of an hour, a kubectl-edit change of a
#   managed image is healed through the watch alone: no LIST reaches the
#   server, and the echo of syncd's own write causes no second write.
# - A loop patching the image back as `kubectl-patch` (respect), and one
#   scaling a Deployment as kube-controller-manager under
#   `foreignFields: override`: both become fights (logged with both
#   managers and the field), syncd stops writing those fields while the
#   rest of the object is still healed, and once the fighters stop, the
#   window passes and syncd writes the fields again.
# - SIGHUP: a broken file keeps the running configuration (one line naming
#   FILE:LINE) and healing goes on; an added app starts; a removed app
#   stops and leaves its objects; a changed app starts over with its new
#   settings; changed global settings restart the controller.
# Loopback only; every wait is bounded; everything is killed on exit.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

. "$(dirname "${BASH_SOURCE[0]}")/../helpers/emu.sh"

need_tools "run-watch checks" curl jq git

emu_start_tls


# --- the repository: four apps ------------------------------------------
repo="$tmp/repo"
mkdir -p "$repo/apps/a" "$repo/apps/b" "$repo/apps/c" "$repo/apps/d"
deploy() { # NAME IMAGE REPLICAS
	cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: $3
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
        - name: $1
          image: $2
EOF
}
configmap() { # NAME VALUE
	cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1
data:
  colour: $2
EOF
}
deploy web nginx:1.0 1 >"$repo/apps/a/deploy.yaml"
configmap settings blue >"$repo/apps/b/cm.yaml"
deploy scaled nginx:1.0 2 >"$repo/apps/c/deploy.yaml"
configmap extra green >"$repo/apps/d/cm.yaml"
git -C "$repo" -c user.name=t -c user.email=t@example.com \
	-c commit.gpgsign=false init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=t -c user.email=t@example.com \
	-c commit.gpgsign=false commit -qm one

# config RESYNC WINDOW [APPS...]: the configuration with those apps (a, b,
# c, d; c takes foreign fields under override). The fight window is 10 s:
# the checks made while a fight holds (no write for 2.5 s, the rest of
# the object healed, the report read) must all fit in it, also when the
# passes are slow on a loaded machine (with 4 s they did not, there).
# After it, the fields are written again.
config() {
	local resync=$1 window=$2 app
	shift 2
	cat <<EOF
resync: $resync
listen: 127.0.0.1:0
kubeconfig: $tmp/kc
cacheDir: $tmp/cache
fightDetection:
  changes: 3
  window: $window
apps:
EOF
	for app in "$@"; do
		cat <<EOF
  - name: $app
    source:
      repo: file://$repo
      revision: main
      path: apps/$app
      interval: 1h
    namespace: default
EOF
		[ "$app" = c ] && echo "    foreignFields: override"
		[ "$app" = a-manual ] && echo "    selfHeal: false"
	done
	return 0
}
config 1h 10s a b c | sed 's/name: a-manual/name: a/' >"$tmp/syncd.yaml"

D=/apis/apps/v1/namespaces/default/deployments
CM=/api/v1/namespaces/default/configmaps
field() { # PATH JQ
	api GET "$1"
	printf '%s' "$body" | jq -r "$2"
}
image() { field "$D/web" '.spec.template.spec.containers[0].image'; }
image_is() { [ "$(image)" = "$1" ]; }
replicas_is() { [ "$(field "$D/$1" .spec.replicas)" = "$2" ]; }
colour_is() { [ "$(field "$CM/$1" .data.colour)" = "$2" ]; }
log_has() { grep -q -- "$1" "$tmp/run.err"; }
writes() { grep -c "msg=\"object written\" app=$1 .*$2" "$tmp/run.err"; }

"$SYNCD" run -c "$tmp/syncd.yaml" >"$tmp/run.out" 2>"$tmp/run.err" &
run_pid=$!
pids+=("$run_pid")
if wait_for 30 image_is nginx:1.0 && wait_for 10 colour_is settings blue &&
	wait_for 10 replicas_is scaled 2; then
	ok "three apps converge"
else
	not_ok "three apps converge: $(image); $(head -c 3000 "$tmp/run.err")"
fi
passes_done() { [ "$(grep -c 'msg="pass done"' "$tmp/run.err")" -ge 3 ]; }
wait_for 20 passes_done || true
# Let the watches start and settle.
sleep 1

# --- healing through the watch -------------------------------------------
reset_stats
edit_image() {
	api PATCH "$D/web?fieldManager=kubectl-edit" \
		application/strategic-merge-patch+json \
		'{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:edited"}]}}}}'
}
edit_image
expect_eq "$code" 200 "kubectl edit-style change of the image"
if wait_for 10 image_is nginx:1.0; then
	ok "the manual edit is healed with resync and poll at 1h (the watch)"
else
	not_ok "the manual edit is healed through the watch: $(image)"
fi
expect_eq "$(count list '*')" 0 "the healing pass read the watch cache: no LIST"
expect_eq "$(count patch deployments.apps)" 3 \
	"the edit, then one dry run that confirmed it and one apply that healed it"
reset_stats
sleep 1.5
expect_eq "$(count patch '*') $(count update '*') $(count create '*')" "0 0 0" \
	"the echo of syncd's own write causes no further write"

# --- fights ---------------------------------------------------------------
# The image patched back every 0.2 s by a person's tool, as a script would.
fighter() { # SECONDS PATH CONTENT-TYPE BODY MANAGER
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		curl -sS --max-time 5 --cacert "$tmp/ca.pem" -o /dev/null \
			-X PATCH -H "Authorization: Bearer T" \
			-H "Content-Type: $3" --data-binary "$4" \
			"$url$2?fieldManager=$5" || true
		sleep 0.2
	done
}
fighter 60 "$D/web" application/strategic-merge-patch+json \
	'{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:fight"}]}}}}' \
	kubectl-patch &
f1=$!
pids+=("$f1")
fighter 60 "$D/scaled/scale" application/merge-patch+json \
	'{"spec":{"replicas":5}}' kube-controller-manager &
f2=$!
pids+=("$f2")
fight_a() { log_has 'msg="field fight: .*app=a .*field=".spec.template.spec.containers\[name=\\"web\\"\].image" managers=syncd,kubectl-patch'; }
fight_c() { log_has 'msg="field fight: .*app=c .*field=.spec.replicas managers=syncd,kube-controller-manager'; }
if wait_for 30 fight_a; then
	ok "a loop patching the image back is a fight (logged with both managers)"
else
	not_ok "the image fight is detected: $(grep -c 'app=a' "$tmp/run.err") lines for a"
fi
if wait_for 30 fight_c; then
	ok "a controller scaling back under override is a fight"
else
	not_ok "the replicas fight under override is detected"
fi
sleep 0.5
wa=$(writes a Deployment)
wc=$(writes c Deployment)
sleep 2
expect_eq "$(writes a Deployment) $(writes c Deployment)" "$wa $wc" \
	"syncd stops writing the fought fields"
expect_eq "$(image) $(field "$D/scaled" .spec.replicas)" "nginx:fight 5" \
	"the fighters' values stay"
# The rest of the object is still healed.
api PATCH "$D/web?fieldManager=kubectl-edit" application/merge-patch+json \
	'{"spec":{"replicas":4}}'
if wait_for 10 replicas_is web 1; then
	ok "the rest of a fought object is still healed"
else
	not_ok "the rest of a fought object is still healed: replicas $(field "$D/web" .spec.replicas)"
fi
expect_eq "$(image)" nginx:fight "healing the rest does not write the fought image"
expect_match 'msg="pass done" app=a .*fighting=1' "$(cat "$tmp/run.err")" \
	"the pass line counts the held field"

port=$(sed -n 's/.*msg="serving HTTP".* port=\([0-9]*\).*/\1/p' "$tmp/run.err" | head -1)
report=$(curl -sS --max-time 5 "http://127.0.0.1:$port/api/v1/apps/a")
expect_eq "$(printf '%s' "$report" | jq -r '.report.objects[] | select(.name == "web") | .fields[] | select(.owner == "fighting") | "\(.path) \(.fight.managers | join(",")) \(.fight.changes)"')" \
	'.spec.template.spec.containers[name="web"].image syncd,kubectl-patch 3' \
	"the app's report marks the image fighting, with both managers"
expect_eq "$(printf '%s' "$report" | jq -r '.summary.fightingFields')" 1 \
	"the app's summary counts one fighting field"
api GET /apis/events.k8s.io/v1/namespaces/default/events
expect_eq "$(printf '%s' "$body" | jq -r '[.items[] | select(.reason == "FieldFight" and .type == "Warning") | .regarding.name] | unique | join(",")')" \
	"scaled,web" "a FieldFight Event on each fought object"
expect_match '"reason": *"DriftCorrected"' "$body" \
	"the healed edit left a DriftCorrected Event"

# The fighters stop; after the window syncd writes the fields again.
kill "$f1" "$f2" 2>/dev/null
wait "$f1" "$f2" 2>/dev/null
if wait_for 20 image_is nginx:1.0 && wait_for 10 replicas_is scaled 2; then
	ok "after the window, with the fighters gone, syncd heals the fields again"
else
	not_ok "the fight clears: $(image) $(field "$D/scaled" .spec.replicas)"
fi
expect_match 'msg="field fight over: syncd writes it again" app=a ' \
	"$(cat "$tmp/run.err")" "the end of the fight is logged"

# --- SIGHUP ----------------------------------------------------------------
reloads() { grep -c "$1" "$tmp/run.err"; }
printf 'resync: 1h\napps:\n  - name: a\n    colour: red\n' >"$tmp/syncd.yaml"
before=$(reloads 'reload failed')
kill -HUP "$run_pid"
bad_logged() { [ "$(reloads 'reload failed')" -gt "$before" ]; }
if wait_for 10 bad_logged; then
	ok "SIGHUP with a broken file: the error is logged"
else
	not_ok "SIGHUP with a broken file: the error is logged"
fi
expect_match 'reload failed.*syncd\.yaml:4: ' "$(cat "$tmp/run.err")" \
	"the broken file's problem is named with FILE:LINE"
if kill -0 "$run_pid" 2>/dev/null; then ok "the controller keeps running"; else not_ok "the controller keeps running"; fi
edit_image
if wait_for 10 image_is nginx:1.0; then
	ok "the running configuration still heals"
else
	not_ok "the running configuration still heals: $(image)"
fi

# Add d, remove b, make a report only (selfHeal: false): apps only change.
config 1h 10s a-manual c d | sed 's/name: a-manual/name: a/' >"$tmp/syncd.yaml"
kill -HUP "$run_pid"
reloaded() { log_has 'msg="config reloaded" .*apps="added=1 removed=1 changed=1 unchanged=1"'; }
if wait_for 20 reloaded; then
	ok "SIGHUP: one app added, one removed, one changed, one kept"
else
	not_ok "SIGHUP reload counts: $(grep 'reload' "$tmp/run.err" | tail -3)"
fi
if wait_for 20 colour_is extra green; then
	ok "the added app converges"
else
	not_ok "the added app converges"
fi
api GET "$CM/settings"
expect_eq "$code" 200 "the removed app's objects stay in place"
api PATCH "$CM/settings?fieldManager=kubectl-edit" application/merge-patch+json \
	'{"data":{"colour":"edited"}}'
edit_image
sleep 2
expect_eq "$(field "$CM/settings" .data.colour)" edited \
	"the removed app is no longer healed"
expect_eq "$(image)" nginx:edited "the changed app runs with its new settings (selfHeal: false)"

# A global setting changes: the controller restarts with the new file.
config 2s 10s a c d >"$tmp/syncd.yaml"
kill -HUP "$run_pid"
restarted() { log_has 'msg="config reloaded, controller restarted"'; }
if wait_for 20 restarted; then
	ok "SIGHUP with changed global settings restarts the controller"
else
	not_ok "SIGHUP with changed global settings restarts the controller"
fi
if wait_for 20 image_is nginx:1.0; then
	ok "after the restart app a heals again"
else
	not_ok "after the restart app a heals again: $(image)"
fi

# Resyncs (every 2 s now) read the watch cache: the server is listed at
# an app's first pass and then once per relist (default 1h).
from=$(wc -l <"$tmp/run.err")
reset_stats
resynced() {
	[ "$(tail -n "+$((from + 1))" "$tmp/run.err" |
		grep -c 'msg="pass done" app=d')" -ge 3 ]
}
if wait_for 30 resynced; then
	ok "app d resyncs three times"
else
	not_ok "app d resyncs three times: $(tail -n "+$((from + 1))" "$tmp/run.err" | head -c 2000)"
fi
expect_eq "$(count list '*')" 0 \
	"resyncs with the watch on read the cache: no LIST (relist: 1h)"

term_wait "$run_pid"
expect_rc 0 "SIGTERM: the controller exits 0"
if grep -q 'Bearer\|BEGIN' "$tmp/run.err"; then
	not_ok "no secret in the log"
else
	ok "no secret in the log"
fi
finish
