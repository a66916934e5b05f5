package store

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeClient is a storage client whose calls wait on hang while it is not nil (a hung state
// directory) and whose writes fail with writeErr while it is set (a full one).
type fakeClient struct {
	mu       sync.Mutex
	data     map[string][]byte
	batches  int
	writeErr error
	hang     chan struct{}
	closed   bool
}

func newFakeClient() *fakeClient { return &fakeClient{data: map[string][]byte{}} }

func (c *fakeClient) wait(ctx context.Context) error {
	c.mu.Lock()
	hang := c.hang
	c.mu.Unlock()
	if hang == nil {
		return nil
	}
	select {
	case <-hang:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *fakeClient) Get(ctx context.Context, key string) ([]byte, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[key], nil
}

func (c *fakeClient) Set(ctx context.Context, key string, value []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, value))
}

func (c *fakeClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c *fakeClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writeErr != nil {
		return c.writeErr
	}
	c.batches++
	for _, op := range ops {
		switch op.Type {
		case storage.Set:
			c.data[op.Key] = op.Value
		case storage.Delete:
			delete(c.data, op.Key)
		}
	}
	return nil
}

func (c *fakeClient) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *fakeClient) snapshot() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]string{}
	for k, v := range c.data {
		m[k] = string(v)
	}
	return m
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return zap.New(core), logs
}

func warnings(logs *observer.ObservedLogs) int {
	return logs.FilterLevelExact(zapcore.WarnLevel).Len()
}

// within fails the test if f has not returned after limit: what is tested is that it returns, the
// limit only keeps a regression from hanging the run.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		require.FailNow(t, what+" did not return")
	}
}

// TestBackgroundKeepsTheLatestPerKey: writes never wait; a key written several times is stored with its
// last value, a deleted key is gone, a queued value is read back before it is flushed, and Close
// flushes and closes the client.
func TestBackgroundKeepsTheLatestPerKey(t *testing.T) {
	c := newFakeClient()
	c.data["old"] = []byte("x")
	logger, logs := observed()
	b := NewBackground(logger, "test state", func(context.Context) (storage.Client, error) { return c, nil })
	for _, v := range []string{"1", "2", "3"} {
		b.Set("k", []byte(v))
	}
	b.Set("j", []byte("j"))
	b.Delete("old")
	got, err := b.Get(t.Context(), "k")
	require.NoError(t, err)
	assert.Equal(t, "3", string(got))
	require.NoError(t, b.Close(t.Context()))
	assert.Equal(t, map[string]string{"k": "3", "j": "j"}, c.snapshot())
	assert.True(t, c.closed)
	assert.Zero(t, logs.Len())
}

// TestBackgroundHungStorage (issue 43): with the storage hung (every call waits), writes still return
// at once, a read gives up within its wait (half the caller's time left) and the next reads fail at
// once, one WARN in all; Close gives up at its context's deadline. When the storage answers again, what
// was queued is written.
func TestBackgroundHungStorage(t *testing.T) {
	c := newFakeClient()
	c.hang = make(chan struct{})
	logger, logs := observed()
	b := NewBackground(logger, "test state", func(context.Context) (storage.Client, error) { return c, nil })
	within(t, 10*time.Second, "writes to a hung storage", func() {
		b.Set("a", []byte("1"))
		for range 100 {
			b.Set("b", []byte("2"))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	within(t, 10*time.Second, "reads from a hung storage", func() {
		_, err := b.Get(ctx, "c")
		require.ErrorIs(t, err, ErrNotAnswering)
		for range 10 {
			_, err = b.Get(t.Context(), "d")
			require.ErrorIs(t, err, ErrNotAnswering)
		}
	})
	assert.Equal(t, 1, warnings(logs), "one WARN")
	closeCtx, cancelClose := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancelClose()
	within(t, 10*time.Second, "Close on a hung storage", func() {
		require.ErrorContains(t, b.Close(closeCtx), "not flushed")
	})
	// The storage answers again: the goroutine ends (nothing outlives the test).
	close(c.hang)
	<-b.done
}

// TestBackgroundFullStorage (issue 43): a storage that refuses writes (ENOSPC) costs one WARN however
// many writes fail; the values are kept queued, the latest per key, and written once it accepts them
// again, which is said once.
func TestBackgroundFullStorage(t *testing.T) {
	c := newFakeClient()
	c.writeErr = syscall.ENOSPC
	logger, logs := observed()
	b := NewBackground(logger, "test state", func(context.Context) (storage.Client, error) { return c, nil })
	for i := range 20 {
		b.Set("k", []byte{byte('a' + i)})
		within(t, 10*time.Second, "a read", func() {
			_, err := b.Get(t.Context(), "other")
			require.NoError(t, err, "reads still work")
		})
	}
	require.Eventually(t, func() bool { return warnings(logs) > 0 }, 10*time.Second, time.Millisecond, "a flush failed")
	// One more write, to a storage with room again.
	c.mu.Lock()
	c.writeErr = nil
	c.mu.Unlock()
	b.Set("j", []byte("j"))
	require.NoError(t, b.Close(t.Context()))
	assert.Equal(t, map[string]string{"k": "t", "j": "j"}, c.snapshot())
	assert.Equal(t, 1, warnings(logs), "one WARN")
	assert.Equal(t, 1, logs.FilterMessageSnippet("again").Len())
}

// TestBackgroundNotOpened (issue 43): a client that cannot be opened (a full or locked directory) is
// one WARN; reads fail at once, writes are dropped, Close returns nil.
func TestBackgroundNotOpened(t *testing.T) {
	logger, logs := observed()
	b := NewBackground(logger, "test state", func(context.Context) (storage.Client, error) {
		return nil, errors.New("timeout")
	})
	<-b.done
	b.Set("k", []byte("v"))
	_, err := b.Get(t.Context(), "k")
	require.Error(t, err)
	require.NoError(t, b.Close(t.Context()))
	assert.Equal(t, 1, warnings(logs))
	assert.Contains(t, logs.All()[0].ContextMap()["error"], "timeout")
}
