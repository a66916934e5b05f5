package stackscraper

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// parseMount parses one mountinfo line, as the kernel writes it.
func parseMount(t testing.TB, line string) fsusage.Mount {
	t.Helper()
	ms, err := fsusage.ParseMountInfo([]byte(line + "\n"))
	require.NoError(t, err)
	require.Len(t, ms, 1)
	return ms[0]
}

// The lines are what 6.18 shows (ext4 and xfs after EXT4_IOC_SHUTDOWN/XFS_IOC_GOINGDOWN, ext4 after
// trigger_fs_error, btrfs after a transaction abort, btrfs with a second mount remounted ro).
func TestFSState(t *testing.T) {
	const (
		ok       = metadata.AttributeDiskHealthFilesystemErrorStateOk
		ro       = metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors
		shutdown = metadata.AttributeDiskHealthFilesystemErrorStateShutdown
	)
	for _, c := range []struct {
		name, line string
		anyMountRO bool
		recorded   uint64
		probe      error
		want       fsErrorState
	}{
		{"ext4 healthy", "47 27 7:2 / /m rw,relatime - ext4 /dev/loop2 rw,errors=remount-ro", false, 0, nil, ok},
		{"ext4 shutdown", "47 27 7:2 / /m rw,relatime - ext4 /dev/loop2 rw,errors=remount-ro,shutdown", false, 0, nil, shutdown},
		{"ext4 emergency_ro", "48 27 7:3 / /m2 rw,relatime - ext4 /dev/loop3 rw,errors=remount-ro,emergency_ro", false, 1, nil, ro},
		{"ext4 ro superblock with errors", "40 22 8:1 / /srv rw,relatime - ext4 /dev/sda1 ro,errors=remount-ro", false, 2, nil, ro},
		{"ext4 ro superblock, no error recorded", "40 22 8:1 / /srv rw,relatime - ext4 /dev/sda1 ro", false, 0, nil, ok},
		{"ext4 an administrator's ro elsewhere", "40 22 8:1 / /srv rw,relatime - ext4 /dev/sda1 ro", true, 2, nil, ok},
		{"ext4 mounted ro", "41 22 8:17 / /a ro,relatime - ext4 /dev/sdb1 ro", true, 3, nil, ok},
		{"btrfs transaction abort", "54 27 0:44 / /bt rw,relatime - btrfs /dev/loop7 ro,ssd,discard=async,space_cache=v2,subvolid=5,subvol=/", false, 0, nil, ro},
		{"btrfs a second mount remounted ro", "52 27 0:41 / /b rw,relatime - btrfs /dev/loop6 ro,discard=async,space_cache=v2,subvolid=5,subvol=/", true, 0, nil, ok},
		{"btrfs healthy", "52 27 0:41 / /b rw,relatime - btrfs /dev/loop6 rw,space_cache=v2,subvolid=5,subvol=/", false, 0, nil, ok},
		{"xfs shut down", "50 27 7:5 / /x rw,relatime - xfs /dev/loop5 rw,inode64,logbufs=8,logbsize=32k,noquota", false, 0, &fs.PathError{Op: "lstat", Path: "/x", Err: syscall.EIO}, shutdown},
		{"xfs healthy", "50 27 7:5 / /x rw,relatime - xfs /dev/loop5 rw,inode64,noquota", false, 0, nil, ok},
		{"xfs ro superblock is no xfs error state", "50 27 7:5 / /x rw,relatime - xfs /dev/loop5 ro,inode64", false, 0, nil, ok},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := mountedFS{Mount: parseMount(t, c.line), AnyMountRO: c.anyMountRO}
			assert.Equal(t, c.want, fsState(&m, c.recorded, c.probe))
		})
	}
}

// fsStateRig is a fixture tree with an ext4 (sda1, with errors_count), an xfs (sdb1), a btrfs (loop0)
// and a healthy ext4 (sdc1); the test writes the mount table and the xfs probe's answer per scrape.
type fsStateRig struct {
	rig       *testRig
	mountinfo string
	xfsProbe  error
	xfsDev    string // what the probe finds at the xfs mount point
}

func newFSStateRig(t *testing.T) *fsStateRig {
	t.Helper()
	root := t.TempDir()
	addDisk(t, root, "sda", "8:0", "0x5000c500aaaa0001", "sda1")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev", "block"), 0o755))
	for dev, name := range map[string]string{"8:1": "sda1", "8:17": "sdb1", "8:33": "sdc1"} {
		require.NoError(t, os.Symlink("../../class/block/"+name, filepath.Join(root, "dev", "block", dev)))
	}
	ext4 := filepath.Join(root, "fs", "ext4", "sda1")
	require.NoError(t, os.MkdirAll(ext4, 0o755))
	for file, v := range map[string]string{"errors_count": "0", "first_error_time": "0", "last_error_time": "0"} {
		require.NoError(t, os.WriteFile(filepath.Join(ext4, file), []byte(v+"\n"), 0o644))
	}
	r := &fsStateRig{xfsDev: "8:17"}
	r.rig = newRig(t, readers{
		sysRoot: root, sys: os.DirFS(root), errors: true,
		mountinfo: func() ([]byte, error) { return []byte(r.mountinfo), nil },
		statMount: func(_ context.Context, mp string) (string, error) {
			if mp != "/srv/xfs" {
				return "", fmt.Errorf("probed %s, not the xfs", mp)
			}
			if r.xfsProbe != nil {
				return "", r.xfsProbe
			}
			return r.xfsDev, nil
		},
	}, nil)
	return r
}

