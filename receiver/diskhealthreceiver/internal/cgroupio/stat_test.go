package cgroupio

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

func TestParseIOStat(t *testing.T) {
	// Kernel 6.x with iocost enabled prints cost.* keys after the six counters; 4.x/5.0 had no discard.
	in := "259:0 rbytes=90112 wbytes=4096 rios=22 wios=1 dbytes=512 dios=1 cost.vrate=100.00 cost.usage=12\n" +
		"8:0 rbytes=1 wbytes=2 rios=3 wios=4\n\n" +
		"253:1048575 rbytes=18446744073709551615 wbytes=0 rios=0 wios=0 dbytes=0 dios=0\n"
	got, err := ParseIOStat([]byte(in), nil)
	require.NoError(t, err)
	assert.Equal(t, []DeviceStat{
		{Major: 259, Minor: 0, Counters: Counters{ReadBytes: 90112, WriteBytes: 4096, DiscardBytes: 512, ReadOps: 22, WriteOps: 1, DiscardOps: 1}, HasDiscard: true},
		{Major: 8, Minor: 0, Counters: Counters{ReadBytes: 1, WriteBytes: 2, ReadOps: 3, WriteOps: 4}},
		{Major: 253, Minor: 1048575, Counters: Counters{ReadBytes: 18446744073709551615}, HasDiscard: true},
	}, got)
	assert.Equal(t, uint64(90112+4096+512), got[0].Bytes())

	// An empty io.stat (a cgroup that never did I/O) is no device and no error.
	got, err = ParseIOStat(nil, got)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestParseIOStatErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		is             error
		kept, line     int
		device, field  string
	}{
		{name: "bad device", in: "8-0 rbytes=1\n8:16 rbytes=2\n", want: `io.stat line 1 "8-0": device is not major:minor`, is: errDevice, kept: 1, line: 1},
		{name: "major out of range", in: "4294967296:0 rbytes=1\n", want: `io.stat line 1 "4294967296:0": device is not major:minor`, is: errDevice, line: 1},
		{name: "bad value", in: "8:0 rbytes=2\n8:16 rbytes=x wbytes=1\n", want: `io.stat line 2 (8:16): field rbytes "x": invalid syntax`, is: strconv.ErrSyntax, kept: 1, line: 2, device: "8:16", field: "rbytes"},
		{name: "overflow", in: "8:0 wios=18446744073709551616\n", want: `io.stat line 1 (8:0): field wios "18446744073709551616": value out of range`, is: strconv.ErrRange, line: 1, device: "8:0", field: "wios"},
		{name: "no equals", in: "8:0 rbytes\n", want: `io.stat line 1 (8:0) "rbytes": field is not key=value`, is: errField, line: 1, device: "8:0"},
		{name: "device twice", in: "8:0 rbytes=1\n8:0 rbytes=2\n", want: "io.stat line 2 (8:0): device appears twice", is: errTwice, kept: 1, line: 2, device: "8:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIOStat([]byte(tc.in), nil)
			require.ErrorIs(t, err, tc.is)
			require.EqualError(t, err, tc.want)
			var le *parseerr.Line
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "io.stat", le.File)
			assert.Equal(t, tc.line, le.Line)
			assert.Equal(t, tc.device, le.Device)
			assert.Equal(t, tc.field, le.Field)
			assert.Len(t, got, tc.kept)
		})
	}
}

func TestParseBlkio(t *testing.T) {
	bytesFile := "7:0 Read 0\n7:0 Write 67108864\n7:0 Sync 67108864\n7:0 Async 0\n7:0 Discard 4096\n7:0 Total 67112960\n" +
		"8:0 Read 512\n8:0 Write 0\n8:0 Sync 0\n8:0 Async 512\n8:0 Total 512\nTotal 67113472\n"
	opsFile := "7:0 Read 0\n7:0 Write 128\n7:0 Sync 128\n7:0 Async 0\n7:0 Discard 1\n7:0 Total 129\n" +
		"259:0 Read 7\n259:0 Total 7\nTotal 136\n"
	got, err := ParseBlkio([]byte(bytesFile), []byte(opsFile), nil)
	require.NoError(t, err)
	assert.Equal(t, []DeviceStat{
		{Major: 7, Minor: 0, Counters: Counters{WriteBytes: 67108864, DiscardBytes: 4096, WriteOps: 128, DiscardOps: 1}, HasDiscard: true},
		{Major: 8, Minor: 0, Counters: Counters{ReadBytes: 512}},
		{Major: 259, Minor: 0, Counters: Counters{ReadOps: 7}},
	}, got)

	// The root of a kernel that counts nothing yet: only the grand total.
	got, err = ParseBlkio([]byte("Total 0\n"), nil, got)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestParseBlkioErrors(t *testing.T) {
	for _, tc := range []struct {
		name, bytesIn, opsIn, want string
		is                         error
	}{
		{name: "two columns", bytesIn: "8:0 Read\n", want: BlkioBytesFile + ` line 1 "8:0 Read": want 3 columns`, is: errColumns},
		{name: "four columns", bytesIn: "8:0 Read 1 2\n", want: "want 3 columns", is: errColumns},
		{name: "bad device", bytesIn: "sda Read 1\n", want: `line 1 "sda": device is not major:minor`, is: errDevice},
		{name: "bad value in ops", bytesIn: "8:0 Read 1\n", opsIn: "8:0 Write -1\n", want: BlkioOpsFile + ` line 1 (8:0): field Write "-1": invalid syntax`, is: strconv.ErrSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ops []byte
			if tc.opsIn != "" {
				ops = []byte(tc.opsIn)
			}
			_, err := ParseBlkio([]byte(tc.bytesIn), ops, nil)
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
