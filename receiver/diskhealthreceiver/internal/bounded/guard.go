package bounded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

var (
	// ErrTimeout is wrapped by Do's error when the call did not return
	// within the timeout; the call goes on in the background.
	ErrTimeout = errors.New("no answer within the deadline")
	// ErrInFlight is wrapped by Do's error when an earlier call with the
	// same key has not returned yet; nothing was started.
	ErrInFlight = errors.New("an earlier call has not returned yet")
)

// Guard runs calls with a deadline and at most one outstanding call per
// key. The zero value is ready to use; a Guard is safe for concurrent use
// and must not be copied after first use.
type Guard struct {
	mu   sync.Mutex
	busy map[string]bool
	wg   sync.WaitGroup
}

// Do runs fn in its own goroutine and returns its result, or an error
// wrapping ErrTimeout once timeout has passed (timeout <= 0 means no
// deadline other than ctx's), the context's error if ctx ends first, or
// ErrInFlight if an earlier call for key is still running. fn must not
// touch memory the caller reuses after Do returns: an abandoned fn keeps
// running.
func Do[T any](ctx context.Context, g *Guard, key string, timeout time.Duration, fn func() (T, error)) (T, error) {
	var zero T
	g.mu.Lock()
	if g.busy[key] {
		g.mu.Unlock()
		return zero, fmt.Errorf("%s: %w", key, ErrInFlight)
	}
	if g.busy == nil {
		g.busy = map[string]bool{}
	}
	g.busy[key] = true
	g.wg.Add(1)
	g.mu.Unlock()

	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer g.wg.Done()
		v, err := fn()
		g.mu.Lock()
		delete(g.busy, key)
		g.mu.Unlock()
		done <- result{v, err}
	}()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-expired:
		return zero, fmt.Errorf("%s: %w (%v)", key, ErrTimeout, timeout)
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: %w", key, ctx.Err())
	}
}

// Busy reports whether a call for key is still running.
func (g *Guard) Busy(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy[key]
}

// Wait blocks until every call started through g has returned, abandoned
// ones included. Tests call it before checking for leaked goroutines;
// shutdown code may call it with its own bound.
func (g *Guard) Wait() { g.wg.Wait() }
