package e2e

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"
)

// Unit tests of the filesystem test helpers; they need neither root nor the collector.

func TestParseDf(t *testing.T) {
	// Captured from coreutils 9.1: df -B1 --output=source,fstype,size,used,avail,pcent,itotal,iused,iavail,ipcent,target
	out := "Filesystem     Type  1B-blocks     Used     Avail Use% Inodes IUsed  IFree IUse% Mounted on\n" +
		"/dev/loop0     ext4   57381888    14336  52671488   1%  16384    11  16373    1% /tmp/x/e\n" +
		"e2e-tmpfs      tmpfs  16777216  1056768  15720448   7%   4096     4   4092    1% /tmp/x/t\n" +
		"e2e-hang       fuse.e2ehang 0 0 0    -      0     0      0     - /tmp/x/f\n"
	rows, err := parseDf([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, map[string]dfRow{
		"/tmp/x/e": {source: "/dev/loop0", fstype: "ext4", size: 57381888, used: 14336, avail: 52671488, pcent: 1,
			itotal: 16384, iused: 11, iavail: 16373, ipcent: 1, target: "/tmp/x/e"},
		"/tmp/x/t": {source: "e2e-tmpfs", fstype: "tmpfs", size: 16777216, used: 1056768, avail: 15720448, pcent: 7,
			itotal: 4096, iused: 4, iavail: 4092, ipcent: 1, target: "/tmp/x/t"},
		"/tmp/x/f": {source: "e2e-hang", fstype: "fuse.e2ehang", pcent: -1, ipcent: -1, target: "/tmp/x/f"},
	}, rows)

	const header = "Filesystem Type 1B-blocks Used Avail Use% Inodes IUsed IFree IUse% Mounted on\n"
	for name, bad := range map[string]string{
		"header only":   header,
		"short line":    header + "a ext4 1 2 3 4% 5 6 7 8% \n",
		"bad number":    header + "a ext4 1 x 3 4% 5 6 7 8% /m\n",
		"no percent":    header + "a ext4 1 2 3 4 5 6 7 8% /m\n",
		"over 100":      header + "a ext4 1 2 3 101% 5 6 7 8% /m\n",
		"mount twice":   header + "a ext4 1 2 3 4% 5 6 7 8% /m\nb ext4 1 2 3 4% 5 6 7 8% /m\n",
		"space in path": header + "a ext4 1 2 3 4% 5 6 7 8% /m n\n",
	} {
		_, err := parseDf([]byte(bad))
		assert.Error(t, err, name)
	}
}

func TestPcentAgrees(t *testing.T) {
	tests := []struct {
		pcent int
		ratio float64
		want  bool
	}{
		{0, 0, true},
		{1, 0.00001, true},    // df rounds any use up to 1 %
		{0, 0.00001, false},   // ... so 0 % means nothing used
		{9, 0.0824, true},     // 8.24 % prints as 9 %
		{8, 0.0824, false},    // df never rounds down
		{10, 0.0824, false},   // nor up by more than one
		{26, 0.25828, true},   // the tmpfs of the df test
		{50, 0.5, true},       // exact
		{51, 0.5, false},      // exact is not rounded up
		{100, 1, true},        // full
		{100, 0.990001, true}, // just above 99 %
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, pcentAgrees(tt.pcent, tt.ratio), "pcentAgrees(%d, %v)", tt.pcent, tt.ratio)
	}
}

