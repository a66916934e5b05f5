package dm

import (
	"context"
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestIoctlNumbers(t *testing.T) {
	// _IOWR(0xFD, n, struct dm_ioctl), sizeof(struct dm_ioctl) == 312.
	assert.Equal(t, uint32(0xC138FD00), uint32(IoctlVersion))
	assert.Equal(t, uint32(0xC138FD02), uint32(IoctlListDevices))
	assert.Equal(t, uint32(0xC138FD0C), uint32(IoctlTableStatus))
}

func TestAllowlist(t *testing.T) {
	require.NoError(t, Allowed(IoctlVersion, 0))
	require.NoError(t, Allowed(IoctlListDevices, 0))
	require.NoError(t, Allowed(IoctlTableStatus, flagNoFlush))
	require.NoError(t, Allowed(IoctlTableStatus, flagNoFlush|flagStatusTable))
	require.ErrorIs(t, Allowed(IoctlTableStatus, 0), ErrNotAllowed, "status without noflush commits thin-pool metadata")
	require.ErrorIs(t, Allowed(IoctlTableStatus, flagNoFlush|1<<12), ErrNotAllowed)
	require.ErrorIs(t, Allowed(IoctlVersion, flagReadOnly), ErrNotAllowed)
	for cmd := uint32(0); cmd < 20; cmd++ {
		n := uint32(ioctlBase) | cmd
		if cmd == cmdVersion || cmd == cmdListDevices || cmd == cmdTableStatus {
			continue
		}
		require.ErrorIs(t, Allowed(n, 0), ErrNotAllowed, "cmd %d (create, remove, rename, suspend, load, clear, message, wait, ...)", cmd)
		require.ErrorIs(t, Allowed(n, flagNoFlush), ErrNotAllowed)
	}
	assert.Len(t, AllowedIoctls(), 3)
}

// fakeKernel answers the three ioctls as drivers/md/dm-ioctl.c does.
type fakeKernel struct {
	devs   []fakeDev
	calls  []uint32
	errno  error
	block  chan struct{}
	minBuf int // answers need at least this many bytes, else BUFFER_FULL
}

type fakeDev struct {
	name, uuid string
	major, mnr uint32
	targets    []Target
}

func encodeDev(major, minor uint32) uint64 {
	return uint64(minor&0xFF) | uint64(major)<<8 | uint64(minor&^0xFF)<<12
}

func (k *fakeKernel) ioctl(number uint32, buf []byte) error {
	if k.block != nil {
		<-k.block
	}
	k.calls = append(k.calls, number)
	if err := Allowed(number, binary.NativeEndian.Uint32(buf[28:])); err != nil {
		panic("a call reached the kernel past the allowlist: " + err.Error())
	}
	if k.errno != nil {
		return k.errno
	}
	ne := binary.NativeEndian
	ne.PutUint32(buf[0:], 4)
	ne.PutUint32(buf[4:], 48)
	if k.minBuf > len(buf) {
		ne.PutUint32(buf[28:], ne.Uint32(buf[28:])|flagBufferFull)
		return nil
	}
	start := int(ne.Uint32(buf[16:]))
	out := buf[start:]
	switch number {
	case IoctlListDevices:
		// As list_devices (drivers/md/dm-ioctl.c) answers: with no devices it needs no bytes, so
		// data_size is data_start, and it writes dev 0 ("no data") past that end.
		off := 0
		ne.PutUint64(out, 0)
		for i, d := range k.devs {
			ne.PutUint64(out[off:], encodeDev(d.major, d.mnr))
			copy(out[off+12:], d.name+"\x00")
			rec := (12 + len(d.name) + 1 + 8 + 7) &^ 7 // name, event_nr+flags, aligned
			if i+1 < len(k.devs) {
				ne.PutUint32(out[off+8:], uint32(rec))
			}
			off += rec
		}
		ne.PutUint32(buf[12:], uint32(start+off))
	case IoctlTableStatus:
		dev := ne.Uint64(buf[40:])
		var d *fakeDev
		for i := range k.devs {
			if encodeDev(k.devs[i].major, k.devs[i].mnr) == dev {
				d = &k.devs[i]
			}
		}
		if d == nil {
			return syscall.ENXIO
		}
		copy(buf[offName:offName+nameLen], d.name+"\x00")
		copy(buf[offUUID:offUUID+uuidLen], d.uuid+"\x00")
		table := ne.Uint32(buf[28:])&flagStatusTable != 0
		ne.PutUint32(buf[20:], uint32(len(d.targets)))
		ne.PutUint32(buf[28:], flagActive)
		off := 0
		for _, tg := range d.targets {
			ne.PutUint64(out[off:], tg.Start)
			ne.PutUint64(out[off+8:], tg.Length)
			copy(out[off+24:off+40], tg.Type)
			p := tg.Status
			if table {
				p = tg.Table
			}
			copy(out[off+40:], p+"\x00")
			// next: the following record's offset from the payload start.
			next := (off + 40 + len(p) + 1 + 7) &^ 7
			ne.PutUint32(out[off+20:], uint32(next))
			off = next
		}
		ne.PutUint32(buf[12:], uint32(start+off))
	}
	return nil
}

func poolFixture() *fakeKernel {
	return &fakeKernel{devs: []fakeDev{
		{name: "vg0-pool0-tpool", uuid: "LVM-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-tpool", major: 253, mnr: 2,
			targets: []Target{{Start: 0, Length: 20971520, Type: "thin-pool",
				Status: "1 196/4096 1024/163840 - rw discard_passdown queue_if_no_space - 1024", Table: "253:0 253:1 128 32768 1 skip_block_zeroing"}}},
		{name: "mpatha", uuid: "mpath-3600508b400105e210000900000490000", major: 253, mnr: 300,
			targets: []Target{{Length: 2097152, Type: "multipath", Status: "2 0 0 0 1 1 A 0 2 0 8:16 A 0 8:32 F 1", Table: "0 0 1 1 round-robin 0 2 1 8:16 1 8:32 1"}}},
	}}
}

func TestReaderReadsDevices(t *testing.T) {
	k := poolFixture()
	r := NewReader(ReaderConfig{Open: func(string) (*Client, func() error, error) {
		return NewClient(k.ioctl), func() error { return nil }, nil
	}})
	devs, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 2)
	assert.Equal(t, "vg0-pool0-tpool", devs[0].Name)
	assert.Equal(t, "tpool", ParseUUID(devs[0].UUID).Layer)
	assert.Equal(t, [2]uint32{253, 2}, [2]uint32{devs[0].Major, devs[0].Minor})
	assert.Equal(t, "dm-300", devs[1].KernelName(), "minor above 255 survives the kernel's encoding")
	require.Len(t, devs[0].Targets, 1)
	assert.Equal(t, poolFixture().devs[0].targets[0], devs[0].Targets[0])
	assert.Equal(t, []uint32{IoctlVersion, IoctlListDevices, IoctlTableStatus, IoctlTableStatus, IoctlTableStatus, IoctlTableStatus}, k.calls)
	require.NoError(t, r.Close())
}

