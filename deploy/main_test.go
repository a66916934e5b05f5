package deploy

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine of a test may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
