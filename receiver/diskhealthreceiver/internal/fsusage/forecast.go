package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ForecastConfig tunes the time-to-full forecast. Zero values take the
// defaults noted on each field.
type ForecastConfig struct {
	// Window is how much history the fit uses. Default 6h.
	Window time.Duration
	// Buckets splits the window; a series keeps one mean point per bucket,
	// so memory is fixed whatever the scrape interval. Default 72 (5 min
	// each for 6h).
	Buckets int
	// MinPoints is the number of non-empty buckets needed. Default 16
	// (80 minutes with the default buckets): with fewer, pure noise
	// passes the other gates now and then.
	MinPoints int
	// MinSpan is the time the points must cover. Default Window/6.
	MinSpan time.Duration
	// ResetFraction: a rise of free space between two observations by more
	// than this fraction of the filesystem's size, and by more than
	// jumpNoiseFactor times the series' usual step, is a deletion (log
	// rotation, cleanup) and restarts the history. Default 0.01.
	ResetFraction float64
	// MinR2 is the least coefficient of determination of the fit: the
	// share of the variation of free space that a steady trend explains.
	// Default 0.6.
	MinR2 float64
	// MinTStat is the least t statistic of the slope (slope over its
	// standard error): how sure we are that it is below zero at all.
	// Default 3, about a 0.5 % one-sided chance for a series with no
	// trend.
	MinTStat float64
}

func (c ForecastConfig) withDefaults() (ForecastConfig, error) {
	if c.Window < 0 || c.Buckets < 0 || c.MinPoints < 0 || c.MinSpan < 0 ||
		c.ResetFraction < 0 || c.MinR2 < 0 || c.MinR2 > 1 || c.MinTStat < 0 {
		return c, fmt.Errorf("forecast: negative or out-of-range setting: %+v", c)
	}
	if c.Window == 0 {
		c.Window = 6 * time.Hour
	}
	if c.Buckets == 0 {
		c.Buckets = 72
	}
	if c.MinPoints == 0 {
		c.MinPoints = min(16, c.Buckets)
	}
	if c.MinSpan == 0 {
		c.MinSpan = c.Window / 6
	}
	if c.ResetFraction == 0 {
		c.ResetFraction = 0.01
	}
	if c.MinR2 == 0 {
		c.MinR2 = 0.6
	}
	if c.MinTStat == 0 {
		c.MinTStat = 3
	}
	switch {
	case c.MinPoints < 3:
		return c, errors.New("forecast: min points must be at least 3 to judge a fit")
	case c.MinPoints > c.Buckets:
		return c, fmt.Errorf("forecast: min points %d exceed the %d buckets", c.MinPoints, c.Buckets)
	case c.MinSpan >= c.Window:
		return c, fmt.Errorf("forecast: min span %s must be shorter than the window %s", c.MinSpan, c.Window)
	}
	return c, nil
}

// A rise counts as a deletion only when it is this many times the
// series' mean absolute step, so that scrape-to-scrape noise (temporary
// files, databases) does not restart the history again and again.
const jumpNoiseFactor = 8

// stepAlpha weighs the newest step in the mean absolute step: a memory
// of about 20 observations.
const stepAlpha = 0.05

// Forecast is the time until a filesystem's free space runs out.
type Forecast struct {
	// OK is true only when the filesystem is filling and the fit passes
	// every gate; the other fields are then meaningful.
	OK bool
	// Seconds until free space reaches 0 at the fitted rate; 0 if it
	// already has.
	Seconds float64
	// FillRate is the fitted rate at which free space shrinks, bytes/s.
	FillRate float64
	// R2 and TStat describe the fit; Points is the number of buckets used.
	R2, TStat float64
	Points    int
}

// Forecaster predicts, per series, when free space reaches zero.
//
// Method: each observation (time, free bytes) falls into a bucket of
// Window/Buckets; a bucket keeps the sums of its times and free values, so
// it stands for their mean point. An ordinary least-squares line is fitted
// through the mean points of the buckets in the last Window, each bucket
// weighing the same however many scrapes it holds. The forecast is the
// latest free value divided by the fitted fill rate: how long the space
// left lasts at the rate of the recent past.
//
// It is reported only when: at least MinPoints buckets covering MinSpan;
// the slope is negative (filling) with a t statistic of at least
// MinTStat; and R² is at least MinR2. A rise of free space by more than
// ResetFraction of the size and more than jumpNoiseFactor times the
// series' mean absolute step, a change of size, or time going backwards
// restarts the series, so after a cleanup there is no forecast until
// enough new history has built up.
//
// Limits: the fit is linear and looks back one window, so it says "at the
// rate of the last hours", not "when it will be full": a daily batch
// job, growth that accelerates, or a filesystem that fills in bursts
// (database checkpoints, compactions) between quiet periods fits poorly
// and is either left out by the R² gate or forecast from its average
// rate. Log rotation and other periodic deletions restart the history each
// time, so a filesystem cleaned more often than MinSpan never gets a
// forecast; one cleaned by less than ResetFraction keeps it, but the dip
// flattens the slope until it leaves the window. A filesystem that stays
// full loses its forecast (of 0) once the window no longer holds the
// decline; its utilization still says so.
//
// A Forecaster is not safe for concurrent use; each series costs about
// 32 bytes per bucket its observations reached, at most Buckets.
type Forecaster[K comparable] struct {
	cfg       ForecastConfig
	width     float64 // bucket width, seconds
	series    map[K]*series
	lastPrune time.Time
}

type bucket struct {
	idx        int64 // bucket number since the series' origin
	n          uint32
	sumT, sumF float64
}

