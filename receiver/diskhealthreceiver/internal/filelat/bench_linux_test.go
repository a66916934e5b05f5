//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The programs run on every system call of the machine, so their cost is what a syscall costs more
// with the probe attached: a syscall that is no file operation (getppid: one array lookup on entry,
// one task-storage lookup on exit) and a cached 4 KiB pread (the file lookup, two clock reads, the
// histogram update). Compare the probe=off and probe=on lines of one run.
func BenchmarkSyscallOverhead(b *testing.B) {
	requireRoot(b)
	path := filepath.Join(b.TempDir(), "f")
	require.NoError(b, os.WriteFile(path, make([]byte, 4096), 0o600))
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	buf := make([]byte, 4096)
	calls := []struct {
		name string
		call func()
	}{
		{"getppid", func() { unix.Getppid() }},
		{"pread4k", func() { _, _ = unix.Pread(int(f.Fd()), buf, 0) }},
	}
	for _, c := range calls {
		for _, on := range []bool{false, true} {
			name := c.name + "/probe=off"
			if on {
				name = c.name + "/probe=on"
			}
			b.Run(name, func(b *testing.B) {
				if on {
					p, err := Open(Options{})
					require.NoError(b, err)
					defer p.Close()
				}
				for b.Loop() {
					c.call()
				}
			})
		}
	}
}
