package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// stateVersion is the first byte of a record; another version is refused (learned afresh). Version 1
// carried neither the filesystem it belonged to nor when it was written, so it cannot be judged.
const stateVersion = 2

// maxStateCopies bounds the copies a record keeps (the newest): a keep-all job's older copies only
// matter to a deletion outside a save. It also bounds the copies a job can be said to keep.
const maxStateCopies = 64

// maxOwner bounds a record's owner (a UUID, or a mount's source, root, type and mount point).
const maxOwner = 4096

// maxSpan bounds every duration a record holds (a save's, the cadence): a save pattern slower than
// once a year predicts nothing useful, and a longer span is a corrupt record, not a job.
const maxSpan = 366 * 24 * time.Hour

// maxAge bounds how long before a record was written its oldest time may be: a learner that saw its
// first save ten years before its last sample is a corrupt record, and the bound keeps every time moved
// back with the clock (Future) a real time.
const maxAge = 10 * maxSpan

// staleCadences is how many cadences after the last save a restored pattern is still believed: a
// collector restart costs seconds to minutes, well inside it for any real job; a record older than
// that is a job that may have stopped, changed or moved, and predicts nothing until a save confirms it.
const staleCadences = 4

// Trust is how far a restored record is believed.
type Trust uint8

const (
	// Trusted means: the record predicts from the first sample on.
	Trusted Trust = iota
	// Unconfirmed means: it was stored before a save had confirmed it (one of the reasons below, at an
	// earlier start).
	Unconfirmed
	// Stale means: its last save is more than staleCadences cadences before the first sample.
	Stale
	// Future means: it was written after the first sample's time (the clock went back); its times are moved
	// back to the first sample.
	Future
	// Foreign means: it belongs to another filesystem than the one under its key now.
	Foreign
)

func (t Trust) String() string {
	switch t {
	case Trusted:
		return "trusted"
	case Stale:
		return "stale"
	case Future:
		return "from the future"
	case Foreign:
		return "of another filesystem"
	}
	return "not yet confirmed by a save"
}

// Flags of a record.
const (
	flagTransient = 1 << iota
	flagAlerted
	flagEverRegular
	flagUnconfirmed
	flagsKnown = flagTransient | flagAlerted | flagEverRegular | flagUnconfirmed
)

// MarshalRecord is what the learner knows of the job, compact (at most about 1.6 KiB plus the owner),
// to survive a restart: owner (what the learner follows: the filesystem's identity, which major:minor
// is not), when it last saw a sample, the saves and copies, the retention, the background and its
// noise floor, and whether a will_fail was already sent. The samples in flight are not kept: a restored
// learner starts from its next sample, and the gap is taken as saves it did not see.
func (l *Learner) MarshalRecord(owner string) []byte {
	b := make([]byte, 0, 256+len(owner))
	b = append(b, stateVersion)
	b = binary.AppendUvarint(b, uint64(len(owner)))
	b = append(b, owner...)
	b = binary.AppendVarint(b, unixNano(l.last.Time))
	b = append(b, byte(l.rotation), byte(l.state), byte(l.relearn))
	flags := byte(0)
	for _, f := range [...]struct {
		bit byte
		set bool
	}{{flagTransient, l.transient}, {flagAlerted, l.alerted}, {flagEverRegular, l.everRegular}, {flagUnconfirmed, l.unconfirmed}} {
		if f.set {
			flags |= f.bit
		}
	}
	b = append(b, flags)
	for _, v := range []int64{int64(l.saves), int64(l.keep), int64(l.pureSaves), int64(l.lastDur), int64(l.lastSize), int64(l.quietSeen), int64(l.foreignBytes)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(l.growth))
	b = binary.AppendVarint(b, unixNano(l.hidden))
	copies := l.copies[max(0, len(l.copies)-maxStateCopies):]
	for _, list := range [][]uint64{copies, l.sizes} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, v := range list {
			b = binary.AppendUvarint(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(l.starts)))
	for _, t := range l.starts {
		b = binary.AppendVarint(b, t.UnixNano())
	}
	n := min(l.nrates, noiseWindow)
	b = binary.AppendUvarint(b, uint64(n))
	for _, r := range l.rates[:n] {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(r)))
	}
	return b
}

