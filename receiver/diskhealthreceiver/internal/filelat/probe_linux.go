//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
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
	var k, v []byte
	it := p.coll.Maps[filelatMapFiles].Iterate()
	for it.Next(&k, &v) {
		x, err := decodeSeries(k, v)
		if err != nil {
			return Snapshot{}, err
		}
		s.Series = append(s.Series, x)
	}
	if err := it.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("filelat: read series: %w", err)
	}
	sortSeries(s.Series)
	var perCPU []uint64
	if err := p.coll.Maps[filelatMapDrops].Lookup(uint32(0), &perCPU); err != nil {
		return Snapshot{}, fmt.Errorf("filelat: read drops: %w", err)
	}
	for _, n := range perCPU {
		s.Drops.Full += n
	}
	return s, nil
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
