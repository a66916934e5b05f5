package ata

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfTestPage builds a self-test log whose ring holds entries in slot
// order and whose index points at slot newest (1-based).
func selfTestPage(newest int, entries ...SelfTestEntry) []byte {
	b := make([]byte, PageSize)
	b[0] = 1
	for i, e := range entries {
		d := b[2+i*selfTestEntrySize:]
		d[0] = e.Test
		d[1] = byte(e.Status)<<4 | e.RemainingPercent/10
		binary.LittleEndian.PutUint16(d[2:], e.LifetimeHours)
		binary.LittleEndian.PutUint32(d[5:], e.FailingLBA)
	}
	b[508] = byte(newest)
	return sealPage(b)
}

func TestSelfTestLogOrderAndFailures(t *testing.T) {
	short := func(h uint16, s SelfTestStatus) SelfTestEntry {
		return SelfTestEntry{Test: 1, Status: s, LifetimeHours: h}
	}
	ext := func(h uint16, s SelfTestStatus) SelfTestEntry {
		return SelfTestEntry{Test: 2, Status: s, LifetimeHours: h}
	}

	// Slots 1..3 written in order; the newest is slot 3.
	l, err := ParseSelfTestLog(selfTestPage(3, short(10, SelfTestCompleted), short(20, SelfTestFailedRead), short(30, SelfTestCompleted)))
	require.NoError(t, err)
	require.Len(t, l.Entries, 3)
	assert.Equal(t, []uint16{30, 20, 10}, []uint16{l.Entries[0].LifetimeHours, l.Entries[1].LifetimeHours, l.Entries[2].LifetimeHours})
	e, failed := l.UnresolvedFailure()
	assert.True(t, failed, "a later short test does not clear a read failure")
	assert.Equal(t, uint16(20), e.LifetimeHours)
	assert.Equal(t, "failed (read element)", e.Status.String())

	// A later extended test that passed supersedes the failure.
	l, err = ParseSelfTestLog(selfTestPage(3, short(10, SelfTestCompleted), short(20, SelfTestFailedRead), ext(30, SelfTestCompleted)))
	require.NoError(t, err)
	_, failed = l.UnresolvedFailure()
	assert.False(t, failed)

	// An aborted extended test does not.
	l, err = ParseSelfTestLog(selfTestPage(3, short(10, SelfTestCompleted), ext(20, SelfTestFailedElectrical), ext(30, SelfTestAbortedByHost)))
	require.NoError(t, err)
	_, failed = l.UnresolvedFailure()
	assert.True(t, failed)

	// Ring wrap: the newest is slot 1, so slot 21 comes right after it.
	var ring [21]SelfTestEntry
	for i := range ring {
		ring[i] = short(uint16(100+i), SelfTestCompleted)
	}
	ring[0] = short(999, SelfTestInProgress)
	l, err = ParseSelfTestLog(selfTestPage(1, ring[:]...))
	require.NoError(t, err)
	require.Len(t, l.Entries, 21)
	assert.Equal(t, uint16(999), l.Entries[0].LifetimeHours)
	assert.Equal(t, uint16(120), l.Entries[1].LifetimeHours)
	assert.Equal(t, SelfTestInProgress, l.Entries[0].Status)
	assert.False(t, l.Entries[0].Status.Failed())

	_, err = ParseSelfTestLog(selfTestPage(22))
	require.ErrorContains(t, err, "index 22")
	bad := selfTestPage(1, short(1, SelfTestCompleted))
	bad[5]++
	_, err = ParseSelfTestLog(bad)
	assert.ErrorIs(t, err, ErrChecksum)
}

func TestSelfTestStatusStrings(t *testing.T) {
	for s := SelfTestStatus(0); s < 16; s++ {
		assert.NotEmpty(t, s.String())
		assert.Equal(t, s >= 3 && s <= 8, s.Failed(), "status %d", s)
	}
	assert.Equal(t, "reserved status 9", SelfTestStatus(9).String())
}

func TestErrorLogSummary(t *testing.T) {
	b := make([]byte, PageSize)
	b[0], b[1] = 1, 2 // newest in structure 2
	binary.LittleEndian.PutUint16(b[452:], 7)
	for slot, hours := range map[int]uint16{0: 100, 1: 200} {
		e := b[2+slot*errorLogEntrySize+60:]
		e[1], e[7] = 0x40, 0x51 // UNC, DRDY|DSC|ERR
		e[3], e[4], e[5], e[6] = 0x78, 0x56, 0x34, 0xE2
		e[27] = 3
		binary.LittleEndian.PutUint16(e[28:], hours)
	}
	l, err := ParseErrorLogSummary(sealPage(b))
	require.NoError(t, err)
	assert.Equal(t, uint16(7), l.ErrorCount)
	require.Len(t, l.Entries, 2)
	assert.Equal(t, uint16(200), l.Entries[0].LifetimeHours)
	assert.Equal(t, uint16(100), l.Entries[1].LifetimeHours)
	assert.Equal(t, ErrorLogEntry{Error: 0x40, Status: 0x51, LBA: 0x02345678, State: 3, LifetimeHours: 200}, l.Entries[0])

	b[1] = 6
	_, err = ParseErrorLogSummary(sealPage(b))
	require.ErrorContains(t, err, "index 6")
	b[1] = 2
	b[100]++
	_, err = ParseErrorLogSummary(b)
	assert.ErrorIs(t, err, ErrChecksum)
}
