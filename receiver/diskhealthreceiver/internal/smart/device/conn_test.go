package device

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// recorder answers every command with GOOD (or a fixed outcome) and keeps
// what it was sent.
type recorder struct {
	cdbs   [][]byte
	dirs   []smart.Direction
	nvme   []smart.NVMeAdmin
	status SCSIStatus
	sense  []byte
	err    error
}

func (r *recorder) SCSI(cdb []byte, dir smart.Direction, _, sense []byte, timeout time.Duration) (SCSIStatus, error) {
	if timeout <= 0 {
		panic("no timeout")
	}
	r.cdbs = append(r.cdbs, slices.Clone(cdb))
	r.dirs = append(r.dirs, dir)
	copy(sense, r.sense)
	return r.status, r.err
}

func (r *recorder) NVMeAdmin(cmd smart.NVMeAdmin, data []byte, _ time.Duration) error {
	if len(data) != int(cmd.DataLen) {
		panic("buffer and DataLen differ")
	}
	r.nvme = append(r.nvme, cmd)
	return r.err
}

func (r *recorder) Close() error { return nil }

func conn(r *recorder) *Conn { return NewConn(r, time.Now().Add(time.Minute)) }

// The CDBs are the ones smartctl sends for the same commands (its -r ioctl
// trace), and each passes the allowlist.
func TestCommandBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*Conn) error
		cdb  []byte
		dir  smart.Direction
	}{
		{"SMART READ LOG 06h", func(c *Conn) error { _, err := c.SMARTReadLog(ata.LogSelfTest, 1); return err },
			[]byte{0x85, 0x08, 0x0e, 0, 0xd5, 0, 1, 0, 0x06, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0}, smart.DirFromDevice},
		{"READ LOG EXT 04h page 3", func(c *Conn) error { _, err := c.ReadLogExt(ata.LogDeviceStatistics, 3, 1); return err },
			[]byte{0x85, 0x09, 0x0e, 0, 0, 0, 1, 0, 0x04, 0, 0x03, 0, 0, 0, 0x2f, 0}, smart.DirFromDevice},
		{"INQUIRY", func(c *Conn) error { _, err := c.Inquiry(false, 0, 96); return err },
			[]byte{0x12, 0, 0, 0, 96, 0}, smart.DirFromDevice},
		{"INQUIRY VPD 80h", func(c *Conn) error { _, err := c.Inquiry(true, 0x80, 252); return err },
			[]byte{0x12, 1, 0x80, 0, 252, 0}, smart.DirFromDevice},
		{"LOG SENSE 0Dh", func(c *Conn) error { _, err := c.LogSense(0x0D, 0, 4096); return err },
			[]byte{0x4d, 0, 0x4d, 0, 0, 0, 0, 0x10, 0, 0}, smart.DirFromDevice},
		{"READ CAPACITY(16)", func(c *Conn) error { _, err := c.ReadCapacity16(); return err },
			[]byte{0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}, smart.DirFromDevice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			require.NoError(t, tc.run(conn(r)))
			require.Len(t, r.cdbs, 1)
			assert.Equal(t, tc.cdb, r.cdbs[0])
			assert.Equal(t, tc.dir, r.dirs[0])
			require.NoError(t, smart.Allowed(smart.SCSI{CDB: r.cdbs[0], Dir: r.dirs[0]}))
		})
	}
}

