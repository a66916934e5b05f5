package iostat

import "time"

// Counter32Delta is the increase of a 32-bit kernel counter of events (one
// that wraps at 2^32) from prev to cur, read dt apart, under the wrap rule of
// the tick fields: a step back is the counter passing 2^32 only when its
// modular increase is at most what perSecond events a second allow over dt
// plus slack, and below 2^31. ok is false for any other step back: the
// counter restarted (a re-created device), and a new series begins.
func Counter32Delta(prev, cur uint32, dt time.Duration, perSecond uint64) (delta uint64, ok bool) {
	if cur >= prev {
		return uint64(cur - prev), true
	}
	if dt <= 0 || perSecond == 0 {
		return 0, false
	}
	limit := uint64(wrapLimit - 1)
	// Below this many ms the product cannot overflow and may fall under the cap.
	if wall := uint64((dt + slack).Milliseconds()); wall <= (wrapLimit/perSecond+1)*1000 {
		limit = min(wall*perSecond/1000, limit)
	}
	d := plausibleDelta(prev, cur, limit)
	return d, d != 0
}
