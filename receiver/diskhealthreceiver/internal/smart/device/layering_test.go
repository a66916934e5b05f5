package device_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// spy is a transport that notes every command the device layer's own Conn
// sends, as "ata <command>/<feature>" or "nvme <opcode>/<log or CNS>".
type spy struct {
	device.Transport
	mu   *sync.Mutex
	sent *[]string
}

func (s spy) note(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.sent = append(*s.sent, c)
}

func (s spy) SCSI(cdb []byte, dir smart.Direction, data, sense []byte, timeout time.Duration) (device.SCSIStatus, error) {
	if cdb[0] == scsi.OpATAPassThrough16 {
		s.note(fmt.Sprintf("ata %02x/%02x", cdb[14], cdb[4]))
	}
	return s.Transport.SCSI(cdb, dir, data, sense, timeout)
}

func (s spy) NVMeAdmin(cmd smart.NVMeAdmin, data []byte, timeout time.Duration) error {
	s.note(fmt.Sprintf("nvme %02x/%02x", cmd.Opcode, uint8(cmd.CDW10)))
	return s.Transport.NVMeAdmin(cmd, data, timeout)
}

// The reads smart.go covers reach the disks through the Library only: a
// whole read of the QEMU disks (twice, so cached and uncached reads both
// count) sends no IDENTIFY DEVICE, SMART READ DATA, SMART READ THRESHOLDS or
// NVMe SMART log through the device layer's own transport, while the disks
// did answer them.
func TestLibraryReadsNeverOnOwnTransport(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	var mu sync.Mutex
	var sent []string
	r := newReader(t, m, func(c *device.Config) {
		c.Open = func(node string) (device.Transport, error) {
			tr, err := m.Open(node)
			if err != nil {
				return nil, err
			}
			return spy{Transport: tr, mu: &mu, sent: &sent}, nil
		}
	})
	for range 2 {
		res, err := r.Collect(t.Context())
		require.NoError(t, err)
		for _, d := range res {
			assert.Equal(t, device.StatusOK, d.Status, "%s: %v", d.Disk.Name, d.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, sent, "the spy sees the device layer's own commands")
	for _, forbidden := range []string{
		fmt.Sprintf("ata %02x/00", ata.CmdIdentifyDevice),
		fmt.Sprintf("ata %02x/%02x", ata.CmdSMART, ata.SMARTReadData),
		fmt.Sprintf("ata %02x/%02x", ata.CmdSMART, ata.SMARTReadThresholds),
		fmt.Sprintf("nvme %02x/%02x", nvme.AdminGetLogPage, nvme.LogSMART),
	} {
		assert.NotContains(t, sent, forbidden)
	}
	for _, want := range []struct{ disk, key string }{
		{"sda", devicetest.ATAIdentify}, {"sda", devicetest.ATASMARTData}, {"sda", devicetest.ATAThresholds},
		{"nvme0", devicetest.NVMeLog(nvme.LogSMART)},
	} {
		assert.Contains(t, m.Disk(want.disk).Sent(), want.key, "answered through the library")
	}
}

// A panic inside smart.go costs that one disk's read (status error, the
// device named, the same message every time so the source logs it once),
// never the other disks or the collector.
func TestSmartGoPanicCostsOneDisk(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("sda").PanicOn = []string{devicetest.ATASMARTData}
	m.Disk("nvme0").PanicOn = []string{devicetest.NVMeLog(nvme.LogSMART)}
	r := newReader(t, m, nil)
	var msgs []string
	for range 2 {
		res, err := r.Collect(t.Context())
		require.NoError(t, err)
		got := byName(t, res)
		for _, n := range []string{"sda", "nvme0"} {
			assert.Equal(t, device.StatusError, got[n].Status, n)
			require.ErrorContains(t, got[n].Err, "smart.go panicked on "+n+"'s answer")
			msgs = append(msgs, got[n].Err.Error())
		}
		assert.Equal(t, device.StatusOK, got["sdb"].Status)
		assert.Equal(t, device.StatusOK, got["sdc"].Status)
	}
	assert.Equal(t, msgs[:2], msgs[2:], "the same failure reads the same: logged once")
}

// A smart.go call that hangs (here the IDENTIFY of its open: with standby
// never, nothing of the receiver's own comes first) ends the disk's read at
// the deadline, and the disk gets no further command while it is in flight.
func TestSmartGoHungCallBounded(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	hang := make(chan struct{})
	m.Disk("sda").Hang = hang
	const timeout = 300 * time.Millisecond
	r := newReader(t, m, func(c *device.Config) { c.Timeout, c.Standby = timeout, device.StandbyNever })
	// The call stays blocked until the test's end (close(hang) below): Collect returning at all, with
	// sda timed out, is the read ending at its deadline without waiting for the call.
	res, err := r.Collect(t.Context())
	require.NoError(t, err)
	got := byName(t, res)
	assert.Equal(t, device.StatusTimeout, got["sda"].Status)
	assert.Equal(t, device.StatusOK, got["sdb"].Status)
	assert.Equal(t, []string{devicetest.ATAIdentify}, m.Disk("sda").Sent(), "smart.go's open, blocked")

	res, err = r.Collect(t.Context())
	require.NoError(t, err)
	require.ErrorContains(t, byName(t, res)["sda"].Err, "still in flight")
	assert.Len(t, m.Disk("sda").Sent(), 1, "not read again while the call is stuck")
	close(hang)
}

// smart.go's ATA device is opened once per disk (its open compiles its whole drive table) and kept
// between reads; a failed library call closes it and the next read opens it again; a disk that is
// gone, and the reader's Close, close it.
func TestSmartGoDeviceKeptOpen(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	r := newReader(t, m, nil)
	sda, sdb := m.Disk("sda"), m.Disk("sdb")
	for range 3 {
		_, err := r.Collect(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 1, sda.LibraryOpen(), "one open device, not one per read")
	}
	// OpenSata's own and the one decoded (its result is not exposed), on the first read only.
	assert.Equal(t, 2, countOf(sda.Sent(), devicetest.ATAIdentify), "IDENTIFY on the first read only")

	sda.PanicOn = []string{devicetest.ATASMARTData}
	res, err := r.Collect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, device.StatusError, byName(t, res)["sda"].Status)
	assert.Equal(t, 0, sda.LibraryOpen(), "a failed call closes it")
	sda.PanicOn = nil
	res, err = r.Collect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, device.StatusOK, byName(t, res)["sda"].Status)
	assert.Equal(t, 1, sda.LibraryOpen(), "opened again")

	m.Remove("sda")
	_, err = r.Collect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, sda.LibraryOpen(), "a disk that is gone is closed")
	assert.Equal(t, 1, sdb.LibraryOpen())
	require.NoError(t, r.Close(t.Context()))
	assert.Equal(t, 0, sdb.LibraryOpen(), "Close closes the rest")
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
