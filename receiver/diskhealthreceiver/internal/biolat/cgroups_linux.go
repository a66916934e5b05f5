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

// ownerEntries bounds the requests whose owner is held between start and completion (32 B each with
// the hash's overhead, ~0.5 MiB); the oldest are evicted beyond it and complete as NoOwner.
const ownerEntries = 16384

// CgroupProbe is the loaded and attached per-cgroup program (bpf/cglat.bpf.c). Its methods are safe
// for concurrent use.
type CgroupProbe struct {
	mu      sync.Mutex
	coll    *ebpf.Collection
	links   []link.Link
	progs   []string
	hook    string
	started time.Time
	closed  bool
	// retired sums, per device and direction, the final values of the freed entries of removed cgroups.
	retired map[cgKey]*rawCgVal
	// dying are the entries of removed cgroups seen at the last Collect: freed at the next one.
	dying map[cgKey]bool

	// Reused by Collect: one slot per map entry.
	keys   []rawCgKey
	vals   []rawCgVal
	okeys  []rawCgKey
	ovals  []rawCgVal
	lookup rawCgVal
}

// OpenCgroups loads the per-cgroup program, configured for this kernel from its BTF as Open is, and
// attaches it: the owner is read at tp_btf/block_io_start (6.5+) or tp_btf/block_rq_issue, the
// latency taken at Open's completion hook. Errors are *UnavailableError as Open's.
func OpenCgroups(opts CgroupOptions) (*CgroupProbe, error) {
	st := readProcessState()
	kspec, err := loadKernelBTF()
	if err != nil {
		return nil, err
	}
	kcfg, err := inspectKernel(kspec, st.release)
	if err != nil {
		return nil, err
	}
	spec, err := loadCglat()
	if err != nil {
		return nil, &UnavailableError{Cause: CauseRejected, Detail: st.release, Err: err}
	}
	_, err = tracepointParams(kspec, "block_io_start")
	ioStart := err == nil && kcfg.ioDone
	progs, err := configureCgroups(spec, kcfg, ioStart, opts)
	if err != nil {
		return nil, &UnavailableError{Cause: CauseRejected, Detail: st.release, Err: err}
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, classifyLoad(err, st)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: kspec},
	})
	if err != nil {
		return nil, classifyLoad(err, st)
	}
	p := &CgroupProbe{coll: coll, progs: progs, hook: "block_rq_complete", retired: map[cgKey]*rawCgVal{}, dying: map[cgKey]bool{}}
	if kcfg.ioDone {
		p.hook = "block_io_done"
	}
	// Start before completion, so that what completes next has its owner.
	for _, name := range progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[name], AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			_ = p.Close() // the attach error is the one to report
			return nil, classifyLoad(fmt.Errorf("attach %s: %w", name, err), st)
		}
		p.links = append(p.links, l)
	}
	p.started = time.Now()
	p.keys = make([]rawCgKey, spec.Maps[cglatMapCghists].MaxEntries)
	p.vals = make([]rawCgVal, len(p.keys))
	p.okeys = make([]rawCgKey, spec.Maps[cglatMapOthers].MaxEntries)
	p.ovals = make([]rawCgVal, len(p.okeys))
	return p, nil
}

// configureCgroups is configure for cglat: constants, map sizes, and the programs to attach in order.
func configureCgroups(spec *ebpf.CollectionSpec, k kernelConfig, ioStart bool, opts CgroupOptions) ([]string, error) {
	progs := []string{cglatProgOnRqIssue, cglatProgOnRqComplete}
	if ioStart {
		progs = []string{cglatProgOnIoStart, cglatProgOnIoDone}
	}
	for name := range spec.Programs {
		if !slices.Contains(progs, name) {
			delete(spec.Programs, name)
		}
	}
	spec.Maps[cglatMapCghists].MaxEntries = uint32(2 * cmp.Or(opts.MaxCgroups, defaultMaxCgroups))
	spec.Maps[cglatMapOthers].MaxEntries = uint32(int(numDirections) * cmp.Or(opts.MaxDevices, defaultMaxDevices))
	spec.Maps[cglatMapOwners].MaxEntries = ownerEntries
	t, base := SlotConstants()
	vars := []struct {
		name  string
		value any
	}{
		{cglatVarThresholds, t},
		{cglatVarIndexBase, base},
		{cglatVarRqfIoStat, k.rqfIOStat},
		{cglatVarRqfFlushSeq, k.rqfFlushSeq},
		{cglatVarLatencyAtComplete, flag(!ioStart)},
		{cglatVarIssueTwoArgs, flag(k.issueTwoArgs)},
		{cglatVarOwnerIsTask, flag(opts.ownerIsTask)},
	}
	for _, v := range vars {
		if err := spec.Variables[v.name].Set(v.value); err != nil {
			return nil, fmt.Errorf("set %s: %w", v.name, err)
		}
	}
	return progs, nil
}

