//go:build tools

// Package tools pins the etcd server the rehearsal builds (go.etcd.io/etcd/server/v3, package main).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
