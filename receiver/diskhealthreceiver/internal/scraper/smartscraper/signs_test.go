package smartscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
)

// A counter another source posts on the signs board for a disk joins that disk's verdict: a rise of
// the kernel-seen I/O errors turns a SMART-healthy disk degraded, with the usual state change and new sign.
func TestSMARTWeighsTheSignsBoard(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	board := signs.New()
	h.s.signs = board
	id := h.m.Disk("nvme0").Info.ID
	board.Publish("stack", map[string][]signs.Counter{id: {{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 4}}})
	md := h.scrape(t)
	assert.Equal(t, map[string]int64{"ok": 1, "degraded": 0, "predicted_failure": 0, "failed": 0}, statusSet(md, "nvme0", "hw.status", "hw.state"),
		"the first value seen is the baseline")

	board.Publish("stack", map[string][]signs.Counter{id: {{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 9}}})
	md = h.scrape(t)
	assert.Equal(t, map[string]int64{"ok": 0, "degraded": 1, "predicted_failure": 0, "failed": 0}, statusSet(md, "nvme0", "hw.status", "hw.state"))
	require.Equal(t, 2, h.logs.LogRecordCount())
	lr := h.logs.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Contains(t, lr.Body().Str(), "health changed from ok to degraded: kernel-seen I/O errors of sda rose from 4 to 9 since monitoring began")
	sign := h.logs.AllLogs()[0].ResourceLogs().At(1).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()
	assert.Equal(t, "kernel_io_errors_rising", sign["disk_health.rule"])
}
