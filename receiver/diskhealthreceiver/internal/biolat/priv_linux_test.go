//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// openAs runs Open in a copy of this test binary as uid/gid 65534 (nobody) with only caps.
func openAs(t *testing.T, caps ...string) childReport {
	t.Helper()
	out := testkit.RunTestBinaryAsNobody(t, childEnv, caps...)
	var r childReport
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	t.Logf("as nobody with %v: %+v", caps, r)
	return r
}

// CAP_BPF + CAP_PERFMON is all it takes: no root, no CAP_SYS_ADMIN, no tracefs.
func TestOpenAsNobodyWithBPFAndPerfmon(t *testing.T) {
	r := openAs(t, "bpf", "perfmon")
	require.Empty(t, r.Message)
	require.Equal(t, "block_io_done", r.Hook)
}

func TestOpenWithoutCapabilities(t *testing.T) {
	r := openAs(t)
	require.Equal(t, CauseMissingCapabilities, r.Cause)
	require.Equal(t, []string{"CAP_BPF", "CAP_PERFMON"}, r.Missing)
	require.Contains(t, r.Message, "lacks CAP_BPF, CAP_PERFMON: grant it")
}

func TestOpenWithBPFOnly(t *testing.T) {
	r := openAs(t, "bpf")
	require.Equal(t, CauseMissingCapabilities, r.Cause)
	require.Equal(t, []string{"CAP_PERFMON"}, r.Missing)
}
