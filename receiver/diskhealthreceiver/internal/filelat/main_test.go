package filelat

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// childEnv makes the test binary open a probe, print "attached" or the error (its cause first), and exit: the privilege
// tests run it as nobody.
const childEnv = "FILELAT_TEST_OPEN_CHILD"

// The privilege tests re-run this binary under setpriv; the child serves that run. Everything else
// must leave no goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		fmt.Println(openChild())
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func openChild() string {
	p, err := Open(Options{})
	if err == nil {
		_, err = p.Collect()
		err = errors.Join(err, p.Close())
	}
	if err != nil {
		return biolat.CauseName(err) + ": " + err.Error()
	}
	return "attached"
}
