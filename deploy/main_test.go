package deploy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestImageLayoutRuns waits for its child in a goroutine; none may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
