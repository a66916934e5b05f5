//go:build linux

// Command stackguest runs inside the QEMU VM of the storage-stack end-to-end test
// (e2e/qemu/stack_qemu_test.go): it starts the disk_health receiver with only the stack source, builds an
// md RAID1 over two scsi_debug disks, a dm thin pool over null_blk, a dm-multipath map over two
// null_blk paths and a native NVMe multipath namespace over two NVMe/TCP ports of the kernel's own
// target, breaks each the way the test asks (mdadm --fail, remove and re-add; filling the pool past its
// threshold and out of space; dmsetup fail_path; unlinking the target's port), and prints what the tools
// (mdadm --detail, /proc/mdstat, dmsetup status, nvme list-subsys) and the receiver's exports said at
// each step as one JSON line for the host test to compare. It is built by that test and means nothing outside the VM.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

const (
	interval = time.Second
	wait     = 60 * time.Second
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == argUnprivileged {
		unprivileged()
		return
	}
	b := &vmproto.StackBundle{Parts: map[string]*vmproto.StackPart{}}
	b.Kernel = guestrx.Kernel()
	err := run(b)
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerStack, b)
	if err != nil {
		os.Exit(1)
	}
}

func run(b *vmproto.StackBundle) error {
	_ = os.MkdirAll("/run", 0o755)
	stop, ms, ls, err := start(zap.NewNop(), false)
	if err != nil {
		return err
	}
	defer stop()
	if err := loadExtraModules(); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		f    func(*env) error
	}{{"md", mdPart}, {"thin", thinPart}, {"multipath", multipathPart}, {"nvme", nvmePart}, {"unprivileged", unprivilegedPart}} {
		part := &vmproto.StackPart{Tools: map[string]string{}, Series: map[string]float64{}}
		b.Parts[p.name] = part
		t0 := time.Now()
		if err := p.f(&env{ms: ms, ls: ls, part: part}); err != nil {
			part.Errors = append(part.Errors, err.Error())
		}
		part.Logs = append(part.Logs, fmt.Sprintf("the %s part took %v", p.name, time.Since(t0).Round(100*time.Millisecond)))
	}
	return nil
}

// start runs the receiver with the stack source, and the I/O source if iostat, a scrape each interval.
func start(logger *zap.Logger, iostat bool) (stop func(), ms *consumertest.MetricsSink, ls *consumertest.LogsSink, err error) {
	return guestrx.Start(logger, diskhealthreceiver.Only("stack"), map[string]any{
		"collection_interval": interval.String(),
		"iostat":              map[string]any{"enabled": iostat},
	})
}

// loadExtraModules inserts the harness's extra modules in order: null_blk with five memory-backed
// 1 GiB devices (pages are allocated only when written; the fifth is the NVMe target's namespace), md,
// the dm targets, and the NVMe target and host over TCP.
func loadExtraModules() error {
	list, err := readFile("/lib/modules/extra/extra.list")
	if err != nil {
		return err
	}
	params := map[string][]string{"null_blk.ko": {"nr_devices=5", "memory_backed=1", "gb=1"}}
	for _, m := range strings.Fields(list) {
		args := append([]string{"/lib/modules/extra/" + m}, params[m]...)
		if out, err := exec.Command("insmod", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("insmod %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return waitFile("/sys/block/nullb4", 10*time.Second)
}
