//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// inflightEntries bounds the requests in flight that device time follows (~1 MiB); beyond it the
// oldest are evicted and their completions count as Drops.NoIssueTime.
const inflightEntries = 16384

// errorsPerDevice sizes the error map: distinct {direction, status} pairs one device may show.
const errorsPerDevice = 16

// Probe is the loaded and attached BPF program. Its methods are safe for concurrent use.
type Probe struct {
	mu       sync.Mutex
	coll     *ebpf.Collection
	links    []link.Link
	progs    []string
	hook     string
	started  time.Time
	statuses map[uint8]string
	closed   bool

	// Reused by Collect: one slot per map entry.
	histKeys []rawKey
	histVals []rawHist
	errKeys  []rawKey
	errVals  []uint64
}

// Open loads the program, sized and configured for this kernel, and attaches it. When BPF cannot be
// used here the error is an *UnavailableError whose message names the cause and the fix.
func Open(opts Options) (*Probe, error) {
	st := readProcessState()
	kspec, err := loadKernelBTF()
	if err != nil {
		return nil, err
	}
	kcfg, err := inspectKernel(kspec, st.release)
	if err != nil {
		return nil, err
	}
	spec, err := loadBiolat()
	if err != nil {
		return nil, &UnavailableError{Cause: CauseRejected, Detail: st.release, Err: err}
	}
	progs, err := configure(spec, kcfg, opts)
	if err != nil {
		return nil, &UnavailableError{Cause: CauseRejected, Detail: st.release, Err: err}
	}
	// A no-op where maps are charged to the memory cgroup (5.11+); needed before.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, classifyLoad(err, st)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: kspec},
	})
	if err != nil {
		return nil, classifyLoad(err, st)
	}
	p := &Probe{
		coll:     coll,
		progs:    progs,
		hook:     "block_rq_complete",
		statuses: statusTable(st.kernel),
	}
	if kcfg.ioDone {
		p.hook = "block_io_done"
	}
	if kcfg.statusIsErrno {
		p.statuses = errnoTable()
	}
	// Issue before completion, so that device time has a start for what completes next.
	for _, name := range progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name], AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			_ = p.Close() // the attach error is the one to report
			return nil, classifyLoad(fmt.Errorf("attach %s: %w", name, err), st)
		}
		p.links = append(p.links, l)
	}
	p.started = time.Now()
	p.histKeys = make([]rawKey, spec.Maps["hists"].MaxEntries)
	p.histVals = make([]rawHist, len(p.histKeys))
	p.errKeys = make([]rawKey, spec.Maps["errors"].MaxEntries)
	p.errVals = make([]uint64, len(p.errKeys))
	return p, nil
}

// configure sets the program's constants and map sizes and removes the programs this kernel and
// these options do not use; it returns the programs to attach, in attach order.
func configure(spec *ebpf.CollectionSpec, k kernelConfig, opts Options) ([]string, error) {
	devices := cmp.Or(opts.MaxDevices, defaultMaxDevices)
	kinds := 1
	progs := []string{}
	if opts.DeviceTime {
		kinds = 2
		progs = append(progs, biolatProgOnRqIssue)
	}
	progs = append(progs, biolatProgOnRqComplete)
	if k.ioDone {
		progs = append(progs, biolatProgOnIoDone)
	}
	for name := range spec.Programs {
		if !slices.Contains(progs, name) {
			delete(spec.Programs, name)
		}
	}
	spec.Maps["hists"].MaxEntries = uint32(devices * int(numDirections) * kinds)
	spec.Maps["errors"].MaxEntries = uint32(devices * errorsPerDevice)
	if opts.DeviceTime {
		spec.Maps["inflight"].MaxEntries = inflightEntries
	}
	t, base := SlotConstants()
	vars := []struct {
		name  string
		value any
	}{
		{biolatVarThresholds, t},
		{biolatVarIndexBase, base},
		{biolatVarRqfIoStat, k.rqfIOStat},
		{biolatVarRqfFlushSeq, k.rqfFlushSeq},
		{biolatVarRqfQuiet, k.rqfQuiet},
		{biolatVarLatencyAtComplete, flag(!k.ioDone)},
		{biolatVarDeviceTime, flag(opts.DeviceTime)},
		{biolatVarIssueTwoArgs, flag(k.issueTwoArgs)},
		{biolatVarStatusIsErrno, flag(k.statusIsErrno)},
	}
	for _, v := range vars {
		if err := spec.Variables[v.name].Set(v.value); err != nil {
			return nil, fmt.Errorf("set %s: %w", v.name, err)
		}
	}
	return progs, nil
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Hook is the tracepoint latency is taken at: "block_io_done" (6.5+) or "block_rq_complete".
func (p *Probe) Hook() string { return p.hook }

// Started is when the probe attached: the start time of every cumulative series (and of a device's
// series again after Forget, from the moment Forget returned).
func (p *Probe) Started() time.Time { return p.started }

// Collect reads every histogram, error count and drop counter: one scrape's Snapshot.
func (p *Probe) Collect() (Snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Snapshot{}, errors.New("biolat: probe closed")
	}
	var s Snapshot
	n, err := readAll(p.coll.Maps["hists"], p.histKeys, p.histVals)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read histograms: %w", err)
	}
	for i := range n {
		dev, dir, kind, err := decodeHistKey(p.histKeys[i][:])
		if err != nil {
			return Snapshot{}, err
		}
		s.Series = append(s.Series, Series{Dev: dev, Direction: dir, Kind: kind, Histogram: DecodeHist(p.histVals[i][:])})
	}
	n, err = readAll(p.coll.Maps["errors"], p.errKeys, p.errVals)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read errors: %w", err)
	}
	for i := range n {
		dev, dir, code, err := decodeErrKey(p.errKeys[i][:])
		if err != nil {
			return Snapshot{}, err
		}
		s.Errors = append(s.Errors, ErrorCount{Dev: dev, Direction: dir, Status: statusName(p.statuses, code), Count: p.errVals[i]})
	}
	if s.Drops, err = p.drops(); err != nil {
		return Snapshot{}, err
	}
	for _, name := range p.progs {
		st, err := p.coll.Programs[name].Stats()
		if err != nil {
			return Snapshot{}, fmt.Errorf("stats of %s: %w", name, err)
		}
		s.Drops.NotRun += st.RecursionMisses
	}
	sortSnapshot(&s)
	return s, nil
}

