package qemu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The NFS test's peer is nfs-utils' mountstats script, the code of nfsiostat (its iostat
// subcommand is nfsiostat over files: -f a mountstats text, -S an earlier one). Debian's nfs-common
// is unpacked, not installed (its daemons stay off the host), into ../../_build/nfs-common, and the
// script runs under the host's python3.

// nfsToolDir is where nfs-common is unpacked.
const nfsToolDir = "../../_build/nfs-common"

// nfsTool runs the mountstats script.
type nfsTool struct{ python, script string }

// mountstatsTool returns the mountstats script of Debian's nfs-common, unpacking the package the
// first time. A lock file keeps two test binaries from unpacking it at once.
func mountstatsTool(t *testing.T) nfsTool {
	t.Helper()
	tool := nfsTool{python: testkit.Tool(t, "python3", "python3")}
	dir, err := filepath.Abs(nfsToolDir)
	if err != nil {
		testkit.Unavailable(t, "%v", err)
	}
	tool.script = filepath.Join(dir, "usr", "sbin", "mountstats")
	if _, err := os.Stat(tool.script); err == nil {
		return tool
	}
	if err := unpackNFSCommon(dir); err != nil {
		testkit.Unavailable(t, "cannot have nfs-common's mountstats script: %v", err)
	}
	return tool
}

// unpackNFSCommon downloads nfs-common and unpacks it into dir, under a lock.
func unpackNFSCommon(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "usr", "sbin", "mountstats")); err == nil {
		return nil // unpacked by another test binary while this one waited
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".nfs-common-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	deb, err := testkit.Debian.Download("nfs-common", tmp)
	if err != nil {
		// The package lists may not know it yet (a fresh container): refresh them once and retry.
		if uerr := testkit.Debian.Update(); uerr != nil {
			return errors.Join(err, uerr)
		}
		if deb, err = testkit.Debian.Download("nfs-common", tmp); err != nil {
			return err
		}
	}
	root := filepath.Join(tmp, "root")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x %s: %w\n%s", deb, err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "usr", "sbin", "mountstats")); err != nil {
		return fmt.Errorf("nfs-common has no mountstats script: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(root, dir)
}

// run runs the script with args and returns its output.
func (n nfsTool) run(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, n.python, append([]string{n.script}, args...)...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("mountstats %s: %v\n%s%s", strings.Join(args, " "), err, out, ee.Stderr)
	}
	if err != nil {
		t.Fatalf("mountstats %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// nfsToolOp is one operation of the script's per-operation report (mountstats mountstats): how many,
// and their mean backlog wait (queue), round trip and execute time, in ms.
type nfsToolOp struct {
	ops             uint64
	queue, rtt, exe float64
}

// nfsToolReport is the script's report of one mount (mountstats mountstats, the whole report or
// --rpc): its operations and, in the whole report, the bytes of the NFS READs and WRITEs.
type nfsToolReport struct {
	ops                   map[string]nfsToolOp
	readBytes, writeBytes uint64
	bytes                 bool // the report has the byte counts
}

// parseMountstatsReport reads the script's report of one mount. Each operation it lists is a line
// "NAME:", a line "\tN ops (P%) …", a line of mean bytes and a line "\tbacklog wait: Q \tRTT: R
// \ttotal execute time: E (milliseconds)"; the bytes are the lines "client read N bytes via NFS READ"
// and "client wrote N bytes via NFS WRITE".
func parseMountstatsReport(out []byte) (*nfsToolReport, error) {
	r := &nfsToolReport{ops: map[string]nfsToolOp{}}
	var op string // the operation whose lines come, until its times
	var cur nfsToolOp
	var haveOps bool
	var read, wrote bool
	for i, line := range strings.Split(string(out), "\n") {
		s := strings.TrimSpace(line)
		f := strings.Fields(s)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, a...))
		}
		switch {
		case len(f) == 7 && f[0] == "client" && f[3] == "bytes" && f[5] == "NFS" &&
			((f[1] == "read" && f[6] == "READ") || (f[1] == "wrote" && f[6] == "WRITE")):
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return nil, bad("%v", err)
			}
			dup := &read
			if f[1] == "read" {
				r.readBytes = n
			} else {
				r.writeBytes, dup = n, &wrote
			}
			if *dup {
				return nil, bad("a second byte count")
			}
			*dup = true
		case len(f) == 1 && isOpName(strings.TrimSuffix(s, ":")) && strings.HasSuffix(s, ":"):
			if op != "" {
				return nil, bad("operation %s has no times", op)
			}
			op, cur, haveOps = strings.TrimSuffix(s, ":"), nfsToolOp{}, false
			if _, dup := r.ops[op]; dup {
				return nil, bad("operation %s twice", op)
			}
		case len(f) >= 2 && f[1] == "ops":
			if op == "" || haveOps {
				return nil, bad("operations outside an operation's lines")
			}
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return nil, bad("%v", err)
			}
			cur.ops, haveOps = n, true
		case strings.HasPrefix(s, "backlog wait:"):
			if op == "" || !haveOps {
				return nil, bad("times outside an operation's lines")
			}
			var err error
			cur.queue, cur.rtt, cur.exe, err = parseOpTimes(s)
			if err != nil {
				return nil, bad("%v", err)
			}
			r.ops[op], op = cur, ""
		}
	}
	if op != "" {
		return nil, fmt.Errorf("operation %s has no times: the report is cut short", op)
	}
	if read != wrote {
		return nil, errors.New("one byte count of two")
	}
	r.bytes = read
	return r, nil
}

