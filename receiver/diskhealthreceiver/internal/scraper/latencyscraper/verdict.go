package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/noisy"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// Names of the noisy-neighbour log events.
const (
	eventNoisyNeighbor        = "disk_health.noisy_neighbor"
	eventNoisyNeighborCleared = "disk_health.noisy_neighbor.cleared"
)

// victimQuantile is the victim signal's quantile: with min_victim_ios 20 it is at least the 18th of
// 20 requests, so two stragglers (a metadata read, a flush) do not move it, while the bulk of the
// requests queueing behind a neighbour does (docs/block-latency.md, per-pod latency).
const victimQuantile = 0.9

// noisyPoint is one disk_health.container.disk.noisy_neighbor point: the aggressor's share for an open
// episode, 0 for one that just closed.
type noisyPoint struct {
	ep     noisy.Episode
	closed bool
}

// verdictInput is the folder's last interval as the engine takes it: per kept device (by name) every
// live cgroup's requests, time in flight and tail latency there.
func verdictInput(f *folder, ids map[biolat.Dev]pointIdentity) []noisy.Device {
	var out []noisy.Device
	for i := range f.window {
		w := &f.window[i]
		id, ok := ids[w.dev]
		if !ok {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Device != id.device {
			out = append(out, noisy.Device{Device: id.device, Busy: f.devBusy[w.dev]})
		}
		d := &out[len(out)-1]
		h := &w.hist
		d.Samples = append(d.Samples, noisy.Sample{Cgroup: w.path, IOs: h.Count, Busy: h.Sum,
			Latency: noisy.Quantile(h.ZeroCount, biolat.ZeroThreshold, h.Offset, h.Buckets, biolat.Scale, victimQuantile)})
	}
	return out
}

// judge runs the verdict over the folder's last interval at ts: its events go to the buffer, and the
// gauge's points are returned.
func (s *latencyScraper) judge(ids map[biolat.Dev]pointIdentity, ts pcommon.Timestamp, errs *scrapererror.ScrapeErrors) []noisyPoint {
	in := verdictInput(s.folder, ids)
	if err := s.addStalls(in); err != nil {
		errs.AddPartial(emit.CountErrors(err), err)
	}
	events := s.verdict.Update(ts.AsTime(), in)
	byName := byDeviceName(ids)
	var points []noisyPoint
	for _, ep := range s.verdict.Open() {
		points = append(points, noisyPoint{ep: ep})
	}
	for _, ev := range events {
		if ev.Kind == noisy.Cleared {
			points = append(points, noisyPoint{ep: ev.Episode, closed: true})
		}
		s.appendEvent(ev, byName[ev.Device], ts.AsTime())
	}
	return points
}

// stallMark is a cgroup's io.pressure "some" total (µs) and the scrape it was read at.
type stallMark struct {
	total  uint64
	scrape uint64
}

// addStalls gives, on cgroup v2, each cgroup that could be judged (min_victim_ios requests on a
// device) its io.pressure stall since the last scrape, read once per cgroup. A cgroup read for the
// first time, or not at the previous scrape, has no interval yet. A cgroup removed meanwhile, or a
// kernel without PSI, is skipped; any other read error is that cgroup's alone.
func (s *latencyScraper) addStalls(devs []noisy.Device) error {
	if s.stalls == nil {
		return nil
	}
	s.scrapes++
	stall := map[string]*float64{}
	var errs []error
	for i := range devs {
		for j := range devs[i].Samples {
			v := &devs[i].Samples[j]
			if v.IOs < uint64(s.cfg.PerCgroup.NoisyNeighbor.MinVictimIOs) {
				continue
			}
			d, read := stall[v.Cgroup]
			if !read {
				p, err := pressure.Read(filepath.Join(s.cgDir, filepath.FromSlash(v.Cgroup), "io.pressure"))
				switch {
				case err == nil:
					last, ok := s.stalls[v.Cgroup]
					s.stalls[v.Cgroup] = stallMark{p.Some.TotalMicros, s.scrapes}
					if ok && last.scrape == s.scrapes-1 && p.Some.TotalMicros >= last.total {
						x := float64(p.Some.TotalMicros-last.total) / 1e6
						d = &x
					}
				case !pressure.Unavailable(err):
					errs = append(errs, err)
				}
				stall[v.Cgroup] = d
			}
			if d != nil {
				v.Stall, v.HasStall = *d, true
			}
		}
	}
	for path, m := range s.stalls {
		if m.scrape != s.scrapes {
			delete(s.stalls, path)
		}
	}
	return errors.Join(errs...)
}

// appendEvent buffers the log record of an episode opening or closing.
func (s *latencyScraper) appendEvent(ev noisy.Event, id pointIdentity, at time.Time) {
	ep := &ev.Episode
	names := make([]string, len(ep.Aggressors))
	for i, a := range ep.Aggressors {
		names[i] = fmt.Sprintf("%s (%.0f %%)", a.Cgroup, 100*a.Share)
	}
	name, sev := eventNoisyNeighbor, plog.SeverityNumberWarn
	body := fmt.Sprintf("%s waits on %s: its p90 latency %s is %.1f × its baseline %s while %s %s the device's queue occupancy",
		ep.Victim, ep.Device, seconds(ep.Latency), ep.Latency/ep.LatencyBaseline, seconds(ep.LatencyBaseline),
		strings.Join(names, ", "), pluralHold(len(names)))
	if ep.HasStall {
		body += fmt.Sprintf("; it stalled on I/O %.0f %% of the interval (baseline %.0f %%)", 100*ep.Stall, 100*ep.StallBaseline)
	}
	if ev.Kind == noisy.Cleared {
		name, sev = eventNoisyNeighborCleared, plog.SeverityNumberInfo
		body = fmt.Sprintf("%s no longer waits on %s (episode of %s, since %s, named %s)",
			ep.Victim, ep.Device, ev.At.Sub(ep.Since).Round(time.Second), ep.Since.UTC().Format(time.RFC3339), strings.Join(names, ", "))
	}
	lr := s.events.Record(pcommon.NewResource(), at, s.now(), name, sev, body)
	a := lr.Attributes()
	id.device = ep.Device
	putCgroupIdentity(a, ep.Victim, id)
	paths := a.PutEmptySlice("noisy_neighbor.aggressor.cgroup.paths")
	shares := a.PutEmptySlice("noisy_neighbor.aggressor.shares")
	for _, ag := range ep.Aggressors {
		paths.AppendEmpty().SetStr(ag.Cgroup)
		shares.AppendEmpty().SetDouble(ag.Share)
	}
	a.PutDouble("noisy_neighbor.victim.share", ep.VictimShare)
	a.PutDouble("noisy_neighbor.victim.latency", ep.Latency)
	a.PutDouble("noisy_neighbor.victim.baseline", ep.LatencyBaseline)
	if ep.HasStall {
		a.PutDouble("noisy_neighbor.victim.stall", ep.Stall)
		a.PutDouble("noisy_neighbor.victim.stall_baseline", ep.StallBaseline)
	}
}

func pluralHold(n int) string {
	if n == 1 {
		return "holds"
	}
	return "hold"
}

// seconds prints a latency in ms or s.
func seconds(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.2g ms", v*1000)
	}
	return fmt.Sprintf("%.2g s", v)
}

// recordNoisy records the gauge: the victim's identity and its episode's first aggressor, whose
// share is rounded so that the episode stays one series.
func recordNoisy(mb *metadata.MetricsBuilder, points []noisyPoint, ids map[biolat.Dev]pointIdentity, ts pcommon.Timestamp) {
	byName := byDeviceName(ids)
	for _, p := range points {
		id, ok := byName[p.ep.Device]
		if !ok || len(p.ep.Aggressors) == 0 {
			continue
		}
		agg := p.ep.Aggressors[0]
		share := math.Round(agg.Share*100) / 100
		if p.closed {
			share = 0
		}
		mb.RecordDiskHealthContainerDiskNoisyNeighborDataPoint(ts, share, p.ep.Victim, p.ep.Device, agg.Cgroup,
			cgroupOptions(p.ep.Victim, id)...)
	}
}

// byDeviceName indexes the reported devices' identities by kernel name, the engine's device key.
func byDeviceName(ids map[biolat.Dev]pointIdentity) map[string]pointIdentity {
	out := make(map[string]pointIdentity, len(ids))
	for _, pi := range ids {
		out[pi.device] = pi
	}
	return out
}
