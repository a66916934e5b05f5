package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// Shared is the mount snapshot of one receiver's sources: the mount table, each selected mount's statfs
// (under its deadline, with stuck-mount tracking), its domain and its forecast, read once per tick for
// every source that reads mounts (filesystem, capacity), so a mount is statfs'd once per tick whatever
// the number of sources. Its methods are safe for concurrent use.
//
// The reuse rule is the diskstats snapshot's (internal/tick): a source whose interval is I, asking at
// time t, is given the latest snapshot when that was read at or after t − I/2 and this source has not
// been given it before; otherwise the mounts are read again. t is when the source asks, before it waits
// for a read under way: the read it waited for is its tick's, so both sources' points carry one time. A source never sees the same snapshot
// twice, nor one older than half its interval.
type Shared struct {
	lock chan struct{} // a mutex whose wait can be abandoned when the scrape's context ends
	cfg  Config
	now  func() time.Time
	col  *Collector // opened by the first read that can, closed with the last reader
	snap Snapshot
	// tableErr is the bad lines of the mount table as last parsed (the collector's reload callback).
	tableErr error
	seq      uint64 // of the latest read; 0: none to share
	readers  int
	owner    *Reader
}

// Snapshot is one read of the mounts.
type Snapshot struct {
	// At is when the mounts were read: the forecast's sample time.
	At time.Time
	// Results has one Result per selected mount, the mounts of one domain next to each other (see
	// Domains). Read-only: every reader of the snapshot shares it. Each read makes a new slice, so a
	// reader may keep it after Use returns, to work on it without holding the other sources up.
	Results []Result
	// Err is the mount table's problem: it could not be read (the last good table was measured) or it
	// has bad lines (a *parseerr.Lines; the good ones were measured). A mount that cannot be measured is
	// its Result's status, never an error.
	Err error
}

// Domains calls yield with the results of each domain in turn, domains in the order of their first
// mount, mounts in table order; it stops when yield returns false.
func (s *Snapshot) Domains(yield func([]Result) bool) {
	rs := s.Results
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].Domain.Major == rs[i].Domain.Major && rs[j].Domain.Minor == rs[i].Domain.Minor {
			j++
		}
		if !yield(rs[i:j]) {
			return
		}
		i = j
	}
}

// NewShared returns the shared snapshot of the mounts cfg selects, on clock now (time.Now outside
// tests). cfg.OnTableReload is the snapshot's own: the table's bad lines are in each Snapshot's Err.
func NewShared(cfg Config, now func() time.Time) *Shared {
	s := &Shared{lock: make(chan struct{}, 1), cfg: cfg, now: now}
	s.cfg.OnTableReload = func(r TableReload) { s.tableErr = r.Err }
	return s
}

// Reader is one source's view of a Shared, at its interval. Not safe for concurrent use: one source
// scrapes one tick at a time.
type Reader struct {
	sh     *Shared
	maxAge time.Duration
	last   uint64 // the snapshot this source was given last
	closed bool
}

// Reader returns a reader for a source scraping every interval. The first reader owns the input (see
// Owns): the receiver asks for them in its registry's order, for running sources only.
func (s *Shared) Reader(interval time.Duration) *Reader {
	// Unbounded wait: a read holds the lock for at most its statfs deadlines.
	s.lock <- struct{}{}
	defer s.release()
	r := &Reader{sh: s, maxAge: interval / 2}
	if s.owner == nil {
		s.owner = r
	}
	s.readers++
	return r
}

func (s *Shared) release() { <-s.lock }

// Owns reports whether this reader's source speaks for the mount table: its problems (unreadable, bad
// lines) are one problem of the receiver, said in the owner's scrape errors only, not once per source.
func (r *Reader) Owns() bool { return r.sh.owner == r }

// Own is err when this reader owns the input, else nil: the error of a Use or a snapshot's Err, for a
// source's scrape errors.
func (r *Reader) Own(err error) error {
	if !r.Owns() {
		return nil
	}
	return err
}

// Use calls fn with a snapshot no older than the reader's interval allows (see Shared), reading the
// mounts when none is. fn must not modify the snapshot (it may keep a copy of it: see Results). Use
// returns the error of opening the mount table (naming the file) without calling fn, ctx's error when
// the wait for another source's read outlasts the scrape, or fn's error.
func (r *Reader) Use(ctx context.Context, fn func(*Snapshot) error) error {
	s := r.sh
	// The source asks now: a read another source started since then, which it may have waited for (a
	// hung mount holds the read up to its statfs deadline), is its tick's read.
	asked := s.now()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer s.release()
	if r.closed {
		return errClosed
	}
	if s.seq == 0 || s.seq == r.last || asked.Sub(s.snap.At) > r.maxAge {
		if err := s.read(ctx, s.now()); err != nil {
			return err
		}
	}
	r.last = s.seq
	return fn(&s.snap)
}

var errClosed = errors.New("mount snapshot used after its source's shutdown")

// read collects every selected mount into the latest snapshot, opening the mount table first if it is
// not open (a root_path without /proc is said every scrape, never fails the start).
func (s *Shared) read(ctx context.Context, now time.Time) error {
	if s.col == nil {
		col, err := NewCollector(s.cfg)
		if err != nil {
			s.seq = 0
			return err
		}
		s.col = col
	}
	results, err := s.col.Collect(ctx, now)
	byDomain(results)
	s.seq++
	s.snap = Snapshot{At: now, Results: results, Err: errors.Join(err, s.tableErr)}
	return nil
}

// Close ends this reader; the last reader's Close closes the mount table and stops the background
// re-probes of stuck mounts. Each source calls it at shutdown.
func (r *Reader) Close() error {
	s := r.sh
	// Unbounded wait: a read holds the lock for at most its statfs deadlines.
	s.lock <- struct{}{}
	defer s.release()
	if r.closed {
		return nil
	}
	r.closed = true
	s.readers--
	if s.readers > 0 || s.col == nil {
		return nil
	}
	err := s.col.Close()
	s.col, s.seq = nil, 0
	return err
}

// byDomain puts the results of one domain next to each other, domains in the order of their first
// mount, mounts in table order within a domain: each domain is one resource, its own points once.
func byDomain(results []Result) {
	first := make(map[[2]uint32]int, len(results))
	for i := range results {
		k := [2]uint32{results[i].Domain.Major, results[i].Domain.Minor}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
	}
	slices.SortStableFunc(results, func(a, b Result) int {
		return cmp.Compare(first[[2]uint32{a.Domain.Major, a.Domain.Minor}], first[[2]uint32{b.Domain.Major, b.Domain.Minor}])
	})
}
