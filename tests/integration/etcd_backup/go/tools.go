//go:build tools

// Builds etcdctl and etcdutl of the etcd release the rehearsal runs, for the snapshot and
// restore test (tests/integration/etcd_backup).
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
