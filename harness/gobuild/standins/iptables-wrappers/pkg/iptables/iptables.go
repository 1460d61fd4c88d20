// Package iptables is a stand-in written for the pod-lifecycle probe suite, NOT the package of
// sigs.k8s.io/iptables-wrappers (whose source the Go module proxy refuses at every version).
//
// It declares only the names Kubernetes' kubelet uses at v1.38.0-beta.0 (pkg/kubelet/kubelet_network_linux.go,
// initNetworkUtil and syncIPTablesRules), and NewBestEffort finds no iptables: the kubelet then logs
// "No iptables support on this system; not creating the KUBE-IPTABLES-HINT chain" and goes on, the path it
// takes on a host without iptables. No method of Interface is ever called through it. Components that need
// iptables for real (kube-proxy) must not be built with it.
package iptables

import (
	"context"
	"time"
)

// Table is an iptables table (filter, nat, mangle).
type Table string

// Chain is an iptables chain.
type Chain string

// RulePosition says where EnsureRule puts a rule.
type RulePosition string

// Protocol is the IP family of a client.
type Protocol string

// Mode says how NewBestEffort chooses between iptables-legacy and iptables-nft.
type Mode string

const (
	TableFilter Table = "filter"
	TableNAT    Table = "nat"
	TableMangle Table = "mangle"

	ChainInput  Chain = "INPUT"
	ChainOutput Chain = "OUTPUT"

	Prepend RulePosition = "-I"
	Append  RulePosition = "-A"

	ProtocolIPv4 Protocol = "IPv4"
	ProtocolIPv6 Protocol = "IPv6"

	// UseInstalledMode is the mode the kubelet asks for.
	UseInstalledMode Mode = "installed"
)

// Interface is what the kubelet calls on a client; this stand-in never hands one out.
type Interface interface {
	Protocol() Protocol
	IsIPv6() bool
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

// NewBestEffort returns the iptables clients that work on this host, by IP family: none, in this stand-in.
func NewBestEffort(_ context.Context, _ Mode) map[Protocol]Interface {
	return map[Protocol]Interface{}
}
