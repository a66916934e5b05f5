package signs

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPublishReplacesOneSourcesCounters(t *testing.T) {
	b := New()
	b.Publish("stack", map[string][]Counter{
		"wwn-a": {{Kind: KernelIOErrors, Subject: "SCSI ioerr_cnt of sda", Value: 3}},
		"wwn-b": {{Kind: FilesystemErrors, Subject: "ext4 errors on sdb1 (/data)", Value: 1}},
	})
	b.Publish("latency", map[string][]Counter{"wwn-a": {{Kind: KernelIOErrors, Subject: "block layer read errors of sda", Value: 2}}})
	assert.Equal(t, []Counter{
		{Kind: KernelIOErrors, Subject: "SCSI ioerr_cnt of sda", Value: 3},
		{Kind: KernelIOErrors, Subject: "block layer read errors of sda", Value: 2},
	}, b.Counters("wwn-a"))

	// The stack source no longer sees wwn-b: gone; latency's counters stay.
	b.Publish("stack", map[string][]Counter{"wwn-a": {{Kind: KernelIOErrors, Subject: "SCSI ioerr_cnt of sda", Value: 4}}})
	assert.Nil(t, b.Counters("wwn-b"))
	assert.Len(t, b.Counters("wwn-a"), 2)
	b.Publish("stack", nil)
	b.Publish("latency", nil)
	assert.Nil(t, b.Counters("wwn-a"))
	assert.Nil(t, b.Counters(""))
}

func TestNilBoard(t *testing.T) {
	var b *Board
	b.Publish("stack", map[string][]Counter{"x": {{Kind: KernelIOErrors, Subject: "s", Value: 1}}})
	assert.Nil(t, b.Counters("x"))
}

func TestConcurrent(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for v := range 200 {
				b.Publish(string(rune('a'+i)), map[string][]Counter{"d": {{Kind: KernelIOErrors, Subject: "s", Value: uint64(v)}}})
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				_ = b.Counters("d")
			}
		}()
	}
	wg.Wait()
	assert.Len(t, b.Counters("d"), 4)
}
