//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

func openAs(t *testing.T, caps ...string) string {
	t.Helper()
	out := strings.TrimSpace(string(testkit.RunTestBinaryAsNobody(t, childEnv, caps...)))
	t.Logf("as nobody with %v: %s", caps, out)
	return out
}

// CAP_BPF + CAP_PERFMON is all it takes, as for block latency: no root, no CAP_SYS_ADMIN, no tracefs.
func TestOpenAsNobodyWithBPFAndPerfmon(t *testing.T) {
	require.Equal(t, "attached", openAs(t, "bpf", "perfmon"))
}

// Without CAP_PERFMON the tracing programs are refused (whichever loads first); without CAP_BPF already
// the maps (whichever is created first, .rodata included; for the task storage map cilium/ebpf words
// the refusal as "prealloc maps not supported", one reason the receiver must classify these errors
// itself, as biolat's classify does).
func TestOpenWithoutBothCapabilities(t *testing.T) {
	require.Regexp(t, `^filelat: load: program \w+: load program: operation not permitted`, openAs(t, "bpf"))
	for _, caps := range [][]string{{"perfmon"}, nil} {
		require.Regexp(t, `^filelat: load: map [.\w]+: map create: `, openAs(t, caps...))
	}
}
