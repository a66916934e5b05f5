package device

import (
	"testing"

	"go.uber.org/goleak"
)

// Reads run in goroutines; every one must have ended when the tests do.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
