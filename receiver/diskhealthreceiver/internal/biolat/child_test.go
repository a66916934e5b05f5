package biolat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// childEnv makes the test binary open a probe, report on stdout and exit (see TestMain).
const childEnv = "BIOLAT_TEST_OPEN_CHILD"

type childReport struct {
	Hook    string
	Series  int
	Cause   Cause
	Missing []string
	Message string
}

func childMain() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	var r childReport
	p, err := Open(Options{})
	if err == nil {
		r.Hook = p.Hook()
		var s Snapshot
		s, err = p.Collect()
		r.Series = len(s.Series)
		p.Close()
	}
	if err != nil {
		r.Message = err.Error()
		var u *UnavailableError
		if errors.As(err, &u) {
			r.Cause, r.Missing = u.Cause, u.Missing
		}
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	os.Exit(0)
}
