// Package tick reads what several sources of one receiver need from the same tick once: /proc/diskstats
// and the block-device identity of its devices (sysfs, through the one blockdev.Cache). iostat, latency,
// cgroups and stack each run in their own scraper controller goroutine, at their own interval; they share
// one Shared, each through its own Reader.
//
// # The reuse rule
//
// A source whose interval is I, asking at time t, is given the latest snapshot when that snapshot was read
// at or after t − I/2 and this source has not been given it before; otherwise /proc/diskstats is read
// again, and that read becomes the latest snapshot. So sources whose ticks fall within half an interval of
// each other (the default: every source at the receiver's collection_interval, started together) share
// one read per tick; no source ever sees a sample more than half its interval old, nor the same sample
// twice (its rates always span a real interval), nor a sample older than its previous one. A read that
// fails is never shared: the next source to ask reads again.
//
// A snapshot is used under the Shared's lock (Reader.Use), so one source's scrape never sees another's
// read or identity refresh halfway; waiting for the lock honours the scrape's context.
package tick // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"

import (
	"bytes"
	"context"
	"path/filepath"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
)

// Shared is the snapshot of one receiver's sources. Its methods are safe for concurrent use.
type Shared struct {
	lock   chan struct{} // a mutex whose wait can be abandoned when the scrape's context ends
	path   string        // <root>/proc/diskstats
	sysDir string        // <root>/sys
	now    func() time.Time
	reader diskstats.FileReader
	parser diskstats.Parser
	ids    blockdev.Cache
	devs   []blockdev.Dev
	snap   Snapshot
	seq    uint64 // of the latest good read; 0: none to share
	idsSeq uint64 // the read ids was last refreshed for
	owner  *Reader
}

// New returns the shared snapshot of the tree at root (root_path). now is the clock of the sample
// times (time.Now outside tests); open opens /proc/diskstats (nil: os.Open; tests count reads).
func New(root string, now func() time.Time, open func(string) (diskstats.File, error)) *Shared {
	s := &Shared{
		lock:   make(chan struct{}, 1),
		path:   filepath.Join(root, "proc", "diskstats"),
		sysDir: filepath.Join(root, "sys"),
		now:    now,
	}
	s.reader.Open = open
	return s
}

// Reader is one source's view of a Shared. Nil-safe: a nil *Shared gives a nil Reader. The first reader
// owns the input (see Owns): the receiver asks for them in its registry's order, for running sources only.
func (s *Shared) Reader(interval time.Duration) *Reader {
	if s == nil {
		return nil
	}
	r := &Reader{sh: s, maxAge: interval / 2}
	if s.owner == nil {
		s.owner = r
	}
	return r
}

// Owns reports whether this reader's source speaks for the shared input. A problem of the input itself
// (/proc/diskstats unreadable or empty, its bad lines, a device's unreadable sysfs identity) is one
// problem for the receiver, said in one source's words: the owner's, which reports it; the other sources
// leave it out of their scrape errors (their own consequences of it they still report). Each source may
// read another snapshot (see the reuse rule), so were every source to report it, one bad line would be
// several problems, one per source and line number.
func (r *Reader) Owns() bool { return r.sh.owner == r }

// Own is err when this reader owns the input, else nil: the error of a Use or of the input's problems,
// for a source's scrape errors.
func (r *Reader) Own(err error) error {
	if !r.Owns() {
		return nil
	}
	return err
}

// OrOwn is r, or where r is nil (a source run without a receiver: its tests) a reader of the source's
// own snapshot of root, on clock now.
func (r *Reader) OrOwn(root string, now func() time.Time) *Reader {
	if r != nil {
		return r
	}
	return New(root, now, nil).Reader(0)
}

// Reader hands one source its snapshots. Not safe for concurrent use: one source scrapes one tick at a
// time.
type Reader struct {
	sh     *Shared
	maxAge time.Duration
	last   uint64 // the snapshot this source was given last
}

// Use calls fn with a snapshot no older than the reader's interval allows (see the package comment),
// reading /proc/diskstats when none is. fn must not keep the snapshot or its Stats past its return (the
// next read reuses their memory); identities may be kept: they are never modified once handed out. Use
// returns the read's error (naming the path) without calling fn, ctx's error when the wait for another
// source's use outlasts the scrape, or fn's error.
func (r *Reader) Use(ctx context.Context, fn func(*Snapshot) error) error {
	s := r.sh
	// The source asks now: a snapshot another source read while this one waited for the lock (behind
	// a slow scrape of that source) is its tick's, as fsusage.Reader.Use rules for the mounts.
	asked := s.now()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.lock }()
	if s.seq == 0 || s.seq == r.last || asked.Sub(s.snap.At) > r.maxAge {
		if err := s.read(); err != nil {
			return err
		}
	}
	r.last = s.seq
	return fn(&s.snap)
}

// Close closes /proc/diskstats, which the shared reader keeps open between reads; a later read opens it
// again. Each source calls it at shutdown.
func (r *Reader) Close() error {
	s := r.sh
	s.lock <- struct{}{}
	defer func() { <-s.lock }()
	return s.reader.Close()
}

// read reads and parses /proc/diskstats into the latest snapshot. The read time is the sample time: the
// rate engine's intervals use its monotonic reading.
func (s *Shared) read() error {
	data, err := s.reader.Read(s.path)
	if err != nil {
		s.seq = 0
		return err
	}
	at := s.now()
	stats, perr := s.parser.Parse(data, s.snap.Stats[:0])
	s.seq++
	s.snap = Snapshot{
		At: at, Path: s.path, Stats: stats, Empty: len(bytes.TrimSpace(data)) == 0, ParseErr: perr,
		sh: s, seq: s.seq,
	}
	return nil
}

// Snapshot is one read of /proc/diskstats: its devices, and their identities on demand.
type Snapshot struct {
	// At is when the file was read: the sample time.
	At time.Time
	// Path is the file read, for messages.
	Path string
	// Stats are its valid lines, in the kernel's order.
	Stats []diskstats.Stat
	// Empty: the file held nothing but white space.
	Empty bool
	// ParseErr reports the lines that could not be parsed (a *parseerr.Lines), each skipped.
	ParseErr error

	sh  *Shared
	seq uint64
}

// Identities brings the identity cache up to this snapshot's devices (blockdev.Cache.Refresh), once per
// snapshot whichever source asks first: a source that needs no identity (cgroups) costs no sysfs read.
// It returns the cache's standing identity errors: enrichment lost, each device still listed.
func (sn *Snapshot) Identities() error {
	s := sn.sh
	if s.idsSeq == sn.seq {
		return s.ids.Failed()
	}
	s.devs = s.devs[:0]
	for i := range sn.Stats {
		st := &sn.Stats[i]
		s.devs = append(s.devs, blockdev.Dev{Name: st.DeviceName, Major: st.MajorNumber, Minor: st.MinorNumber})
	}
	s.idsSeq = sn.seq
	return s.ids.Refresh(s.sysDir, s.devs)
}

// Identity is a device's identity (call Identities first). It must not be modified.
func (sn *Snapshot) Identity(name string) (*blockdev.Identity, bool) { return sn.sh.ids.Get(name) }

// Unreadable is why a device has no class (blockdev.Cache.Unreadable).
func (sn *Snapshot) Unreadable(name string) error { return sn.sh.ids.Unreadable(name) }

// Reread reads a device's identity again (blockdev.Cache.Reread): a source saw its counters restart.
// Every source sees the new identity from then on.
func (sn *Snapshot) Reread(name string) error { return sn.sh.ids.Reread(name) }