// mounts writes the mount table: the superblock options of sda1 and loop0 as given; the xfs mounted
// when xfs is true.
func (r *fsStateRig) mounts(sda1, loop0 string, xfs bool) {
	lines := []string{
		"40 22 8:1 / /srv/data rw,relatime shared:20 - ext4 /dev/sda1 " + sda1,
		"42 22 0:45 / /mnt/pool rw,relatime shared:22 - btrfs /dev/loop0 " + loop0 + ",space_cache=v2,subvolid=5,subvol=/",
		"43 22 8:33 / /srv/ok rw,relatime shared:23 - ext4 /dev/sdc1 rw,errors=remount-ro",
	}
	if xfs {
		lines = append(lines, "41 22 8:17 / /srv/xfs rw,relatime shared:21 - xfs /dev/sdb1 rw,inode64,noquota")
	}
	r.mountinfo = strings.Join(lines, "\n") + "\n"
}

func (r *fsStateRig) scrape(t *testing.T) pmetric.Metrics {
	t.Helper()
	md, err := r.rig.s.scrape(t.Context())
	require.NoError(t, err)
	return md
}

// states returns each device's current error state, and checks that each has one point per state with
// exactly one at 1.
func fsStates(t *testing.T, md pmetric.Metrics) map[string]string {
	t.Helper()
	out := map[string]string{}
	count := map[string]int{}
	forEachPoint(md, "disk_health.filesystem.error_status", func(p pmetric.NumberDataPoint) {
		dev, _ := p.Attributes().Get("system.device")
		st, _ := p.Attributes().Get("disk_health.filesystem.error_state")
		count[dev.Str()]++
		if p.IntValue() == 1 {
			assert.Empty(t, out[dev.Str()], "%s: one current state", dev.Str())
			out[dev.Str()] = st.Str()
		}
	})
	for dev, n := range count {
		assert.Equal(t, len(fsErrorStates), n, dev)
	}
	return out
}

func forEachPoint(md pmetric.Metrics, name string, f func(pmetric.NumberDataPoint)) {
	for i := range md.ResourceMetrics().Len() {
		sms := md.ResourceMetrics().At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				if m := ms.At(k); m.Name() == name {
					for l := range m.Sum().DataPoints().Len() {
						f(m.Sum().DataPoints().At(l))
					}
				}
			}
		}
	}
}

func (r *fsStateRig) fsEvents(t *testing.T) []string {
	t.Helper()
	return fsEvents(t, r.rig, "")
}

// fsEvents returns the error state events sent so far (of device, "" for all), as "device
// state<-previous severity", and resets the sink.
func fsEvents(t *testing.T, rig *testRig, device string) []string {
	t.Helper()
	var out []string
	for _, ld := range rig.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			for j := range rl.ScopeLogs().Len() {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := range lrs.Len() {
					lr := lrs.At(k)
					a := lr.Attributes()
					if lr.EventName() != EventFilesystemErrorStateChange {
						continue
					}
					get := func(k string) string {
						if v, ok := a.Get(k); ok {
							return v.AsString()
						}
						return ""
					}
					if device != "" && get("system.device") != device {
						continue
					}
					assert.Contains(t, lr.Body().Str(), get("system.device"))
					assert.NotEmpty(t, get("system.filesystem.mountpoint"))
					out = append(out, fmt.Sprintf("%s %s<-%s %s", get("system.device"), get("disk_health.filesystem.error_state"),
						get("disk_health.previous_state"), lr.SeverityText()))
				}
			}
		}
	}
	rig.logs.Reset()
	return out
}