// isOpName: mountstats names operations in capitals, digits and underscores (READ, SEQUENCE, FS_LOCATIONS).
func isOpName(s string) bool {
	return s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == "" && s[0] >= 'A' && s[0] <= 'Z'
}

// parseOpTimes reads "backlog wait: Q \tRTT: R \ttotal execute time: E (milliseconds)".
func parseOpTimes(s string) (queue, rtt, exe float64, err error) {
	f := strings.Fields(s)
	if len(f) != 10 || f[0] != "backlog" || f[1] != "wait:" || f[3] != "RTT:" || f[5] != "total" || f[6] != "execute" ||
		f[7] != "time:" || f[9] != "(milliseconds)" {
		return 0, 0, 0, errors.New("not the times line")
	}
	v := [3]float64{}
	for i, at := range []int{2, 4, 8} {
		if v[i], err = strconv.ParseFloat(f[at], 64); err != nil || !validMs(v[i]) {
			return 0, 0, 0, fmt.Errorf("time %q", f[at])
		}
	}
	return v[0], v[1], v[2], nil
}

// validMs: the script prints times as non-negative decimals.
func validMs(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }

// nfsIostatLine is one of nfsiostat's per-class lines (read, write) of one mount: the means in ms.
type nfsIostatLine struct {
	rtt, exe, queue float64
}

// nfsIostatHeader are the columns of nfsiostat's read and write lines (nfs-utils 2.x) before the
// optional errors.
var nfsIostatHeader = []string{"ops/s", "kB/s", "kB/op", "retrans", "avg", "RTT", "(ms)", "avg", "exe", "(ms)", "avg", "queue", "(ms)"}

// parseIostatReport reads nfsiostat's report of one mount (mountstats iostat): its "read:" and
// "write:" header lines, each followed by the values: ops/s, kB/s, kB/op, "N (P%)" retransmissions,
// avg RTT, avg exe, avg queue (ms), and with newer kernels "N (P%)" errors.
func parseIostatReport(out []byte) (map[string]nfsIostatLine, error) {
	r := map[string]nfsIostatLine{}
	lines := strings.Split(string(out), "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) == 0 || (f[0] != "read:" && f[0] != "write:") {
			continue
		}
		class := strings.TrimSuffix(f[0], ":")
		if _, dup := r[class]; dup {
			return nil, fmt.Errorf("line %d: %s twice", i+1, class)
		}
		cols := f[1:]
		if len(cols) != len(nfsIostatHeader) && len(cols) != len(nfsIostatHeader)+1 {
			return nil, fmt.Errorf("line %d %q: not nfsiostat's columns", i+1, lines[i])
		}
		for j, w := range nfsIostatHeader {
			if cols[j] != w {
				return nil, fmt.Errorf("line %d %q: column %q where %q", i+1, lines[i], cols[j], w)
			}
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("line %d: %s has no values", i+1, class)
		}
		i++
		v := strings.Fields(lines[i])
		want := 8 + 2*(len(cols)-len(nfsIostatHeader))
		if len(v) != want {
			return nil, fmt.Errorf("line %d %q: %d values, want %d", i+1, lines[i], len(v), want)
		}
		var l nfsIostatLine
		for j, p := range []*float64{&l.rtt, &l.exe, &l.queue} {
			x, err := strconv.ParseFloat(v[5+j], 64)
			if err != nil || !validMs(x) {
				return nil, fmt.Errorf("line %d %q: time %q", i+1, lines[i], v[5+j])
			}
			*p = x
		}
		r[class] = l
	}
	if len(r) != 2 {
		return nil, fmt.Errorf("%d of nfsiostat's read and write lines", len(r))
	}
	return r, nil
}
