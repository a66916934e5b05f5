package qemu

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

// TestPassThroughVerdictQEMU (issue 19, "done when" 1): in the QEMU guest (Debian's 6.1 kernel; NVMe,
// IDE, AHCI, virtio-scsi and scsi_debug disks), the receiver runs every source enabled with its
// default settings but SMART, which reads every 3 s, for at least 22 SMART reads and three stack scrapes,
// while smartctl -a polls every disk as well (at least five passes). The ATA commands the SMART source and smartctl
// send with CK_COND complete with CHECK CONDITION, so the SCSI midlayer counts them in ioerr_cnt (the
// guest measures it); yet every disk stays ok in every verdict and no event is sent: no health rule
// weighs a pass-through command's status. The latency probe, which sees the same completions with
// BLK_STS_IOERR as REQ_OP_DRV_IN requests, counts none of them. (A real medium error still turns its
// disk degraded: TestLatencyIOErrorsQEMU.)
func TestPassThroughVerdictQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU PASS-THROUGH VERDICT TEST: -short")
	}
	kit := prepareVM(t)
	guest := filepath.Join(t.TempDir(), "verdictguest")
	build := exec.Command("go", "build", "-o", guest, "../internal/verdictguest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the guest program: %s", out)

	run := kit.boot(t, guest, 20*time.Minute, nil)
	t.Logf("VM run (kernel %s, boot to power-off): %v", kit.kver, run.took.Round(100*time.Millisecond))
	var b vmproto.VerdictBundle
	require.NoError(t, vmproto.Find(run.log, vmproto.MarkerVerdict, &b), "guest output:\n%s", tail(run.log, 6000))
	for _, l := range b.Logs {
		t.Logf("guest log: %s", l)
	}
	require.Empty(t, b.Errors, "guest errors; guest output:\n%s", tail(run.log, 6000))

	// The counters' steps: per SMART read of the receiver alone, then per smartctl pass (the receiver
	// reads on meanwhile).
	hex := func(s string) int64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		require.NoError(t, err, "counter %q", s)
		return int64(uint32(v))
	}
	first, last := b.Samples[0], b.Samples[len(b.Samples)-1]
	for disk := range first.Disks {
		for _, c := range []string{"iorequest_cnt", "iodone_cnt", "ioerr_cnt", "iotmo_cnt"} {
			var steps []int64
			for i := 1; i < len(b.Samples); i++ {
				steps = append(steps, hex(b.Samples[i].Disks[disk][c])-hex(b.Samples[i-1].Disks[disk][c]))
			}
			t.Logf("%s %s: %s at start, %s at end; steps %v", disk, c, first.Disks[disk][c], last.Disks[disk][c], steps)
		}
	}
	labels := make([]string, len(b.Samples))
	for i, s := range b.Samples {
		labels[i] = s.Label + "@" + strconv.FormatFloat(s.At, 'f', 1, 64)
	}
	t.Logf("samples: %v; smartctl runs %v; SMART reads %d", labels, b.Smartctl, b.Reads)

	require.GreaterOrEqual(t, b.Reads, 20, "at least 20 SMART reads")
	require.Empty(t, b.SmartctlFailed, "smartctl read every disk")
	for d, n := range b.Smartctl {
		assert.GreaterOrEqual(t, n, 5, "smartctl polled %s several times", d)
	}
	// The case is real: pass-through moved ioerr_cnt of the ATA disks, and the stack source reports it.
	require.Len(t, b.ATA, 2, "the IDE and the AHCI disk go through libata")
	for _, disk := range b.ATA {
		assert.Greater(t, hex(last.Disks[disk]["ioerr_cnt"]), hex(first.Disks[disk]["ioerr_cnt"]), "%s: pass-through raised ioerr_cnt", disk)
		s0, s1 := scsiErrorPoint(t, unmarshalMetrics(t, b.StackFirst), disk), scsiErrorPoint(t, unmarshalMetrics(t, b.StackLast), disk)
		t.Logf("%s: the stack source's hw.errors{error.type=scsi_io_error} %d → %d", disk, s0, s1)
		assert.Greater(t, s1, s0, "%s: hw.errors{scsi_io_error} reports ioerr_cnt as the kernel counts it", disk)
	}

	// Every disk has verdicts, all ok.
	var names []string
	for disk, st := range b.States {
		names = append(names, disk)
		assert.Equal(t, map[string]int{"ok": st["ok"]}, st, "%s stays ok in every verdict", disk)
	}
	slices.Sort(names)
	t.Logf("verdicts: %v", b.States)
	// The virtio-scsi disk (QEMU's scsi-hd) answers no SMART page the source reads: no verdict.
	assert.Subset(t, names, append([]string{"nvme0"}, b.ATA...), "a verdict of the NVMe and the ATA disks")
	assert.Len(t, names, 4, "verdicts: %v", names)

	// The latency probe ran and counted no error.
	assert.True(t, b.Latency, "the latency source ran (its probe loaded)")
	if b.KernelErrors != nil {
		for disk := range b.States {
			for k, v := range kernelErrorPoints(unmarshalMetrics(t, b.KernelErrors), disk) {
				assert.Zero(t, v, "%s: disk_health.disk.kernel.errors %s counts no pass-through command", disk, k)
			}
		}
	}

	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(b.Events)
	require.NoError(t, err)
	var events []string
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				events = append(events, lrs.At(k).Body().Str())
			}
		}
	}
	assert.Empty(t, events, "no health event")
}
