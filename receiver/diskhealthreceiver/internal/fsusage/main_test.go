package fsusage

import (
	"testing"

	"go.uber.org/goleak"
)

// The prober starts goroutines; every test must leave none behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
