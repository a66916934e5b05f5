package iostat

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestWrapRuleWhateverInFlight is the wrap rule as a property (issue 31): a 32-bit millisecond field that
// steps back by any amount (1 to 2^32 − 1), on a host up from minutes to more than 50 days (io_ticks has
// then wrapped itself), with 0 to 2^32 − 1 requests in flight before and after, counts its modular
// increase d exactly (sysstat's difference) when the clock allows it — io_ticks d ≤ Δt + 1 s, the
// per-request sums d ≤ (Δt + 1 s) × MaxInFlight — and nothing otherwise. So utilization never exceeds
// (Δt + 1 s) / Δt, io_time never gains more than Δt + 1 s, aqu-sz never exceeds MaxInFlight × that.
// (Before, anything in flight loosened the io_ticks bound by the uptime: on a host up 50 days a step back
// of 895 s in 1 s gave utilization 895 304.)
func TestWrapRuleWhateverInFlight(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 5))
	uptimes := []time.Duration{5 * time.Minute, time.Hour, 3 * 24 * time.Hour, 1 << 31 * time.Millisecond,
		30 * 24 * time.Hour, 1 << 32 * time.Millisecond, 50 * 24 * time.Hour, 400 * 24 * time.Hour}
	inFlights := []uint64{0, 1, 32, 1024, MaxInFlight - 1, MaxInFlight, 1<<31 - 1, 1<<32 - 1}
	intervals := []time.Duration{time.Second, 10 * time.Second, 30 * time.Second, 5 * time.Minute}
	for _, up := range uptimes {
		for _, dt := range intervals {
			wall := uint64((dt + slack).Milliseconds())
			// Steps back at every edge: tiny, the clock's bound (in modular increase), 2^31 ± 1, near 2^32,
			// then random ones, uniform and log-uniform over 1 .. 2^32 − 1.
			backs := []uint64{1, 2, 1000, 1 << 16, 1<<31 - 1, 1 << 31, 1<<31 + 1, 1<<32 - 2, 1<<32 - 1,
				1<<32 - wall, 1<<32 - wall - 1, 1<<32 - wall + 1, 1<<32 - wall*MaxInFlight%(1<<32)}
			for range 24 {
				backs = append(backs, 1+rng.Uint64N(1<<32-1), 1+rng.Uint64N(uint64(1)<<(1+rng.IntN(32)))%(1<<32-1))
			}
			for _, back := range backs {
				for _, before := range inFlights {
					after := inFlights[rng.IntN(len(inFlights))]
					name := fmt.Sprintf("up=%v/dt=%v/back=%d/inflight=%d", up, dt, back, before)
					checkWrapRule(t, name, up, dt, back, before, after, rng)
				}
			}
		}
	}
}

// checkWrapRule reads one device at boot + up and dt later, with io_ticks, time_in_queue and write_ticks
// each stepping back by back (mod 2^32) from a value they could have at that uptime.
func checkWrapRule(t *testing.T, name string, up, dt time.Duration, back, before, after uint64, rng *rand.Rand) {
	t.Helper()
	e := NewEngine(boot)
	k := Key{Major: 259, Minor: 0, Name: "nvme0n1"}
	upMS := uint64(up.Milliseconds())
	var v [17]uint64
	v[0], v[4] = 1_000_000, 2_000_000
	v[8] = before
	v[9] = rng.Uint64N(upMS + 1)              // io_ticks ≤ uptime, printed mod 2^32
	v[10] = rng.Uint64N(upMS*MaxInFlight + 1) // time_in_queue ≤ uptime × MaxInFlight
	v[7] = v[10] - rng.Uint64N(v[10]+1)       // write_ticks ≤ time_in_queue
	if rng.IntN(4) == 0 {                     // a real wrap: just under 2^32 before
		v[9], v[10], v[7] = 1<<32-1-rng.Uint64N(1000), 1<<32-1-rng.Uint64N(1000), 1<<32-1-rng.Uint64N(1000)
	}
	t0 := boot.Add(up)
	prev := e.Update(k, statOf(k, &v, 20), t0)
	e.EndScrape(t0)
	d := 1<<32 - back // the modular increase of a step back by back
	w := v
	w[4] += 10 // ten writes completed
	w[8] = after
	w[9], w[10], w[7] = uint64(uint32(v[9])-uint32(back)), uint64(uint32(v[10])-uint32(back)), uint64(uint32(v[7])-uint32(back))
	r := e.Update(k, statOf(k, &w, 20), t0.Add(dt))
	checkResult(t, &prev, r, t0.Add(dt))
	if !r.HasGauges || r.Reset || !r.Start.Equal(prev.Start) {
		t.Fatalf("%s: not one series with gauges: %+v", name, r)
	}

	wallMS := uint64((dt + slack).Milliseconds())
	sec := dt.Seconds()
	ioTime := r.Counters.IOTime - prev.Counters.IOTime
	if ioTime > (dt+slack).Seconds()*(1+1e-12) || r.Gauges.Utilization > (dt+slack).Seconds()/sec*(1+1e-12) {
		t.Fatalf("%s: io_time +%v s, utilization %v in %v", name, ioTime, r.Gauges.Utilization, dt)
	}
	wantIO := uint64(0)
	if d <= wallMS {
		wantIO = d // a wrap the clock allows: exactly sysstat's modular difference
	}
	if got := r.Counters.IOTime - prev.Counters.IOTime; !near(got, float64(wantIO)/1000) || !near(r.Gauges.Utilization, float64(wantIO)/1000/sec) {
		t.Fatalf("%s: io_ticks +%d (mod 2^32): io_time +%v s, utilization %v; want +%v s, %v",
			name, d, got, r.Gauges.Utilization, float64(wantIO)/1000, float64(wantIO)/1000/sec)
	}

	wantSum := uint64(0)
	if d <= min(wallMS*MaxInFlight, wrapLimit-1) {
		wantSum = d
	}
	if got := r.Counters.WeightedIOTime - prev.Counters.WeightedIOTime; !near(got, float64(wantSum)/1000) ||
		!near(r.Gauges.QueueLength, float64(wantSum)/1000/sec) {
		t.Fatalf("%s: time_in_queue +%d (mod 2^32): +%v s, aqu-sz %v; want +%v s", name, d, got, r.Gauges.QueueLength, float64(wantSum)/1000)
	}
	if got := r.Counters.WriteTime - prev.Counters.WriteTime; !near(got, float64(wantSum)/1000) || !near(r.Gauges.WriteAwait, float64(wantSum)/1000/10) {
		t.Fatalf("%s: write_ticks +%d (mod 2^32): +%v s, w_await %v; want +%v s", name, d, got, r.Gauges.WriteAwait, float64(wantSum)/1000)
	}
	if r.Gauges.QueueLength > MaxInFlight*(dt+slack).Seconds()/sec*(1+1e-12) {
		t.Fatalf("%s: aqu-sz %v", name, r.Gauges.QueueLength)
	}
}

// near compares two float64 times with a tolerance for the sums of float seconds the counters are.
func near(got, want float64) bool {
	diff := got - want
	return diff <= 1e-6+1e-12*want && -diff <= 1e-6+1e-12*want
}
