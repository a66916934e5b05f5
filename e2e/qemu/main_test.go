package qemu

import (
	"testing"

	"go.uber.org/goleak"
)

// The guests run as child processes whose output is copied by goroutines; every one must be gone at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
