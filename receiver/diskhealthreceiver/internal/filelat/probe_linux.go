//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// syscallOps is which system calls are file operations, by this architecture's numbers (the
// program looks the number up in its syscall_ops table).
var syscallOps = map[uint32]Op{
	unix.SYS_READ: Read, unix.SYS_PREAD64: Read, unix.SYS_READV: Read, unix.SYS_PREADV: Read, unix.SYS_PREADV2: Read,
	unix.SYS_WRITE: Write, unix.SYS_PWRITE64: Write, unix.SYS_WRITEV: Write, unix.SYS_PWRITEV: Write, unix.SYS_PWRITEV2: Write,
	unix.SYS_FSYNC: Fsync, unix.SYS_FDATASYNC: Fsync,
}

// tsCompat is x86's thread_info.status bit of a task in a 32-bit system call, whose numbers are
// i386's: without it a 32-bit lseek (19) would count as readv.
const tsCompat = 0x2

// Probe is the loaded and attached BPF program. Its methods are safe for concurrent use.
type Probe struct {
	mu      sync.Mutex
	coll    *ebpf.Collection
	links   []link.Link
	started time.Time
	closed  bool
}

// Open loads the program, sized for opts, and attaches it. When BPF cannot be used here the error is
// an *biolat.UnavailableError whose message names the cause and the fix, as biolat's.
func Open(opts Options) (*Probe, error) {
	spec, err := loadFilelat()
	if err != nil {
		return nil, biolat.Unavailable(measure, err)
	}
	if err := configure(spec, opts); err != nil {
		return nil, biolat.Unavailable(measure, err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, biolat.Unavailable(measure, fmt.Errorf("filelat: load: %w", err))
	}
	p := &Probe{coll: coll}
	// The page-cache program first, so that no read's exit precedes it.
	for _, name := range []string{filelatProgOnAddToPageCache, filelatProgOnExit, filelatProgOnEnter} {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name], AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			_ = p.Close() // the attach error is the one to report
			return nil, biolat.Unavailable(measure, fmt.Errorf("filelat: attach %s: %w", name, err))
		}
		p.links = append(p.links, l)
	}
	p.started = time.Now()
	return p, nil
}

func configure(spec *ebpf.CollectionSpec, opts Options) error {
	spec.Maps[filelatMapFiles].MaxEntries = uint32(cmp.Or(opts.MaxMounts, defaultMaxMounts) * int(maxOp))
	perCgroup := uint32(0)
	if opts.PerCgroup {
		perCgroup = 1
		spec.Maps[filelatMapCgfiles].MaxEntries = uint32(cmp.Or(opts.MaxCgroupSeries, defaultMaxCgroupSeries))
	}
	table := spec.Maps[filelatMapSyscallOps]
	table.Contents = table.Contents[:0]
	for nr, op := range syscallOps {
		table.Contents = append(table.Contents, ebpf.MapKV{Key: nr, Value: uint8(op)})
	}
	t, base := biolat.SlotConstants()
	compat := uint32(0)
	if runtime.GOARCH == "amd64" {
		compat = tsCompat
	}
	vars := []struct {
		name  string
		value any
	}{
		{filelatVarThresholds, t},
		{filelatVarIndexBase, base},
		{filelatVarPageShift, uint32(bits.TrailingZeros(uint(os.Getpagesize())))},
		{filelatVarCompatStatus, compat},
		{filelatVarPerCgroup, perCgroup},
	}
	for _, v := range vars {
		if err := spec.Variables[v.name].Set(v.value); err != nil {
			return fmt.Errorf("filelat: set %s: %w", v.name, err)
		}
	}
	return nil
}

// Started is when the probe attached: the start time of every cumulative series (and of a mount's
// series again after Forget, from the moment Forget returned).
func (p *Probe) Started() time.Time { return p.started }

// Collect reads every series and the drop counter: one scrape's Snapshot.
func (p *Probe) Collect() (Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Snapshot{}, errors.New("filelat: probe closed")
	}
	var s Snapshot
	var err error
	if s.Series, err = readEntries(p.coll.Maps[filelatMapFiles], "series", decodeSeries); err != nil {
		return Snapshot{}, err
	}
	sortSeries(s.Series)
	if s.Cgroups, err = readEntries(p.coll.Maps[filelatMapCgfiles], "cgroup series", decodeCgroupSeries); err != nil {
		return Snapshot{}, err
	}
	sortCgroupSeries(s.Cgroups)
	for reason, dst := range []*uint64{&s.Drops.Full, &s.Drops.CgroupsFull} {
		var perCPU []uint64
		if err := p.coll.Maps[filelatMapDrops].Lookup(uint32(reason), &perCPU); err != nil {
			return Snapshot{}, fmt.Errorf("filelat: read drops: %w", err)
		}
		for _, n := range perCPU {
			*dst += n
		}
	}
	return s, nil
}

// readEntries decodes every entry of m (what names it in an error).
func readEntries[T any](m *ebpf.Map, what string, decode func(k, v []byte) (T, error)) ([]T, error) {
	var out []T
	var k, v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		x, err := decode(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("filelat: read %s: %w", what, err)
	}
	return out, nil
}

// Forget deletes the series of mounts that are gone (Resolve's gone), so that a mount ID the kernel
// hands out again starts from zero.
func (p *Probe) Forget(mountIDs ...uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.coll.Maps[filelatMapFiles]
	for _, id := range mountIDs {
		for op := Read; op <= maxOp; op++ {
			if err := m.Delete(fileKey(id, op)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("filelat: forget mount %d: %w", id, err)
			}
		}
	}
	gone := make(map[uint32]bool, len(mountIDs))
	for _, id := range mountIDs {
		gone[id] = true
	}
	return p.forgetCgroupSeries(func(k cgroupKey) bool { return gone[k.mountID] })
}

// ForgetCgroups deletes the per-cgroup series of cgroups that are gone (removed: not in
// cgroupio.IDs), so that their entries make room for new ones. Their calls stay in their mounts'
// series.
func (p *Probe) ForgetCgroups(cgroupIDs ...uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	gone := make(map[uint64]bool, len(cgroupIDs))
	for _, id := range cgroupIDs {
		gone[id] = true
	}
	return p.forgetCgroupSeries(func(k cgroupKey) bool { return gone[k.cgroupID] })
}

// forgetCgroupSeries deletes the per-cgroup entries whose key drop says; p.mu is held.
func (p *Probe) forgetCgroupSeries(drop func(cgroupKey) bool) error {
	if p.closed {
		return errors.New("filelat: probe closed")
	}
	m := p.coll.Maps[filelatMapCgfiles]
	var keys [][]byte
	var k, v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		if key, ok := decodeCgroupKey(k); ok && drop(key) {
			keys = append(keys, slices.Clone(k))
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("filelat: read cgroup series: %w", err)
	}
	for _, key := range keys {
		if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("filelat: forget cgroup series: %w", err)
		}
	}
	return nil
}

// Close detaches and unloads the program.
func (p *Probe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.coll.Close()
	return errors.Join(errs...)
}
