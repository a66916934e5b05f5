package stackscraper

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// scsiCommandsPerSecond bounds the commands a SCSI device can complete in a second (fast SAS SSDs do a
// few million): a 32-bit counter's step back that more commands than this would explain is a restart.
const scsiCommandsPerSecond = 1 << 24

// series keeps every cumulative counter the source reports between scrapes, so that each point carries
// the start of its own series: a counter that falls (fsck cleared ext4's count, `btrfs device stats -z`,
// a re-added md member, a re-created SCSI device) starts a new one, dated at the previous reading, and
// a 32-bit SCSI counter is extended past its wraps when the clock allows them.
type series struct {
	started time.Time // the source's start: the start of every series read at the first scrape
	prev    time.Time // the previous scrape: the start of a series read first after it
	byKey   map[string]*counter
}

type counter struct {
	raw, value uint64 // the kernel's value last read; the cumulative reported
	at, start  time.Time
	missed     int // scrapes since it was last read
}

// forgetAfter is how many scrapes a counter may go unread (its device gone, its part timed out) before
// it is forgotten; one read again after that is a new series.
const forgetAfter = 10

func newSeries(started time.Time) *series {
	return &series{started: started, byKey: map[string]*counter{}}
}

func (s *series) get(key string) (c *counter, fresh bool) {
	c = s.byKey[key]
	if c == nil {
		c = &counter{start: s.started}
		if !s.prev.IsZero() {
			c.start = s.prev
		}
		s.byKey[key] = c
		fresh = true
	}
	c.missed = -1
	return c, fresh
}

// u64 is a counter the kernel keeps in 64 bits (or as a plain count): any fall restarts it.
func (s *series) u64(key string, v uint64, now time.Time) (uint64, pcommon.Timestamp) {
	c, fresh := s.get(key)
	if !fresh && v < c.raw {
		c.start = c.at
	}
	c.raw, c.value, c.at = v, v, now
	return c.value, pcommon.NewTimestampFromTime(c.start)
}

// u32 is a 32-bit counter of at most perSecond events a second, under the wrap rule of iostat.
func (s *series) u32(key string, v uint32, now time.Time, perSecond uint64) (uint64, pcommon.Timestamp) {
	c, fresh := s.get(key)
	switch d, ok := iostat.Counter32Delta(uint32(c.raw), v, now.Sub(c.at), perSecond); {
	case fresh:
		c.value = uint64(v)
	case ok:
		c.value += d
	default:
		c.value, c.start = uint64(v), c.at
	}
	c.raw, c.at = uint64(v), now
	return c.value, pcommon.NewTimestampFromTime(c.start)
}

// endScrape ends the scrape at now and forgets the counters unread for forgetAfter scrapes.
func (s *series) endScrape(now time.Time) {
	for k, c := range s.byKey {
		if c.missed++; c.missed > forgetAfter {
			delete(s.byKey, k)
		}
	}
	s.prev = now
}

// withStart records with the builder's start time set to start, then sets it back: the generated
// builder stamps every point with the one start time it holds.
func (s *stackScraper) withStart(start pcommon.Timestamp, record func()) {
	s.mb.Reset(metadata.WithStartTime(start))
	record()
	s.mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(s.series.started)))
}
