package capacityscraper

import (
	"fmt"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// The cgroups of the writer tests: the trainer's container, a second pod that also saves, a log
// shipper, and a job writing far more than a save on another disk.
const (
	podUID      = "3f6c1f2e-8b1a-4c55-9a59-1d2f0e6b7a01"
	containerID = "06ea17a8981d25b0315ff17bd1ebad3d95c15a3f8b764eaadb93612d9b61a54e"
	trainerCG   = "kubepods/burstable/pod" + podUID + "/" + containerID
	otherPodCG  = "kubepods/burstable/pod6f1c0e52-0000-4000-8000-000000000002/" + "1111111111111111111111111111111111111111111111111111111111111111"
	logCG       = "system.slice/fluent-bit.service"
	otherDiskCG = "system.slice/backup.service"
)

// keepAfterWritten is what the keep-after job (keepAfterLevel) has written by at: every save's bytes
// so far, rotation or not.
func keepAfterWritten(at time.Duration) uint64 {
	var w uint64
	for k := 1; time.Duration(k)*2*time.Hour <= at; k++ {
		w += min(300*gib, uint64((at-time.Duration(k)*2*time.Hour).Seconds()*gib))
	}
	return w
}

// blkioFile is a v1 blkio.throttle.io_service_bytes_recursive with these write bytes per device.
func blkioFile(writes map[string]uint64) string {
	var b strings.Builder
	var total uint64
	for dev, w := range writes {
		fmt.Fprintf(&b, "%[1]s Read 0\n%[1]s Write %[2]d\n%[1]s Sync %[2]d\n%[1]s Async 0\n%[1]s Discard 0\n%[1]s Total %[2]d\n", dev, w)
		total += w
	}
	fmt.Fprintf(&b, "Total %d\n", total)
	return b.String()
}

// writeBlkio writes the v1 blkio hierarchy of the writer tests' cgroups, whose leaves have written
// writes (per cgroup, per device): the kernel's _recursive counters, each cgroup's its subtree's.
func writeBlkio(r *dhtest.Root, writes map[string]map[string]uint64) {
	sums := map[string]map[string]uint64{"": {}}
	for _, leaf := range []string{trainerCG, otherPodCG, logCG, otherDiskCG} {
		for dir := leaf; ; dir = path.Dir(dir) {
			if dir == "." {
				dir = ""
			}
			if sums[dir] == nil {
				sums[dir] = map[string]uint64{}
			}
			for dev, w := range writes[leaf] {
				sums[dir][dev] += w
			}
			if dir == "" {
				break
			}
		}
	}
	for dir, devs := range sums {
		r.Write(path.Join("sys/fs/cgroup/blkio", dir, cgroupio.BlkioBytesFile), blkioFile(devs))
	}
}

// writersRun drives the keep-after job of TestFSScraperCheckpointWillFail on a root whose domain 259:5
// is a partition of nvme1n1 (259:4), with a v1 blkio hierarchy whose cgroups have written what writes
// says by each time (per cgroup, per device), and returns the last scrape (compared with golden unless
// it is empty) and the events.
func writersRun(t *testing.T, golden string, writes func(at time.Duration) map[string]map[string]uint64) (pmetric.Metrics, *consumertest.LogsSink) {
	t.Helper()
	clock := t0
	sink := new(consumertest.LogsSink)
	var root *dhtest.Root
	s, f := bindsRootWith(t, "keep", &clock, sink, func(r *dhtest.Root, cfg *Config) {
		root = r
		// 259:5 is nvme1n1's first partition here: io.stat and blkio count its writes on the disk.
		disk := "sys/devices/pci0000:00/0000:00:04.0/nvme/nvme1/nvme1n1"
		require.NoError(t, os.Remove(r.Path("sys/dev/block/259:5")))
		r.Write(disk+"/dev", "259:4\n")
		r.Write(disk+"/nvme1n1p1/dev", "259:5\n")
		r.Write(disk+"/nvme1n1p1/partition", "1\n")
		r.Link("sys/dev/block/259:5", disk+"/nvme1n1p1")
		writeBlkio(r, nil)
		cfg.CgroupTopN, cfg.CgroupMaxDepth = 10, 5
	})
	var md pmetric.Metrics
	for at := time.Duration(0); at < 7*time.Hour; at += time.Minute {
		clock = t0.Add(at)
		keepAfterAt(f, at)
		writeBlkio(root, writes(at))
		var err error
		md, err = s.scrape(t.Context())
		require.NoError(t, err)
	}
	if golden != "" {
		dhtest.AssertGolden(t, golden, md, pmetrictest.IgnoreStartTimestamp())
	}
	require.Equal(t, 1, sink.LogRecordCount(), "one will_fail event")
	return md, sink
}

// writerPoints are the domain's disk_health.filesystem.checkpoint.writer points, by their cgroup.path,
// k8s.pod.uid and container.id.
func writerPoints(md pmetric.Metrics, dom string) []string {
	var got []string
	for k, dp := range pointsBy(md, "disk_health.filesystem.checkpoint.writer", "disk_health.filesystem.domain", "cgroup.path", "k8s.pod.uid", "container.id") {
		if strings.HasPrefix(k, dom+" ") {
			got = append(got, fmt.Sprintf("%s = %d", strings.TrimPrefix(k, dom+" "), dp.IntValue()))
		}
	}
	return got
}

// eventWriter is the will_fail event's writer attributes.
func eventWriter(sink *consumertest.LogsSink) map[string]any {
	attr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()
	got := map[string]any{}
	for _, k := range []string{"cgroup.path", "k8s.pod.uid", "container.id"} {
		if v, ok := attr[k]; ok {
			got[k] = v
		}
	}
	return got
}

// TestFSScraperCheckpointWriter: the trainer's container writes each save (and 2 % more: journal and
// metadata) to the disk of the domain's partition, a log shipper a little there all the time, a backup
// ten times a save per minute to another disk. The trainer is named, on the writer gauge and in the
// will_fail event, with the pod and container its path names; the backup, which wrote the most bytes
// overall, is not: its writes are on another disk.
func TestFSScraperCheckpointWriter(t *testing.T) {
	md, sink := writersRun(t, "capacity-checkpoint-writer", func(at time.Duration) map[string]map[string]uint64 {
		minutes := uint64(at / time.Minute)
		return map[string]map[string]uint64{
			trainerCG:   {"259:4": keepAfterWritten(at) * 102 / 100},
			logCG:       {"259:4": minutes << 20},
			otherDiskCG: {"8:0": minutes * 3000 * gib},
		}
	})
	assert.Equal(t, []string{"/" + trainerCG + " " + podUID + " " + containerID + " = 1"}, writerPoints(md, "259:5"))
	assert.Equal(t, map[string]any{"cgroup.path": "/" + trainerCG, "k8s.pod.uid": podUID, "container.id": containerID}, eventWriter(sink))
	assert.Contains(t, sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str(),
		"written by cgroup /"+trainerCG+" (pod "+podUID+")")
}

// TestFSScraperCheckpointNoWriter: when two pods each write more than half of every save to the disk,
// or the one that writes writes less than half of it (the rest charged elsewhere, as v1 charges buffered
// writeback to the root cgroup), nobody is named: no writer gauge, no writer in the event.
func TestFSScraperCheckpointNoWriter(t *testing.T) {
	for name, writes := range map[string]func(at time.Duration) map[string]map[string]uint64{
		"two pods above half": func(at time.Duration) map[string]map[string]uint64 {
			return map[string]map[string]uint64{
				trainerCG:  {"259:4": keepAfterWritten(at)},
				otherPodCG: {"259:4": keepAfterWritten(at) * 6 / 10},
			}
		},
		"the writer below half": func(at time.Duration) map[string]map[string]uint64 {
			return map[string]map[string]uint64{trainerCG: {"259:4": keepAfterWritten(at) * 45 / 100}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			md, sink := writersRun(t, "", writes)
			assert.Empty(t, writerPoints(md, "259:5"))
			assert.Empty(t, eventWriter(sink))
		})
	}
}
