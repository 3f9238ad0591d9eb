// Test tool only: a mutating admission webhook for syncd's real tier
// (tests/real/verify.sh), built by tests/k8s/build.sh. Standard library
// only.
module syncd.test/k8s/webhook

go 1.26.0

tool syncd.test/k8s/webhook