// unixNano is t in nanoseconds, 0 for the zero time (time.Time{}.UnixNano is outside int64's range).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Restore replaces a new learner (its Config as made) with what record kept, for owner (the identity
// MarshalRecord was given) whose first sample after the restart is first; that sample is to be
// Observed next. Every value is checked against first's filesystem (finite, non-negative, within its
// size, lists of consistent lengths, sane durations): a record that fails is refused with an error and
// the learner is left as it was. A record that decodes is evidence, not truth: unless it is Trusted
// (same owner, confirmed by a save within staleCadences cadences, not from the future), it predicts
// nothing until the next save confirms the pattern, and a will_fail said for it is forgotten.
func (l *Learner) Restore(record []byte, owner string, first Sample) (Trust, error) {
	r, storedOwner, seen, err := decodeRecord(record, l.cfg, float64(first.Used)+float64(first.Free))
	if err != nil {
		return Trusted, err
	}
	trust := Trusted
	if seen.After(first.Time) {
		trust = Future
		// Its times are moved back with the clock, so the next save's interval to the last one is not
		// negative; how long the collector was down is not known.
		shift := first.Time.Sub(seen)
		for i := range r.starts {
			r.starts[i] = r.starts[i].Add(shift)
		}
		if !r.hidden.IsZero() {
			r.hidden = r.hidden.Add(shift)
		}
	}
	switch {
	case storedOwner != owner:
		trust = Foreign
	case trust == Trusted && r.unconfirmed:
		trust = Unconfirmed
	}
	r.estimate()
	if trust == Trusted && r.isRegular && first.Time.Sub(r.starts[len(r.starts)-1]) > staleCadences*r.interval {
		trust = Stale
	}
	if trust != Trusted {
		r.unconfirmed, r.alerted = true, false
	}
	// The state is taken again from the first sample (learning while unconfirmed, so that it is not
	// a pattern lost); only whether will_fail was said stays.
	if r.state != Learning && !r.unconfirmed {
		r.state = Fits
	} else {
		r.state = Learning
	}
	// Saves may have gone unseen while the collector was down, and one may be in flight at the first
	// sample: a burst that starts there is not learned (its first part is not seen).
	r.gap, r.resumed = true, first.Time
	*l = r
	return trust, nil
}

// decodeRecord reads and checks a record for a learner of cfg on a filesystem of limit bytes.
func decodeRecord(data []byte, cfg Config, limit float64) (r Learner, owner string, seen time.Time, err error) {
	d := decoder{b: data}
	if v := d.byte(); v != stateVersion {
		return r, "", seen, fmt.Errorf("checkpoint state version %d, want %d", v, stateVersion)
	}
	owner = string(d.bytes(maxOwner))
	seen = fromUnixNano(d.varint())
	r = Learner{cfg: cfg, rotation: Rotation(d.byte()), state: State(d.byte()), relearn: Reason(d.byte())}
	flags := d.byte()
	r.transient, r.alerted, r.everRegular, r.unconfirmed = flags&flagTransient != 0, flags&flagAlerted != 0, flags&flagEverRegular != 0, flags&flagUnconfirmed != 0
	saves, keep, pureSaves, lastDur, lastSize, quietSeen, foreignBytes := d.varint(), d.varint(), d.varint(), d.varint(), d.varint(), d.varint(), d.varint()
	r.growth = math.Float64frombits(d.fixed(8))
	r.hidden = fromUnixNano(d.varint())
	r.copies = d.uvarints(maxStateCopies)
	r.sizes = d.uvarints(cfg.History)
	starts := make([]int64, d.count(cfg.History+1))
	for i := range starts {
		starts[i] = d.varint()
	}
	r.nrates = d.count(noiseWindow)
	for i := range r.nrates {
		r.rates[i] = float64(math.Float32frombits(uint32(d.fixed(4))))
	}
	if d.err != nil {
		return r, "", seen, d.err
	}
	if len(d.b) > 0 {
		return r, "", seen, fmt.Errorf("checkpoint state: %d bytes past its end", len(d.b))
	}
	check := checker{limit: limit}
	check.that(r.rotation <= RotationAfter && r.state <= WillFail && r.relearn <= ReasonNotSaves && flags&^flagsKnown == 0, "an unknown rotation, state, reason or flag")
	check.that(seen.After(time.Unix(0, 0)), "no time it was written")
	check.count(saves, math.MaxInt32, "saves")
	check.count(keep, maxStateCopies+1, "copies kept")
	check.count(pureSaves, saves, "saves before rotation")
	check.count(quietSeen, math.MaxInt64, "quiet samples")
	check.count(lastDur, int64(maxSpan), "last save's duration")
	check.bytes(float64(lastSize), "last save's size")
	check.rate(r.growth, true, "background growth")
	for _, v := range r.rates[:r.nrates] {
		check.rate(v, false, "usage rate")
	}
	var onDisk float64
	for _, c := range r.copies {
		onDisk += float64(c)
	}
	check.bytes(onDisk, "copies on disk")
	for _, s := range r.sizes {
		check.bytes(float64(s), "save size")
	}
	// Every save appends its size and its start, each list bounded; only forgetting them all resets the
	// count. A record whose lists disagree with its count was not written by a learner.
	check.that(len(r.sizes) == int(min(saves, int64(cfg.History))) && len(starts) == int(min(saves, int64(cfg.History+1))),
		fmt.Sprintf("%d saves with %d sizes and %d starts", saves, len(r.sizes), len(starts)))
	for i, ns := range starts {
		t := time.Unix(0, ns)
		check.that(ns > 0 && !t.After(seen) && seen.Sub(t) <= maxAge, fmt.Sprintf("a save at %v, written at %v", t, seen))
		if i > 0 {
			iv := t.Sub(r.starts[i-1])
			check.that(iv > 0 && iv <= maxSpan, fmt.Sprintf("an interval of %v between saves", iv))
		}
		r.starts = append(r.starts, t)
	}
	check.that(r.hidden.IsZero() || !r.hidden.After(seen) && seen.Sub(r.hidden) <= maxAge, fmt.Sprintf("saves hidden until %v, written at %v", r.hidden, seen))
	if check.err != nil {
		return r, "", seen, check.err
	}
	r.saves, r.keep, r.pureSaves, r.quietSeen = int(saves), int(keep), int(pureSaves), int(quietSeen)
	r.lastDur, r.lastSize = time.Duration(lastDur), uint64(lastSize)
	// What other writers wrote is an upper bound, grown by every burst of theirs and shrunk only by a
	// deletion outside a save; more than the filesystem holds means all of it.
	r.foreignBytes = uint64(min(float64(max(0, foreignBytes)), limit))
	return r, owner, seen, nil
}

