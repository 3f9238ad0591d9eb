#!/usr/bin/env bash
# The fault soak of tests/soak/soak.sh for 2 minutes (one round of every
# fault): kube-apiserver and etcd killed and restarted, syncd SIGKILLed
# mid-pass, the Git server killed mid-fetch, the cache's tmpfs full, the
# network cut; each followed by convergence, with no write to objects in
# sync, no deletion of declared objects and no half-written cache file.
# It starts a control plane of its own (it kills the API server), so the
# tier's shared cluster is left alone. `make soak` runs it for longer.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../soak/soak.sh" "${SOAK_TEST_SECONDS:-120}"