// Hook is the completion tracepoint, as Probe.Hook.
func (p *CgroupProbe) Hook() string { return p.hook }

// Started is when the probe attached: the start time of every cumulative series.
func (p *CgroupProbe) Started() time.Time { return p.started }

// Collect reads every per-cgroup histogram, then calls live for the cgroups that exist (id → path, as
// cgroupio.IDs returns them; called after the read, so that a cgroup missing from it was gone when
// its entry was read). The entries of cgroups not in it are in their device's Other series from then
// on, and freed (deleted from the table, their final counts kept in Other) at the next Collect. No
// series ever has an id without a live cgroup.
func (p *CgroupProbe) Collect(live func() (map[uint64]string, error)) (CgroupSnapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return CgroupSnapshot{}, errors.New("biolat: probe closed")
	}
	entries, err := p.read(p.coll.Maps[cglatMapCghists], p.keys, p.vals)
	if err != nil {
		return CgroupSnapshot{}, fmt.Errorf("read cgroup histograms: %w", err)
	}
	paths, err := live()
	if err != nil {
		return CgroupSnapshot{}, fmt.Errorf("list cgroups: %w", err)
	}
	var s CgroupSnapshot
	var dead []cgKey
	var dying []cgEntry
	s.Cgroups, dead = splitCgroups(entries, paths)
	wasDying := p.dying
	p.dying = make(map[cgKey]bool, len(dead))
	for _, k := range dead {
		if !wasDying[k] {
			// Freed at the next Collect, not now: a completion that looked its entry up just before
			// a delete would add to a freed element and be lost. A cgroup gone for a whole interval
			// has no request left in flight but in rare cases (a request slower than the interval).
			p.dying[k] = true
			continue
		}
		// The value at deletion, not the one read.
		raw := encodeCgKey(k)
		err := p.coll.Maps[cglatMapCghists].LookupAndDelete(&raw, &p.lookup)
		if errors.Is(err, ebpf.ErrNotSupported) { // before 5.14
			if err = p.coll.Maps[cglatMapCghists].Lookup(&raw, &p.lookup); err == nil {
				err = p.coll.Maps[cglatMapCghists].Delete(&raw)
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			continue
		}
		if err != nil {
			return CgroupSnapshot{}, fmt.Errorf("free cgroup %d: %w", k.cgid, err)
		}
		retire(p.retired, k, p.lookup[:])
		s.Counts.Freed++
	}
	for _, e := range entries {
		if p.dying[e.key] {
			dying = append(dying, e)
		}
	}
	others, err := p.read(p.coll.Maps[cglatMapOthers], p.okeys, p.ovals)
	if err != nil {
		return CgroupSnapshot{}, fmt.Errorf("read other histograms: %w", err)
	}
	s.Other = otherSeries(append(others, dying...), p.retired)
	if err := p.counts(&s.Counts); err != nil {
		return CgroupSnapshot{}, err
	}
	return s, nil
}

func (p *CgroupProbe) read(m *ebpf.Map, keys []rawCgKey, vals []rawCgVal) ([]cgEntry, error) {
	n, err := readAll(m, keys, vals)
	if err != nil {
		return nil, err
	}
	out := make([]cgEntry, n)
	for i := range n {
		k, err := decodeCgKey(keys[i][:])
		if err != nil {
			return nil, err
		}
		out[i] = cgEntry{key: k, val: vals[i][:]}
	}
	return out, nil
}

func (p *CgroupProbe) counts(c *CgroupCounts) error {
	for i, dst := range []*uint64{&c.NoStartTime, &c.Unattributed, &c.NoOwner, &c.TableFull, &c.OthersFull} {
		var perCPU []uint64
		if err := p.coll.Maps[cglatMapCounts].Lookup(uint32(i), &perCPU); err != nil {
			return fmt.Errorf("read counts: %w", err)
		}
		for _, v := range perCPU {
			*dst += v
		}
	}
	for _, name := range p.progs {
		st, err := p.coll.Programs[name].Stats()
		if err != nil {
			return fmt.Errorf("stats of %s: %w", name, err)
		}
		c.NotRun += st.RecursionMisses
	}
	return nil
}

// Stats reports the attached programs' run counts and times, as Probe.Stats.
func (p *CgroupProbe) Stats() ([]ProgramStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return programStats(p.coll, p.progs, "cglat_")
}

// Close detaches and unloads the program.
func (p *CgroupProbe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return detach(&p.closed, p.links, p.coll)
}
