package sanitize

import (
	"sync"

	"go.uber.org/zap"
)

// Notes logs the alterations String made: a kind's first alteration at WARN, once, and later growth of
// its counts at DEBUG, so a device whose 100 KB model is cut every scrape is one line in the log, not
// one per scrape. Safe for concurrent use: every source of a receiver shares one.
type Notes struct {
	mu     sync.Mutex
	last   [NumKinds]Stats
	warned [NumKinds]bool
}

// Log logs what changed in the counts since the previous call.
func (n *Notes) Log(logger *zap.Logger) {
	now := Snapshot()
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range now {
		if now[k] == n.last[k] {
			continue
		}
		fields := []zap.Field{
			zap.String("kind", Kind(k).String()), zap.Int("cap_bytes", Cap(Kind(k))),
			zap.Uint64("altered", now[k].Altered), zap.Uint64("cut", now[k].Cut),
		}
		if !n.warned[k] {
			n.warned[k] = true
			logger.Warn("Input strings made valid for telemetry: invalid UTF-8 replaced, control characters escaped, "+
				"values cut to the cap (logged once per kind; counts since start)", fields...)
		} else {
			logger.Debug("More input strings made valid for telemetry", fields...)
		}
		n.last[k] = now[k]
	}
}
