package nvme

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Amazon's NVMe controllers (EBS volumes and EC2 instance store on Nitro)
// keep detailed performance statistics in vendor log D0h, a 4096-byte page
// whose first word says which layout follows.
const (
	VendorAmazon = 0x1D0F
	LogAmazon    = 0xD0

	AmazonLogSize = 4096

	AmazonMagicEBS           = 0x3C23B510
	AmazonMagicInstanceStore = 0xEC2C0D7E

	// Model numbers the Amazon controllers report in Identify Controller.
	AmazonModelEBS           = "Amazon Elastic Block Store"
	AmazonModelInstanceStore = "Amazon EC2 NVMe Instance Storage"
)

// AmazonKind is the layout of a D0h page.
type AmazonKind uint8

// Amazon page kinds.
const (
	AmazonEBS AmazonKind = iota + 1
	AmazonInstanceStore
)

func (k AmazonKind) String() string {
	switch k {
	case AmazonEBS:
		return "ebs"
	case AmazonInstanceStore:
		return "instance_store"
	}
	return fmt.Sprintf("amazon(%d)", uint8(k))
}

// AmazonKindOf says which D0h layout a controller with this vendor and
// model keeps, if any: the log is read only from such controllers.
func AmazonKindOf(c *Controller) (AmazonKind, bool) {
	if c == nil || c.VendorID != VendorAmazon {
		return 0, false
	}
	switch c.Model {
	case AmazonModelEBS:
		return AmazonEBS, true
	case AmazonModelInstanceStore:
		return AmazonInstanceStore, true
	}
	return 0, false
}

// LatencyBin is one histogram bin: commands whose latency fell in
// [Lower, Upper), bounds in microseconds.
type LatencyBin struct {
	Lower, Upper uint64
	Count        uint64
}

// AmazonStats is the D0h page. Counters are totals since the volume was
// attached; the *Exceeded durations are the total time the application
// tried to do more than the volume (EBS) or the instance allows.
type AmazonStats struct {
	Kind                       AmazonKind
	ReadOps, WriteOps          uint64
	ReadBytes, WriteBytes      uint64
	ReadTime, WriteTime        time.Duration
	VolumeIOPSExceeded         time.Duration // EBS only
	VolumeThroughputExceeded   time.Duration // EBS only
	InstanceIOPSExceeded       time.Duration
	InstanceThroughputExceeded time.Duration
	// QueueLength is the number of commands waiting when the page was read.
	QueueLength uint64
	// ReadLatency and WriteLatency are device-side latency histograms
	// (power-of-two microsecond bins). An instance store page keeps one
	// histogram per I/O size range; they are summed here.
	ReadLatency, WriteLatency []LatencyBin
}

// Amazon page offsets.
const (
	amazonCounters  = 8
	amazonEBSHist   = 512  // read histogram; write follows
	amazonEBSHistSz = 1544 // bin count (8) + 64 bins of 24 bytes
	amazonMaxBins   = 64

	// Instance store: histogram count and bins per histogram at 96, the
	// I/O size ranges at 104, shared bin bounds at 136, then per size
	// range a read and a write array of 32 counts.
	amazonISHistograms = 96
	amazonISBounds     = 136
	amazonISCounts     = 648
	amazonISMaxHist    = 5
	amazonISMaxBins    = 32
)

