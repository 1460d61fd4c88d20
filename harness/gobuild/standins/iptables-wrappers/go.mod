// A stand-in written for this suite, not sigs.k8s.io/iptables-wrappers: the Go module proxy refuses that module's
// source at every version. It declares only what Kubernetes' kubelet compiles against at v1.38.0-beta.0
// (pkg/kubelet/kubelet_network_linux.go) and finds no iptables on the host. See README.md.
module sigs.k8s.io/iptables-wrappers

go 1.22