func TestFilesystems(t *testing.T) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("disk_health.disk.major_minor", "7:0")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	attrs := func(dp pmetric.NumberDataPoint, mode bool) {
		dp.SetTimestamp(pcommon.Timestamp(5e9))
		dp.Attributes().PutStr("system.device", "/dev/loop0")
		dp.Attributes().PutStr("system.filesystem.mountpoint", "/m")
		dp.Attributes().PutStr("system.filesystem.type", "ext4")
		if mode {
			dp.Attributes().PutStr("system.filesystem.mode", "rw")
		}
	}
	status := ms.AppendEmpty()
	status.SetName("disk_health.filesystem.status")
	statusPoints := status.SetEmptySum().DataPoints()
	// The mount is back to ok at this scrape: ok at 1, timeout (left) at 0 once, the others not sent.
	for _, s := range []string{"ok", "timeout"} {
		dp := statusPoints.AppendEmpty()
		attrs(dp, false)
		dp.Attributes().PutStr("status", s)
		if s == "ok" {
			dp.SetIntValue(1)
		} else {
			dp.SetIntValue(0)
		}
	}
	usage := ms.AppendEmpty()
	usage.SetName("system.filesystem.usage")
	dp := usage.SetEmptySum().DataPoints().AppendEmpty()
	attrs(dp, true)
	dp.Attributes().PutStr("system.filesystem.state", "used")
	dp.SetIntValue(4096)
	util := ms.AppendEmpty()
	util.SetName("system.filesystem.utilization")
	dp = util.SetEmptyGauge().DataPoints().AppendEmpty()
	attrs(dp, true)
	dp.SetDoubleValue(0.25)
	// Not a filesystem metric: ignored although it names a device.
	io := ms.AppendEmpty()
	io.SetName("system.disk.io")
	io.SetEmptySum().DataPoints().AppendEmpty().Attributes().PutStr("system.device", "loop0")

	fss := filesystems(md)
	require.Len(t, fss, 1)
	m := fss["/m"]
	assert.Equal(t, [5]any{"/dev/loop0", "ext4", "rw", "7:0", 1}, [5]any{m.device, m.fsType, m.mode, m.majorMinor, m.resources})
	s, err := m.status()
	require.NoError(t, err)
	assert.Equal(t, "ok", s)
	assert.True(t, hasStatus(fss, "/m", "ok"))
	assert.False(t, hasStatus(fss, "/m", "timeout"))
	assert.False(t, hasStatus(fss, "/other", "ok"))
	v, ok := m.intValue("system.filesystem.usage", "used")
	assert.True(t, ok)
	assert.Equal(t, int64(4096), v)
	_, ok = m.intValue("system.filesystem.usage", "free")
	assert.False(t, ok)
	r, ok := m.ratio("system.filesystem.utilization")
	assert.True(t, ok)
	assert.Equal(t, 0.25, r)
	assert.True(t, m.has("system.filesystem.usage"))
	assert.False(t, m.has("system.filesystem.limit"))
	assert.Equal(t, pcommon.Timestamp(5e9), m.timestamp())
	assert.True(t, isFilesystemExport(md))
	assert.True(t, hasMetric(md, "system.disk.io"))
	assert.False(t, hasMetric(md, "system.disk.operations"))

	// Two statuses at 1, two left at 0, or none at 1 is not a status.
	status.Sum().DataPoints().At(1).SetIntValue(1)
	_, err = filesystems(md)["/m"].status()
	require.Error(t, err)
	status.Sum().DataPoints().At(1).SetIntValue(0)
	dp = statusPoints.AppendEmpty()
	attrs(dp, false)
	dp.Attributes().PutStr("status", "io_error")
	dp.SetIntValue(0)
	_, err = filesystems(md)["/m"].status()
	require.Error(t, err)
	statusPoints.RemoveIf(func(dp pmetric.NumberDataPoint) bool {
		v, _ := dp.Attributes().Get("status")
		return v.Str() != "timeout"
	})
	_, err = filesystems(md)["/m"].status()
	require.Error(t, err)

	// The same mount in a second resource is counted.
	rm.CopyTo(md.ResourceMetrics().AppendEmpty())
	assert.Equal(t, 2, filesystems(md)["/m"].resources)
}

func TestProcessOf(t *testing.T) {
	assert.Equal(t, os.Getpid(), processOf(os.Getpid()))
	// A thread's id names its process, as FUSE requests name the calling thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	assert.Equal(t, os.Getpid(), processOf(unix.Gettid()))
	assert.Equal(t, -1, processOf(-5))
}