// checker keeps the first value of a record found out of bounds.
type checker struct {
	limit float64
	err   error
}

func (c *checker) that(ok bool, what string) {
	if !ok && c.err == nil {
		c.err = errors.New("checkpoint state: " + what)
	}
}

func (c *checker) count(v, most int64, what string) {
	c.that(v >= 0 && v <= most, fmt.Sprintf("%s %d, want 0 to %d", what, v, most))
}

// bytes: at most what the filesystem holds.
func (c *checker) bytes(v float64, what string) {
	c.that(v >= 0 && v <= c.limit, fmt.Sprintf("%s %.0f B on a filesystem of %.0f B", what, v, c.limit))
}

// rate: finite, and no faster than filling the whole filesystem in a millisecond (a scrape is longer;
// signed: growth may be negative).
func (c *checker) rate(v float64, signed bool, what string) {
	c.that(!math.IsNaN(v) && math.Abs(v) <= 1000*c.limit && (signed || v >= 0), fmt.Sprintf("%s %g B/s on a filesystem of %.0f B", what, v, c.limit))
}

// decoder reads a record; the first problem sticks and every later read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("checkpoint state: %s cut short", what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("header")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// bytes reads a length-prefixed string of at most limit bytes.
func (d *decoder) bytes(limit int) []byte {
	n := d.count(limit)
	if len(d.b) < n {
		d.fail("string")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// varint reads a signed varint (zig-zag, as binary.AppendVarint writes it).
func (d *decoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// fixed reads a little-endian number of n (4 or 8) bytes.
func (d *decoder) fixed(n int) uint64 {
	if len(d.b) < n {
		d.fail("number")
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(d.b[i])
	}
	d.b = d.b[n:]
	return v
}

// count reads a list's length, at most limit.
func (d *decoder) count(limit int) int {
	n := d.uvarint()
	if n > uint64(limit) {
		if d.err == nil {
			d.err = fmt.Errorf("checkpoint state: a list of %d, at most %d", n, limit)
		}
		d.b = nil
		return 0
	}
	return int(n)
}

func (d *decoder) uvarints(limit int) []uint64 {
	n := d.count(limit)
	var v []uint64
	for range n {
		v = append(v, d.uvarint())
	}
	return v
}
