package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// GetWait bounds how long a read waits for the storage: the longest a scrape can spend on it.
const GetWait = time.Second

// CloseWait bounds the flush at Close when the caller's context has no earlier deadline (a collector's
// shutdown context may have none): a hung state directory must not hold the collector's exit.
const CloseWait = 5 * time.Second

// ErrNotAnswering is a read's error while the storage has not answered an earlier call within GetWait.
var ErrNotAnswering = errors.New("the storage did not answer within " + GetWait.String())

// Background is a storage client used by a scraper without ever running in the scrape's time: one
// goroutine of its own opens the client, serves its reads and writes, and closes it. Writes are
// queued, the latest value per key (written once however often it changed meanwhile), and flushed
// in one batch; a read waits for the goroutine at most GetWait (and half the caller's time left), and
// fails at once while the goroutine is stuck in an earlier call. A client that cannot be opened, a write
// refused (a full directory) or a read not answered (a hung one) is logged once as a WARN, and again
// only after the storage worked in between: it costs what is kept across restarts, never the
// collector's start or a scrape's deadline.
type Background struct {
	logger *zap.Logger
	what   string
	ctx    context.Context
	cancel context.CancelFunc
	gets   chan getRequest
	wake   chan struct{}
	// closing is closed by Close; done by the goroutine when it has returned.
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{}

	mu      sync.Mutex
	pending map[string]write
	// stuck: a read gave up waiting for the goroutine, which has not come back since; failed: the client
	// could not be opened (nothing is read or written).
	stuck  bool
	failed bool
	// warned: a problem of that kind (reading, writing) was logged and nothing has worked since.
	warned   [2]bool
	closeErr error
}

type write struct {
	data   []byte
	delete bool
}

type getRequest struct {
	key   string
	reply chan getReply
}

type getReply struct {
	data []byte
	err  error
}

// Problem kinds, each logged once.
const (
	reading = iota
	writing
)

// NewBackground starts the goroutine that opens the client with open; what names what is kept
// ("checkpoint state"), for the log.
func NewBackground(logger *zap.Logger, what string, open func(context.Context) (storage.Client, error)) *Background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Background{
		logger: logger, what: what, ctx: ctx, cancel: cancel,
		gets: make(chan getRequest), wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{}),
		pending: map[string]write{},
	}
	go b.run(open)
	return b
}

func (b *Background) run(open func(context.Context) (storage.Client, error)) {
	defer close(b.done)
	client, err := open(b.ctx)
	if err != nil {
		b.mu.Lock()
		b.failed, b.pending = true, nil
		b.mu.Unlock()
		b.problem(writing, fmt.Errorf("opening the storage client: %w", err))
		return
	}
	for {
		b.mu.Lock()
		b.stuck = false
		b.mu.Unlock()
		select {
		case req := <-b.gets:
			data, err := client.Get(b.ctx, req.key)
			req.reply <- getReply{data, err}
		case <-b.wake:
			b.flush(client)
		case <-b.closing:
			b.flush(client)
			b.closeErr = client.Close(b.ctx)
			return
		}
	}
}

// flush writes what is queued in one batch; what fails is queued again unless a newer value came.
func (b *Background) flush(client storage.Client) {
	b.mu.Lock()
	batch := b.pending
	b.pending = make(map[string]write, len(batch))
	b.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ops := make([]*storage.Operation, 0, len(batch))
	for k, w := range batch {
		if w.delete {
			ops = append(ops, storage.DeleteOperation(k))
		} else {
			ops = append(ops, storage.SetOperation(k, w.data))
		}
	}
	err := client.Batch(b.ctx, ops...)
	if err == nil {
		b.worked(writing)
		return
	}
	b.problem(writing, err)
	b.mu.Lock()
	for k, w := range batch {
		if _, newer := b.pending[k]; !newer {
			b.pending[k] = w
		}
	}
	b.mu.Unlock()
}

// Set queues data as key's value; it never waits.
func (b *Background) Set(key string, data []byte) { b.queue(key, write{data: data}) }

// Delete queues key's deletion; it never waits.
func (b *Background) Delete(key string) { b.queue(key, write{delete: true}) }

func (b *Background) queue(key string, w write) {
	b.mu.Lock()
	if b.failed {
		b.mu.Unlock()
		return
	}
	b.pending[key] = w
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Get returns key's value (nil: none), the queued one if a write of it is not flushed yet. Its error
// is logged once here; the caller only needs to know that nothing was read.
func (b *Background) Get(ctx context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	w, queued := b.pending[key]
	failed, stuck := b.failed, b.stuck
	b.mu.Unlock()
	switch {
	case queued && w.delete:
		return nil, nil
	case queued:
		return w.data, nil
	case failed:
		return nil, errors.New("the storage client is not open")
	case stuck:
		return nil, ErrNotAnswering
	}
	wait := GetWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline)/2)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	req := getRequest{key: key, reply: make(chan getReply, 1)}
	select {
	case b.gets <- req:
	case <-timer.C:
		return nil, b.notAnswering()
	case <-b.done:
		return nil, errors.New("the storage client is closed")
	}
	select {
	case r := <-req.reply:
		if r.err != nil {
			b.problem(reading, r.err)
		} else {
			b.worked(reading)
		}
		return r.data, r.err
	case <-timer.C:
		return nil, b.notAnswering()
	}
}

func (b *Background) notAnswering() error {
	b.mu.Lock()
	b.stuck = true
	b.mu.Unlock()
	b.problem(reading, ErrNotAnswering)
	return ErrNotAnswering
}

// Close flushes what is queued and closes the client, within ctx and CloseWait; past them it gives
// up, saying what was not flushed, and leaves the goroutine to end when the storage answers.
func (b *Background) Close(ctx context.Context) error {
	b.closeOnce.Do(func() { close(b.closing) })
	select {
	case <-b.done:
		// Already closed (a second Close, or the client was never opened): whatever ctx says.
		return b.closeErr
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, CloseWait)
	defer cancel()
	select {
	case <-b.done:
		return b.closeErr
	case <-ctx.Done():
		b.cancel()
		return fmt.Errorf("%s not flushed to the storage: %w", b.what, ctx.Err())
	}
}

func (b *Background) problem(kind int, err error) {
	b.mu.Lock()
	first := !b.warned[kind]
	b.warned[kind] = true
	b.mu.Unlock()
	if first {
		b.logger.Warn(b.what+" not kept across restarts: the storage failed", zap.Error(err))
	}
}

func (b *Background) worked(kind int) {
	b.mu.Lock()
	was := b.warned[kind]
	b.warned[kind] = false
	b.mu.Unlock()
	if was {
		b.logger.Info(b.what + " kept in the storage again")
	}
}
