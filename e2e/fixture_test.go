package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// dsLine is one /proc/diskstats line of a fixture.
type dsLine struct {
	Major, Minor uint32
	Name         string
	// C holds the counters after the name in kernel order: 11 (kernel < 4.18), 15 (4.18+, discard)
	// or 17 (5.5+, flush) values; index them with the f* constants.
	C []uint64
}

// Indexes into dsLine.C (Documentation/admin-guide/iostats.rst, fields 1–17).
const (
	fRdIOs = iota
	fRdMerges
	fRdSectors
	fRdTicks
	fWrIOs
	fWrMerges
	fWrSectors
	fWrTicks
	fInFlight
	fIOTicks
	fQueueTicks
	fDcIOs
	fDcMerges
	fDcSectors
	fDcTicks
	fFlIOs
	fFlTicks
)

// narrowFields are the fields the kernel prints with %u (32-bit): a fixture value above 2^32−1
// could never appear in a real /proc/diskstats.
var narrowFields = []int{fRdTicks, fWrTicks, fInFlight, fIOTicks, fQueueTicks, fDcTicks, fFlTicks}

func (l *dsLine) hasDiscard() bool { return len(l.C) > fDcTicks }
func (l *dsLine) hasFlush() bool   { return len(l.C) > fFlTicks }

// parseFixtureDiskstats reads a diskstats fixture: kernel-format lines, plus blank lines and
// '#' comments that are not part of what the peers are served.
func parseFixtureDiskstats(data []byte) ([]dsLine, error) {
	var out []dsLine
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 14 && len(f) != 18 && len(f) != 20 {
			return nil, fmt.Errorf("line %d: %d fields, want 14, 18 or 20", n, len(f))
		}
		maj, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: major: %w", n, err)
		}
		minor, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: minor: %w", n, err)
		}
		l := dsLine{Major: uint32(maj), Minor: uint32(minor), Name: f[2], C: make([]uint64, len(f)-3)}
		if seen[l.Name] {
			return nil, fmt.Errorf("line %d: device %s listed twice", n, l.Name)
		}
		seen[l.Name] = true
		for i := range l.C {
			if l.C[i], err = strconv.ParseUint(f[3+i], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d (%s): field %d: %w", n, l.Name, i+1, err)
			}
		}
		for _, i := range narrowFields {
			if i < len(l.C) && l.C[i] > math.MaxUint32 {
				return nil, fmt.Errorf("line %d (%s): field %d = %d does not fit the kernel's 32-bit %%u", n, l.Name, i+1, l.C[i])
			}
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// formatDiskstats prints lines as the kernel does (block/genhd.c: "%4d %7d %s" then the counters).
func formatDiskstats(lines []dsLine) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		fmt.Fprintf(&b, "%4d %7d %s", l.Major, l.Minor, l.Name)
		for _, v := range l.C {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatUint(v, 10))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func loadFixture(t *testing.T, name string) []dsLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "iostat", name))
	require.NoError(t, err)
	lines, err := parseFixtureDiskstats(data)
	require.NoError(t, err, name)
	require.NotEmpty(t, lines, name)
	return lines
}

// formatUptime prints an uptime in hundredths of a second as /proc/uptime does ("%lu.%02lu"); the
// second column (idle time, which iostat ignores) repeats it.
func formatUptime(cs int64) string {
	u := fmt.Sprintf("%d.%02d", cs/100, cs%100)
	return u + " " + u + "\n"
}

// buildReceiverRoot lays out the root_path tree the receiver reads: proc/diskstats, proc/stat and a
// sysfs skeleton in which every device is a whole disk, linked the way the kernel links it
// (/sys/block, /sys/class/block and /sys/dev/block all lead to the device directory).
func buildReceiverRoot(t *testing.T, root string, devs []dsLine, diskstats []byte, boot time.Time) {
	t.Helper()
	r := testkit.RootAt(t, root)
	r.Write("proc/diskstats", string(diskstats))
	r.Write("proc/stat", testkit.ProcStat(boot))
	for i, d := range devs {
		hw := fmt.Sprintf("sys/devices/platform/e2e-disk%d", i)
		r.Disk(testkit.Disk{Name: d.Name, Major: d.Major, Minor: d.Minor, Dir: hw + "/block/" + d.Name, Device: hw,
			Files: map[string]string{"size": "1953525168\n", "removable": "0\n", "ro": "0\n",
				"queue/rotational": "0\n", "queue/logical_block_size": "512\n"},
			DeviceFiles: map[string]string{"model": fmt.Sprintf("E2E Disk %d\n", i), "serial": fmt.Sprintf("E2E%04d\n", i),
				"firmware_rev": "1.0\n"}})
	}
}

// rewriteInPlace replaces a file's content keeping its inode: a bind mount (iostat's side) and a
// reader that keeps the file open between reads (the receiver's side) both see only the old inode.
func rewriteInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// mod32 is the increase of a kernel %u field from prev to cur, modulo 2^32.
func mod32(prev, cur uint64) uint64 {
	return uint64(uint32(cur) - uint32(prev))
}
