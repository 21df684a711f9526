//go:build tools

// Package tools pins the kwok controller the rehearsal builds (sigs.k8s.io/kwok/cmd/kwok).
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
