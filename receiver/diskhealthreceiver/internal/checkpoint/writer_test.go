package checkpoint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWriter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * 10 * time.Second) }
	save := Save{From: at(1), To: at(4), Bytes: 1000}
	const job, log, other = "/kubepods/pod-a/ctr", "/system.slice/log.service", "/kubepods/pod-b/ctr"
	for _, tc := range []struct {
		name   string
		writes []Write
		want   string
	}{
		{"one cgroup wrote the save", []Write{
			{at(2), job, 8, 0, 400}, {at(3), job, 8, 0, 300}, {at(4), job, 8, 0, 320}, {at(3), log, 8, 0, 20},
		}, job},
		{"more than half, summed over the span, is enough", []Write{
			{at(2), job, 8, 0, 300}, {at(3), job, 8, 0, 201}, {at(3), log, 8, 0, 499},
		}, job},
		{"exactly half is not", []Write{{at(2), job, 8, 0, 500}, {at(3), log, 8, 0, 20}}, ""},
		{"two cgroups above half: none", []Write{{at(2), job, 8, 0, 900}, {at(3), other, 8, 0, 600}}, ""},
		{"writes outside the span do not count", []Write{
			{at(1), job, 8, 0, 900}, {at(5), job, 8, 0, 900}, {at(2), job, 8, 0, 100},
		}, ""},
		{"the interval ending at To counts, the one ending at From does not", []Write{
			{at(4), job, 8, 0, 600}, {at(1), other, 8, 0, 600},
		}, job},
		{"writes to another disk (a partition's, or a second disk) do not count", []Write{
			{at(2), job, 8, 1, 900}, {at(2), job, 8, 16, 900}, {at(3), other, 8, 0, 550},
		}, other},
		{"nobody wrote: none", nil, ""},
	} {
		got, ok := Writer(save, 8, 0, tc.writes)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.want != "", ok, tc.name)
	}
	_, ok := Writer(Save{From: at(1), To: at(4)}, 8, 0, []Write{{at(2), job, 8, 0, 10}})
	assert.False(t, ok, "no bytes saved: no writer")
}