type series struct {
	origin   time.Time
	last     time.Time
	lastFree uint64
	limit    uint64
	newest   int64
	absStep  float64 // mean absolute change of free between observations
	// ring holds bucket idx in slot idx % Buckets, and only the slots up to the furthest one reached
	// since the series (re)started: buckets follow the series' time from its origin, so it grows one
	// slot per bucket width to Buckets after a window. A series observed for less than a window (a
	// collector's first hours; 5 000 mounts kept 13 MiB of empty slots six scrapes after a start, issue
	// 33) holds the buckets it filled. Slots past its length are empty, as an unreached slot of the whole
	// ring is, and fit sums the others in the same order: the forecasts are the whole ring's. A series
	// whose free space never moves still reaches a whole ring after a window: each bucket's mean time
	// enters the fit once the free space moves, and no fewer numbers give it exactly.
	// ring[len:cap] is always zero, so that growing within the capacity needs no clearing.
	ring []bucket
}

// NewForecaster validates cfg and fills in defaults.
func NewForecaster[K comparable](cfg ForecastConfig) (*Forecaster[K], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Forecaster[K]{
		cfg:    cfg,
		width:  cfg.Window.Seconds() / float64(cfg.Buckets),
		series: make(map[K]*series),
	}, nil
}

// Config returns the configuration with defaults filled in.
func (f *Forecaster[K]) Config() ForecastConfig { return f.cfg }

// Observe adds a sample of a series and returns its forecast.
func (f *Forecaster[K]) Observe(key K, t time.Time, free, limit uint64) Forecast {
	s := f.series[key]
	if s == nil {
		s = &series{}
		f.series[key] = s
		s.reset(t, limit)
	} else {
		step := float64(free) - float64(s.lastFree)
		if t.Before(s.last) || limit != s.limit ||
			(step > f.cfg.ResetFraction*float64(limit) && step > jumpNoiseFactor*s.absStep) {
			s.reset(t, limit)
		} else {
			// The noise scale learns only from steps that did not reset.
			s.absStep += stepAlpha * (math.Abs(step) - s.absStep)
		}
	}
	x := t.Sub(s.origin).Seconds()
	idx := int64(x / f.width)
	b := s.slot(int(idx%int64(f.cfg.Buckets)), f.cfg.Buckets)
	if b.idx != idx || b.n == 0 {
		*b = bucket{idx: idx}
	}
	b.n++
	b.sumT += x
	b.sumF += float64(free)
	s.newest, s.last, s.lastFree = idx, t, free
	return f.fit(s)
}

// slot returns ring slot i of a ring of buckets slots, growing the ring to reach it: doubling, so that a
// series pays a few copies on its way to a window, and never past buckets.
func (s *series) slot(i, buckets int) *bucket {
	if i >= len(s.ring) {
		if i >= cap(s.ring) {
			r := make([]bucket, len(s.ring), min(buckets, max(i+1, 2*cap(s.ring))))
			copy(r, s.ring)
			s.ring = r
		}
		s.ring = s.ring[:i+1]
	}
	return &s.ring[i]
}

// reset restarts the series at t: its buckets are emptied and its ring keeps its capacity, which it
// reached once and may reach again.
func (s *series) reset(t time.Time, limit uint64) {
	clear(s.ring)
	s.ring = s.ring[:0]
	s.origin, s.last, s.limit, s.newest = t, t, limit, 0
}

func (f *Forecaster[K]) fit(s *series) Forecast {
	oldest := s.newest - int64(f.cfg.Buckets) + 1
	var n int
	var mx, my float64
	minX, maxX := math.Inf(1), math.Inf(-1)
	for i := range s.ring {
		b := &s.ring[i]
		if b.n == 0 || b.idx < oldest {
			continue
		}
		x := b.sumT / float64(b.n)
		n++
		mx += x
		my += b.sumF / float64(b.n)
		minX, maxX = min(minX, x), max(maxX, x)
	}
	if n < f.cfg.MinPoints || maxX-minX < f.cfg.MinSpan.Seconds() {
		return Forecast{Points: n}
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy, syy float64
	for i := range s.ring {
		b := &s.ring[i]
		if b.n == 0 || b.idx < oldest {
			continue
		}
		dx := b.sumT/float64(b.n) - mx
		dy := b.sumF/float64(b.n) - my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	fc := Forecast{Points: n}
	if sxx == 0 || syy == 0 {
		return fc
	}
	slope := sxy / sxx
	ssres := max(syy-slope*sxy, 0)
	fc.R2 = 1 - ssres/syy
	if ssres == 0 {
		fc.TStat = math.Inf(1)
	} else {
		fc.TStat = -slope / math.Sqrt(ssres/float64(n-2)/sxx)
	}
	if slope >= 0 || fc.R2 < f.cfg.MinR2 || fc.TStat < f.cfg.MinTStat {
		return fc
	}
	fc.FillRate = -slope
	fc.Seconds = float64(s.lastFree) / fc.FillRate
	fc.OK = true
	return fc
}

// Prune forgets series not observed for a whole window before now, so
// unmounted filesystems do not hold memory. It scans at most once per
// bucket width, so calling it every scrape is cheap.
func (f *Forecaster[K]) Prune(now time.Time) {
	if now.Sub(f.lastPrune).Seconds() < f.width && !now.Before(f.lastPrune) {
		return
	}
	f.lastPrune = now
	cutoff := now.Add(-f.cfg.Window)
	for k, s := range f.series {
		if s.last.Before(cutoff) {
			delete(f.series, k)
		}
	}
}

// Len returns the number of series held.
func (f *Forecaster[K]) Len() int { return len(f.series) }
