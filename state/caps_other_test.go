//go:build !linux

package state

import (
	"os"
	"testing"
)

// withoutDACOverride runs fn; as root, where permissions are not enforced,
// it skips the test.
func withoutDACOverride(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("permission tests need a non-root user on this OS")
	}
	fn()
}
