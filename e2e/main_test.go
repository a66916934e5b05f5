package e2e

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests run child processes whose output is copied by goroutines; every one must be gone at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