func us(v uint64) time.Duration {
	if v > uint64(1<<63-1)/uint64(time.Microsecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(v) * time.Microsecond
}

// ParseAmazonStats decodes log D0h, checking its magic.
func ParseAmazonStats(b []byte) (*AmazonStats, error) {
	if len(b) < AmazonLogSize {
		return nil, fmt.Errorf("amazon log: %d bytes, want %d", len(b), AmazonLogSize)
	}
	le := binary.LittleEndian
	s := &AmazonStats{}
	switch m := le.Uint32(b); m {
	case AmazonMagicEBS:
		s.Kind = AmazonEBS
	case AmazonMagicInstanceStore:
		s.Kind = AmazonInstanceStore
	default:
		return nil, fmt.Errorf("amazon log: magic %#08x is neither EBS nor instance store", m)
	}
	c := func(i int) uint64 { return le.Uint64(b[amazonCounters+8*i:]) }
	s.ReadOps, s.WriteOps, s.ReadBytes, s.WriteBytes = c(0), c(1), c(2), c(3)
	s.ReadTime, s.WriteTime = us(c(4)), us(c(5))
	s.InstanceIOPSExceeded, s.InstanceThroughputExceeded = us(c(8)), us(c(9))
	s.QueueLength = c(10)
	var err error
	if s.Kind == AmazonEBS {
		s.VolumeIOPSExceeded, s.VolumeThroughputExceeded = us(c(6)), us(c(7))
		if s.ReadLatency, err = ebsHistogram(b[amazonEBSHist:]); err != nil {
			return nil, fmt.Errorf("amazon log: read histogram: %w", err)
		}
		if s.WriteLatency, err = ebsHistogram(b[amazonEBSHist+amazonEBSHistSz:]); err != nil {
			return nil, fmt.Errorf("amazon log: write histogram: %w", err)
		}
		return s, nil
	}
	if s.ReadLatency, s.WriteLatency, err = instanceStoreHistograms(b); err != nil {
		return nil, fmt.Errorf("amazon log: %w", err)
	}
	return s, nil
}

func ebsHistogram(b []byte) ([]LatencyBin, error) {
	n := binary.LittleEndian.Uint64(b)
	if n > amazonMaxBins {
		return nil, fmt.Errorf("%d bins, at most %d", n, amazonMaxBins)
	}
	bins := make([]LatencyBin, n)
	for i := range bins {
		e := b[8+24*i:]
		bins[i] = LatencyBin{Lower: binary.LittleEndian.Uint64(e), Upper: binary.LittleEndian.Uint64(e[8:]),
			Count: uint64(binary.LittleEndian.Uint32(e[16:]))}
	}
	return bins, checkBins(bins)
}

func instanceStoreHistograms(b []byte) (read, write []LatencyBin, err error) {
	le := binary.LittleEndian
	hists, nbins := le.Uint32(b[amazonISHistograms:]), le.Uint32(b[amazonISHistograms+4:])
	if hists > amazonISMaxHist || nbins > amazonISMaxBins {
		return nil, nil, fmt.Errorf("%d histograms of %d bins, at most %d of %d", hists, nbins, amazonISMaxHist, amazonISMaxBins)
	}
	read, write = make([]LatencyBin, nbins), make([]LatencyBin, nbins)
	for i := range read {
		e := b[amazonISBounds+16*i:]
		read[i].Lower, read[i].Upper = le.Uint64(e), le.Uint64(e[8:])
		write[i].Lower, write[i].Upper = read[i].Lower, read[i].Upper
	}
	for h := range int(hists) {
		pair := b[amazonISCounts+512*h:]
		for i := range read {
			read[i].Count = satAdd(read[i].Count, le.Uint64(pair[8*i:]))
			write[i].Count = satAdd(write[i].Count, le.Uint64(pair[256+8*i:]))
		}
	}
	return read, write, checkBins(read)
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return 1<<64 - 1
	}
	return a + b
}

// checkBins rejects bins that are not ascending and disjoint: a histogram
// built from them would be wrong, not just imprecise.
func checkBins(bins []LatencyBin) error {
	for i, bin := range bins {
		if bin.Upper <= bin.Lower {
			return fmt.Errorf("bin %d: upper bound %d not above lower %d", i, bin.Upper, bin.Lower)
		}
		if i > 0 && bin.Lower < bins[i-1].Upper {
			return fmt.Errorf("bin %d: lower bound %d below the previous upper bound %d", i, bin.Lower, bins[i-1].Upper)
		}
	}
	return nil
}

// Throttling is, per limit, the share of an interval (0–1) during which the
// application asked for more than the limit allowed.
type Throttling struct {
	VolumeIOPS, VolumeThroughput     float64
	InstanceIOPS, InstanceThroughput float64
}

// ThrottlingBetween is the throttling over the interval dt between two
// reads of one volume. ok is false when there is no interval, the layouts
// differ or a counter went back (the volume was detached and attached
// again): no share can be told then.
func ThrottlingBetween(prev, cur *AmazonStats, dt time.Duration) (Throttling, bool) {
	if prev == nil || cur == nil || dt <= 0 || prev.Kind != cur.Kind {
		return Throttling{}, false
	}
	pairs := [4][2]time.Duration{
		{prev.VolumeIOPSExceeded, cur.VolumeIOPSExceeded}, {prev.VolumeThroughputExceeded, cur.VolumeThroughputExceeded},
		{prev.InstanceIOPSExceeded, cur.InstanceIOPSExceeded}, {prev.InstanceThroughputExceeded, cur.InstanceThroughputExceeded},
	}
	var share [4]float64
	for i, p := range pairs {
		if p[1] < p[0] {
			return Throttling{}, false
		}
		// The counters run on the volume's clock, the interval on the host's:
		// a share is at most the whole interval.
		share[i] = min(1, float64(p[1]-p[0])/float64(dt))
	}
	return Throttling{VolumeIOPS: share[0], VolumeThroughput: share[1], InstanceIOPS: share[2], InstanceThroughput: share[3]}, true
}