// readAll reads a whole hash map into keys and vals (as long as its max_entries), in one batch where
// the kernel has batch operations (5.6+).
func readAll[K, V any](m *ebpf.Map, keys []K, vals []V) (int, error) {
	var cursor ebpf.MapBatchCursor
	n := 0
	for n < len(keys) {
		got, err := m.BatchLookup(&cursor, keys[n:], vals[n:], nil)
		n += got
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return n, nil
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if n > 0 {
		return n, nil
	}
	it := m.Iterate()
	for n < len(keys) && it.Next(&keys[n], &vals[n]) {
		n++
	}
	return n, it.Err()
}

func (p *Probe) drops() (Drops, error) {
	var d Drops
	for i, dst := range []*uint64{&d.NoStartTime, &d.HistogramsFull, &d.ErrorsFull, &d.NoIssueTime} {
		var perCPU []uint64
		if err := p.coll.Maps["drops"].Lookup(uint32(i), &perCPU); err != nil {
			return Drops{}, fmt.Errorf("read drops: %w", err)
		}
		for _, v := range perCPU {
			*dst += v
		}
	}
	return d, nil
}

// Forget deletes a device's histograms and error counts (call it when the device leaves
// /sys/block); if the device number comes back, its series start again from zero.
func (p *Probe) Forget(d Dev) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("biolat: probe closed")
	}
	for dir := range numDirections {
		for kind := range numKinds {
			k := histKey(d, dir, kind)
			if err := p.coll.Maps["hists"].Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("forget %s: %w", d, err)
			}
		}
	}
	var gone []rawKey
	var k rawKey
	var v uint64
	it := p.coll.Maps["errors"].Iterate()
	for it.Next(&k, &v) {
		if dev, _, _, err := decodeErrKey(k[:]); err == nil && dev == d {
			gone = append(gone, k)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("forget %s: %w", d, err)
	}
	for i := range gone {
		if err := p.coll.Maps["errors"].Delete(&gone[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("forget %s: %w", d, err)
		}
	}
	return nil
}

// Stats reports the attached programs' run counts and times (see ProgramStats).
func (p *Probe) Stats() ([]ProgramStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return programStats(p.coll, p.progs, "")
}

// programStats is the run counts and times of progs in coll, named prefix+name.
func programStats(coll *ebpf.Collection, progs []string, prefix string) ([]ProgramStats, error) {
	out := make([]ProgramStats, 0, len(progs))
	for _, name := range progs {
		st, err := coll.Programs[name].Stats()
		if err != nil {
			return nil, fmt.Errorf("stats of %s: %w", name, err)
		}
		out = append(out, ProgramStats{Program: prefix + name, RunTime: st.Runtime, RunCount: st.RunCount})
	}
	return out, nil
}

// Close detaches and unloads the program.
func (p *Probe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return detach(&p.closed, p.links, p.coll)
}

// detach closes links and unloads coll, once (closed says whether it was).
func detach(closed *bool, links []link.Link, coll *ebpf.Collection) error {
	if *closed {
		return nil
	}
	*closed = true
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	coll.Close()
	return errors.Join(errs...)
}
