// Test tool only: age and age-keygen, built by tests/k8s/build.sh for
// syncd's tests (keys for the sops tests).
module syncd.test/k8s/age

go 1.26.0

tool (
	filippo.io/age/cmd/age
	filippo.io/age/cmd/age-keygen
)

require (
	filippo.io/age v1.3.2 // indirect
	filippo.io/edwards25519 v1.2.0 // indirect
	filippo.io/hpke v0.4.0 // indirect
	filippo.io/nistec v0.0.4 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
)
