//go:build tools

// Package tools pins the Kueue manager the rehearsal builds (sigs.k8s.io/kueue/cmd/kueue).
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
