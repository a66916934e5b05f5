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
// histogram update; with cgroups=on also the caller's cgroup at entry and its own table's update).
// Compare the probe=off, probe=on and probe=on,cgroups=on lines of one run.
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
		for _, mode := range []struct {
			name    string
			on      bool
			cgroups bool
		}{{"probe=off", false, false}, {"probe=on", true, false}, {"probe=on,cgroups=on", true, true}} {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				if mode.on {
					p, err := Open(Options{PerCgroup: mode.cgroups})
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
