package testkit

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// InCI says whether the tests run in CI. The one rule: CI unset, empty or a false value as
// strconv.ParseBool reads it ("0", "false", "FALSE" …) is a developer's machine; any other value is CI.
// Services set CI=true, some CI=1, and an unexpected value such as "yes" counts as CI too: a run that
// only might be CI must not let a comparison go missing quietly.
func InCI() bool {
	v := os.Getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// Unavailable ends a test that cannot have what it needs: in CI a failure, since CI must never go green
// with a comparison gone; elsewhere a loud skip, for a developer without root or apt-get.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (in CI a peer that cannot be had fails the test)", msg)
	}
	t.Skipf("SKIPPED: %s", msg)
}

// RequireRoot ends the test through Unavailable unless it runs as root; what says what needs it.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "%s needs root; run `make test` as root (CI does)", what)
	}
}
