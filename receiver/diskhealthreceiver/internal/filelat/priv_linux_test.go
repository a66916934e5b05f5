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
// the refusal as "prealloc maps not supported"). Open classifies each as biolat does its own: the
// sentence names what is missing and how to grant it.
func TestOpenWithoutBothCapabilities(t *testing.T) {
	for _, c := range []struct {
		caps    []string
		missing string
	}{{[]string{"bpf"}, "CAP_PERFMON"}, {[]string{"perfmon"}, "CAP_BPF"}, {nil, "CAP_BPF, CAP_PERFMON"}} {
		require.Equal(t, "missing_capabilities: loading the file latency BPF program was refused because the collector lacks "+
			c.missing+": grant it", strings.SplitN(openAs(t, c.caps...), " (", 2)[0], c.caps)
	}
}
