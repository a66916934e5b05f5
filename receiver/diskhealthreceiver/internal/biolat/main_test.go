package biolat

import (
	"testing"

	"go.uber.org/goleak"
)

// The privilege tests re-run this binary under setpriv; childMain serves that run. Everything else
// must leave no goroutine behind.
func TestMain(m *testing.M) {
	childMain()
	goleak.VerifyTestMain(m)
}