func TestBufferFullGrows(t *testing.T) {
	k := poolFixture()
	k.minBuf = 100 << 10
	c := NewClient(k.ioctl)
	devs, err := c.List()
	require.NoError(t, err)
	assert.Len(t, devs, 2)
	assert.GreaterOrEqual(t, c.bufSize, 100<<10)
	k.minBuf = maxBuffer * 2
	c = NewClient(k.ioctl)
	_, err = c.List()
	assert.ErrorContains(t, err, "larger than")
}

func TestNoDevicesAndVanishedDevice(t *testing.T) {
	c := NewClient((&fakeKernel{}).ioctl)
	devs, err := c.List()
	require.NoError(t, err)
	assert.Empty(t, devs)

	k := poolFixture()
	r := NewReader(ReaderConfig{Open: func(string) (*Client, func() error, error) {
		return NewClient(func(n uint32, b []byte) error {
			if n == IoctlListDevices {
				err := k.ioctl(n, b)
				k.devs = k.devs[1:] // removed right after the listing
				return err
			}
			return k.ioctl(n, b)
		}), func() error { return nil }, nil
	}})
	devs, err = r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, devs, 1)
	assert.Equal(t, "mpatha", devs[0].Name)
}

func TestPermissionIsTyped(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM} {
		k := &fakeKernel{errno: errno}
		r := NewReader(ReaderConfig{Open: func(string) (*Client, func() error, error) {
			return NewClient(k.ioctl), func() error { return nil }, nil
		}})
		_, err := r.Read(context.Background())
		require.ErrorIs(t, err, ErrPermission)
		var pe *PermissionError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "DM_VERSION", pe.Op)
		require.ErrorIs(t, err, errno)
		assert.Contains(t, err.Error(), "CAP_SYS_ADMIN")
	}
}

func TestStuckIoctlTimesOut(t *testing.T) {
	k := poolFixture()
	k.block = make(chan struct{})
	r := NewReader(ReaderConfig{Timeout: 30 * time.Millisecond, Open: func(string) (*Client, func() error, error) {
		return NewClient(k.ioctl), func() error { return nil }, nil
	}})
	_, err := r.Read(context.Background())
	require.ErrorIs(t, err, bounded.ErrTimeout)
	_, err = r.Read(context.Background())
	require.ErrorIs(t, err, bounded.ErrInFlight)
	require.NoError(t, r.Close(), "Close never waits for a stuck ioctl")
	close(k.block)
	r.guard.Wait()
}

func TestOpenControlMissingNode(t *testing.T) {
	_, err := OpenControl(t.TempDir() + "/control")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnsupported)
}
