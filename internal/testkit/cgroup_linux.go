//go:build linux

package testkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ChildCgroup creates a child cgroup of dir (a cgroup directory: a v1 controller's hierarchy or the
// v2 one) for the test and removes it after, unless the test did (its processes have exited by then:
// the test waits for them). The per-cgroup probes' tests (biolat's, filelat's) run their readers in it.
func ChildCgroup(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("diskhealth-test-%d-%s", os.Getpid(), name))
	require.NoError(t, os.Mkdir(path, 0o755))
	t.Cleanup(func() {
		if err := RemoveCgroup(path); err != nil {
			t.Error(err)
		}
	})
	return path
}

// RemoveCgroup removes the empty cgroup path, if it is still there. rmdir fails with EBUSY for a moment
// after the last process exits, so it tries again for up to 5 s.
func RemoveCgroup(path string) error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = os.Remove(path); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	return fmt.Errorf("remove cgroup %s: %w", path, err)
}

// CgroupCommand is the command that runs argv in cgroup dir: the shell joins it, then execs argv, so
// the process is argv's.
func CgroupCommand(dir string, argv ...string) *exec.Cmd {
	args := append([]string{"-c", `echo $$ > "$0/cgroup.procs" && shift && exec "$@"`, dir, "_"}, argv...)
	return exec.Command("sh", args...)
}
