package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// stateVersion is the first byte of a marshalled Learner; another version is refused (learned afresh).
const stateVersion = 1

// maxStateCopies bounds the copies a marshalled Learner keeps (the newest): a keep-all job's older
// copies only matter to a deletion outside a save.
const maxStateCopies = 64

// MarshalBinary is what the learner knows of the job, compact (at most about 1.6 KiB), to survive a
// restart: the saves and copies, the retention, the background and its noise floor, and whether a
// will_fail was already sent. The samples in flight are not kept: a restored learner starts from its
// next sample, and the gap is taken as saves it did not see.
func (l *Learner) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, stateVersion, byte(l.rotation), byte(l.state), byte(l.relearn))
	flags := byte(0)
	for i, f := range []bool{l.transient, l.alerted, l.everRegular} {
		if f {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	for _, v := range []int64{int64(l.saves), int64(l.keep), int64(l.pureSaves), int64(l.lastDur), int64(l.lastSize), int64(l.quietSeen), int64(l.foreignBytes)} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(l.growth))
	b = binary.AppendVarint(b, l.hidden.UnixNano())
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
	return b, nil
}

// UnmarshalBinary restores what MarshalBinary kept into a new learner (its Config as made); the next
// sample starts afresh from there.
func (l *Learner) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	if v := d.byte(); v != stateVersion {
		return fmt.Errorf("checkpoint state version %d, want %d", v, stateVersion)
	}
	r := Learner{cfg: l.cfg, rotation: Rotation(d.byte()), state: State(d.byte()), relearn: Reason(d.byte())}
	flags := d.byte()
	r.transient, r.alerted, r.everRegular = flags&1 != 0, flags&2 != 0, flags&4 != 0
	r.saves, r.keep, r.pureSaves = int(d.varint()), int(d.varint()), int(d.varint())
	r.lastDur, r.lastSize, r.quietSeen, r.foreignBytes = time.Duration(d.varint()), uint64(d.varint()), int(d.varint()), uint64(d.varint())
	r.growth = math.Float64frombits(d.fixed(8))
	r.hidden = time.Unix(0, d.varint())
	r.copies = d.uvarints(maxStateCopies)
	r.sizes = d.uvarints(r.cfg.History)
	for range d.count(r.cfg.History + 1) {
		r.starts = append(r.starts, time.Unix(0, d.varint()))
	}
	r.nrates = d.count(noiseWindow)
	for i := range r.nrates {
		r.rates[i] = float64(math.Float32frombits(uint32(d.fixed(4))))
	}
	if d.err != nil {
		return d.err
	}
	if r.rotation > RotationAfter || r.state > WillFail || r.relearn > ReasonNotSaves || r.saves < 0 || r.keep < 0 || r.pureSaves < 0 {
		return errors.New("checkpoint state out of range")
	}
	if r.state != Learning {
		// The state is taken again from the first sample; only whether will_fail was said stays.
		r.state = Fits
	}
	r.estimate()
	// Saves may have gone unseen while the collector was down.
	r.gap = true
	*l = r
	return nil
}

// decoder reads a marshalled Learner; the first problem sticks and every later read returns zero.
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
