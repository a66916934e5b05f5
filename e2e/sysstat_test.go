package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
)

// iostatReport is one report of `iostat -x -o JSON`: device → column (sysstat's JSON key, e.g.
// "r/s", "rrqm" for %rrqm, "util" for %util) → value as printed (two decimals).
type iostatReport map[string]map[string]float64

// parseIostatJSON reads the reports of one `iostat -o JSON` run, in order.
func parseIostatJSON(data []byte) ([]iostatReport, error) {
	var doc struct {
		Sysstat struct {
			Hosts []struct {
				Statistics []struct {
					Disk []map[string]json.RawMessage `json:"disk"`
				} `json:"statistics"`
			} `json:"hosts"`
		} `json:"sysstat"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("iostat JSON: %w", err)
	}
	if n := len(doc.Sysstat.Hosts); n != 1 {
		return nil, fmt.Errorf("iostat JSON: %d hosts, want 1", n)
	}
	var reports []iostatReport
	for i, st := range doc.Sysstat.Hosts[0].Statistics {
		rep := iostatReport{}
		for _, d := range st.Disk {
			var name string
			if err := json.Unmarshal(d["disk_device"], &name); err != nil || name == "" {
				return nil, fmt.Errorf("iostat JSON: report %d: a disk entry without disk_device", i+1)
			}
			if _, dup := rep[name]; dup {
				return nil, fmt.Errorf("iostat JSON: report %d: device %s listed twice", i+1, name)
			}
			cols := make(map[string]float64, len(d))
			for k, raw := range d {
				if k == "disk_device" {
					continue
				}
				var v float64
				if err := json.Unmarshal(raw, &v); err != nil {
					return nil, fmt.Errorf("iostat JSON: report %d: %s %s: %w", i+1, name, k, err)
				}
				cols[k] = v
			}
			rep[name] = cols
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

// iostatRun describes one `iostat -x -p ALL -o JSON <interval> 2` run over fixture files.
type iostatRun struct {
	iostat    string    // path of the iostat binary
	devices   []string  // made whole disks: iostat tells them from partitions by /sys/block/<name>
	diskstats [2][]byte // what /proc/diskstats holds at the first and at the second read
	uptimeCS  [2]int64  // /proc/uptime at the two reads, in hundredths of a second
	timeout   time.Duration
}

// runIostat runs iostat in a private mount namespace where the fixture files are bind-mounted over
// /proc/diskstats, /proc/uptime and /sys/block. Its two reads are paced by the test, not by a clock:
// iostat's stdout is unbuffered, so its first report on it means the first read is done; the files are
// then rewritten (in place: a bind mount pins the inode) and SIGALRM, what iostat's interval timer would
// send, makes it read again. Its interval argument is an hour, which no run reaches, so however late the
// machine runs either process, iostat reads the first files once and the second ones once. It returns
// iostat's reports: the first counts since "boot" (uptimeCS[0]), the second covers the two reads.
func runIostat(t *testing.T, r iostatRun) []iostatReport {
	t.Helper()
	dir := t.TempDir()
	ds, up := filepath.Join(dir, "diskstats"), filepath.Join(dir, "uptime")
	require.NoError(t, os.WriteFile(ds, r.diskstats[0], 0o644))
	require.NoError(t, os.WriteFile(up, []byte(formatUptime(r.uptimeCS[0])), 0o644))
	for _, d := range r.devices {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "sysblock", d), 0o755))
	}
	// unshare and sh exec (no --fork, a final exec): the process started is iostat's, for the signal.
	const script = `set -e
mount --bind "$1/diskstats" /proc/diskstats
mount --bind "$1/uptime" /proc/uptime
mount --bind "$1/sysblock" /sys/block
exec "$2" -x -p ALL -o JSON 3600 2`
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private",
		"sh", "-c", script, "sh", dir, r.iostat)
	// A fixed environment: C locale, no colours, and no POSIXLY_CORRECT (which switches to blocks/s).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "S_COLORS=never"}
	var stdout, stderr e2ekit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The first report ends its "disk" array with the output's first ']' (the header before it only
	// opens arrays): iostat has read snapshot 1 and installed its SIGALRM handler.
	for !strings.Contains(stdout.String(), "]") {
		select {
		case err := <-exited:
			t.Fatalf("iostat exited before its first report (%v); stderr:\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, errors.Join(rewriteInPlace(ds, r.diskstats[1]), rewriteInPlace(up, []byte(formatUptime(r.uptimeCS[1])))))
	// A signal that lands after the report but before iostat's pause() is spent on nothing (pause waits
	// for the next one), so it is sent until iostat exits; once it has read again, more change nothing.
	var err error
	for done := false; !done; {
		if serr := cmd.Process.Signal(syscall.SIGALRM); serr != nil && !errors.Is(serr, os.ErrProcessDone) {
			t.Fatalf("signalling iostat: %v", serr)
		}
		select {
		case err = <-exited:
			done = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.NoError(t, err, "iostat failed; stderr:\n%s", stderr.String())
	reports, err := parseIostatJSON([]byte(stdout.String()))
	require.NoError(t, err, "iostat output:\n%s", stdout.String())
	require.Len(t, reports, 2, "iostat output:\n%s", stdout.String())
	return reports
}

// iostatVersion is `iostat -V`'s first line, for the log.
func iostatVersion(path string) string {
	out, err := exec.Command(path, "-V").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first
}