// TestFilesystemErrorStateEvents: a mount's state follows its superblock options and, for xfs, the
// probe; each change is one event, a state that lasts none, an unmount none, and the way back to ok
// one.
func TestFilesystemErrorStateEvents(t *testing.T) {
	r := newFSStateRig(t)
	r.mounts("rw,errors=remount-ro", "rw", true)
	assert.Equal(t, map[string]string{"sda1": "ok", "sdb1": "ok", "sdc1": "ok", "loop0": "ok"}, fsStates(t, r.scrape(t)))
	assert.Empty(t, r.fsEvents(t), "healthy mounts send nothing")

	r.mounts("rw,errors=remount-ro,shutdown", "ro", true)
	r.xfsProbe = &fs.PathError{Op: "lstat", Path: "/srv/xfs", Err: syscall.EIO}
	for i := range 3 {
		md := r.scrape(t)
		assert.Equal(t, map[string]string{"sda1": "shutdown", "sdb1": "shutdown", "sdc1": "ok", "loop0": "read_only_after_errors"}, fsStates(t, md))
		if i == 0 {
			assert.ElementsMatch(t, []string{"sda1 shutdown<-ok ERROR", "sdb1 shutdown<-ok ERROR", "loop0 read_only_after_errors<-ok WARN"}, r.fsEvents(t))
		} else {
			assert.Empty(t, r.fsEvents(t), "a state that lasts is not sent again")
		}
	}

	// sda1 unmounted, checked and mounted again between two scrapes; the xfs unmounted.
	r.mounts("rw,errors=remount-ro", "ro", false)
	r.xfsProbe = nil
	assert.Equal(t, map[string]string{"sda1": "ok", "sdc1": "ok", "loop0": "read_only_after_errors"}, fsStates(t, r.scrape(t)))
	assert.Equal(t, []string{"sda1 ok<-shutdown INFO"}, r.fsEvents(t))

	// The xfs mounted again already shut down: first seen in a bad state, one event without a previous state.
	r.mounts("rw,errors=remount-ro", "ro", true)
	r.xfsProbe = &fs.PathError{Op: "lstat", Path: "/srv/xfs", Err: syscall.EIO}
	r.scrape(t)
	assert.Equal(t, []string{"sdb1 shutdown<- ERROR"}, r.fsEvents(t))

	// A probe that does not answer leaves the xfs out (a partial error), its state kept: no event when it
	// answers again.
	r.xfsProbe = fmt.Errorf("lstat /srv/xfs: %w", context.DeadlineExceeded)
	md, err := r.rig.s.scrape(t.Context())
	require.ErrorContains(t, err, "xfs sdb1 (/srv/xfs)")
	_, ok := fsStates(t, md)["sdb1"]
	assert.False(t, ok)
	r.xfsProbe = &fs.PathError{Op: "lstat", Path: "/srv/xfs", Err: syscall.EIO}
	r.scrape(t)
	assert.Empty(t, r.fsEvents(t))

	// The collector does not see the xfs mount (another filesystem at its path): no state is said.
	r.xfsProbe, r.xfsDev = nil, "8:1"
	md, err = r.rig.s.scrape(t.Context())
	require.ErrorContains(t, err, "/srv/xfs is on 8:1, not on the mounted 8:17")
	_, ok = fsStates(t, md)["sdb1"]
	assert.False(t, ok)
	assert.Empty(t, r.fsEvents(t))
}

// The event's resource is the physical disk's when the filesystem is on one.
func TestFilesystemErrorStateEventResource(t *testing.T) {
	r := newFSStateRig(t)
	r.mounts("rw,emergency_ro", "rw", false)
	r.scrape(t)
	var found bool
	for _, ld := range r.rig.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			lr := rl.ScopeLogs().At(0).LogRecords().At(0)
			if dev, _ := lr.Attributes().Get("system.device"); dev.Str() != "sda1" {
				continue
			}
			found = true
			id, _ := rl.Resource().Attributes().Get("hw.id")
			assert.Equal(t, "0x5000c500aaaa0001", id.Str())
			assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
			assert.Equal(t, "ext4 sda1 (/srv/data): read-only after errors: writes fail with EROFS", lr.Body().Str())
		}
	}
	assert.True(t, found)
}

// FuzzFSState: any mountinfo line parses and yields exactly one state; a state other than ok needs the
// flag that makes it.
func FuzzFSState(f *testing.F) {
	for _, line := range []string{
		"47 27 7:2 / /m rw,relatime - ext4 /dev/loop2 rw,errors=remount-ro,shutdown",
		"48 27 7:3 / /m2 rw,relatime - ext4 /dev/loop3 rw,errors=remount-ro,emergency_ro",
		"54 27 0:44 / /bt rw,relatime - btrfs /dev/loop7 ro,ssd,subvolid=5,subvol=/",
		"50 27 7:5 / /x rw,relatime - xfs /dev/loop5 rw,inode64",
	} {
		f.Add([]byte(line), false, uint64(0), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, anyRO bool, recorded uint64, eio bool) {
		ms, _ := fsusage.ParseMountInfo(line)
		var probe error
		if eio {
			probe = syscall.EIO
		}
		for _, m := range ms {
			mf := mountedFS{Mount: m, AnyMountRO: anyRO || m.MountRO}
			switch st := fsState(&mf, recorded, probe); st {
			case metadata.AttributeDiskHealthFilesystemErrorStateShutdown:
				if !m.Shutdown && (m.FSType != "xfs" || !eio) {
					t.Fatalf("shutdown without a shutdown: %+v", m)
				}
			case metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors:
				if !m.EmergencyRO && (!m.SuperRO || mf.AnyMountRO) {
					t.Fatalf("read-only after errors without a read-only superblock under rw mounts: %+v", m)
				}
			case metadata.AttributeDiskHealthFilesystemErrorStateOk:
				if m.FSType == "ext4" && (m.Shutdown || m.EmergencyRO) {
					t.Fatalf("ok but the superblock says otherwise: %+v", m)
				}
			default:
				t.Fatalf("state %v", st)
			}
		}
	})
}