func TestNonDataCommands(t *testing.T) {
	r := &recorder{status: SCSIStatus{Status: statusCheckCondition, DriverStatus: driverSense, SenseLen: 22},
		sense: []byte{0x72, 0x01, 0x00, 0x1D, 0, 0, 0, 14, 0x09, 0x0C, 0, 0, 0, 0x80, 0, 0, 0, 0x4f, 0, 0xc2, 0, 0x50}}
	c := conn(r)
	mode, err := c.CheckPowerMode()
	require.NoError(t, err)
	assert.Equal(t, ata.PowerIdle, mode)
	assert.Equal(t, []byte{0x85, 0x06, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe5, 0}, r.cdbs[0])
	assert.Equal(t, smart.DirNone, r.dirs[0])

	st, err := c.SMARTReturnStatus()
	require.NoError(t, err)
	assert.Equal(t, ata.SMARTStatusPassed, st)
	assert.Equal(t, []byte{0x85, 0x06, 0x20, 0, 0xda, 0, 0, 0, 0, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0}, r.cdbs[1])

	// GOOD without sense: the bridge returned no registers.
	_, err = conn(&recorder{}).CheckPowerMode()
	require.ErrorIs(t, err, ErrUnsupported)
	// Registers with ERR set: the drive aborted the command.
	r.sense[21] = 0x51
	_, err = c.CheckPowerMode()
	assert.ErrorIs(t, err, ErrUnsupported)
}

func TestNVMeCommands(t *testing.T) {
	r := &recorder{}
	c := conn(r)
	_, err := c.NVMeGetLog(0x01, 0xFFFFFFFF, 512)
	require.NoError(t, err)
	_, err = c.NVMeIdentify(0x01, 0)
	require.NoError(t, err)
	assert.Equal(t, []smart.NVMeAdmin{
		{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 0x01, DataLen: 512},
		{Opcode: 0x06, NSID: 0, CDW10: 0x01, DataLen: 4096},
	}, r.nvme)
}

// Nothing the allowlist refuses ever reaches the transport.
func TestAllowlistInFront(t *testing.T) {
	r := &recorder{}
	c := conn(r)
	write10 := []byte{0x2a, 0, 0, 0, 0, 0, 0, 0, 1, 0}
	_, err := c.sendSCSI("WRITE(10)", write10, smart.DirToDevice, nil)
	require.ErrorIs(t, err, smart.ErrNotAllowed)
	smartEnable := smartTask(0xD8, 0, 0).cdb(ataProtoNonData, ataCkCond)
	_, err = c.sendSCSI("SMART ENABLE", smartEnable, smart.DirNone, nil)
	require.ErrorIs(t, err, smart.ErrNotAllowed)
	err = c.nvmeAdmin("Format NVM", smart.NVMeAdmin{Opcode: 0x80}, nil)
	require.ErrorIs(t, err, smart.ErrNotAllowed)
	_, err = c.NVMeGetLog(0x07, 0xFFFFFFFF, 512) // telemetry: creates a snapshot
	require.ErrorIs(t, err, smart.ErrNotAllowed)
	assert.Empty(t, r.cdbs)
	assert.Empty(t, r.nvme)
}

// The reads smart.go does are never sent a second way: Conn refuses the very
// commands smart.go sends (its CDBs, which are smartctl's, and its NVMe SMART
// log command), and none of them reaches the transport.
func TestConnRefusesLibraryReads(t *testing.T) {
	r := &recorder{}
	c := conn(r)
	for name, cdb := range map[string][]byte{
		"IDENTIFY DEVICE":       {0x85, 0x08, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xec, 0},
		"SMART READ DATA":       {0x85, 0x08, 0x0e, 0, 0xd0, 0, 0, 0, 0, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0},
		"SMART READ THRESHOLDS": {0x85, 0x08, 0x0e, 0, 0xd1, 0, 0, 0, 1, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0},
	} {
		err := c.scsiIn(name, cdb, make([]byte, ata.PageSize))
		require.ErrorIs(t, err, smart.ErrNotAllowed, name)
	}
	_, err := c.NVMeGetLog(0x02, 0xFFFFFFFF, 512)
	require.ErrorIs(t, err, smart.ErrNotAllowed)
	assert.Empty(t, r.cdbs)
	assert.Empty(t, r.nvme)
}

func TestErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    recorder
		want error
	}{
		{"EPERM", recorder{err: syscall.EPERM}, ErrPermission},
		{"EACCES", recorder{err: syscall.EACCES}, ErrPermission},
		{"host timeout", recorder{status: SCSIStatus{HostStatus: hostTimeout}}, ErrTimeout},
		{"illegal request", recorder{status: SCSIStatus{Status: statusCheckCondition, SenseLen: 18},
			sense: []byte{0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x20, 0}}, ErrUnsupported},
		{"aborted ATA command", recorder{status: SCSIStatus{Status: statusCheckCondition, SenseLen: 22},
			sense: []byte{0x72, 0x0B, 0, 0, 0, 0, 0, 14, 0x09, 0x0C, 0, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x51}}, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn(&tc.r).SMARTReadLog(ata.LogSelfTest, 1)
			require.Error(t, err)
			require.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, "SMART READ LOG 06h")
		})
	}
	t.Run("medium error is an error", func(t *testing.T) {
		r := recorder{status: SCSIStatus{Status: statusCheckCondition, SenseLen: 18},
			sense: []byte{0x70, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x11, 0}}
		_, err := conn(&r).SMARTReadLog(ata.LogSelfTest, 1)
		require.Error(t, err)
		assert.Equal(t, StatusError, classify(err))
	})
	t.Run("NVMe invalid field", func(t *testing.T) {
		_, err := conn(&recorder{err: &NVMeStatusError{Status: 0x4002}}).NVMeGetLog(0x01, 0xFFFFFFFF, 512)
		assert.ErrorIs(t, err, ErrUnsupported)
	})
	t.Run("NVMe internal error", func(t *testing.T) {
		_, err := conn(&recorder{err: &NVMeStatusError{Status: 0x0006}}).NVMeGetLog(0x01, 0xFFFFFFFF, 512)
		assert.Equal(t, StatusError, classify(err))
	})
	t.Run("deadline passed: nothing sent", func(t *testing.T) {
		r := &recorder{}
		_, err := NewConn(r, time.Now().Add(-time.Second)).SMARTReadLog(ata.LogSelfTest, 1)
		require.ErrorIs(t, err, ErrTimeout)
		assert.Empty(t, r.cdbs)
	})
	t.Run("unreadable sense", func(t *testing.T) {
		_, err := conn(&recorder{status: SCSIStatus{Status: statusCheckCondition, SenseLen: 1}, sense: []byte{0x70}}).SMARTReadLog(ata.LogSelfTest, 1)
		assert.ErrorContains(t, err, "unreadable sense")
	})
	assert.ErrorIs(t, classifyErrno(syscall.ENOTTY), ErrUnsupported)
}

func TestParseSupportedStatPages(t *testing.T) {
	page := func(num uint8, entries ...uint8) []byte {
		b := make([]byte, ata.PageSize)
		b[0], b[2], b[8] = 1, num, uint8(len(entries))
		copy(b[9:], entries)
		return b
	}
	got, err := parseSupportedStatPages(page(0, 0, 7, 1, 3, 1, 0xFF, 4))
	require.NoError(t, err)
	assert.Equal(t, []uint8{1, 3, 4, 7}, got, "sorted, unique, vendor pages left out")
	_, err = parseSupportedStatPages(page(2, 1))
	require.ErrorContains(t, err, "header names page 2")
	_, err = parseSupportedStatPages(make([]byte, 100))
	assert.ErrorContains(t, err, "100 bytes")
}

func FuzzParseSupportedStatPages(f *testing.F) {
	seed := make([]byte, ata.PageSize)
	seed[0], seed[8], seed[9], seed[10] = 1, 3, 0, 1
	seed[11] = 7
	f.Add(seed)
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		pages, err := parseSupportedStatPages(b)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, len(b), ata.PageSize)
		require.True(t, slices.IsSorted(pages))
		require.Len(t, slices.Compact(slices.Clone(pages)), len(pages))
		for _, p := range pages {
			require.True(t, p >= 1 && p <= maxDevStatPage)
			require.Contains(t, b[9:9+int(b[8])], p)
		}
	})
}
