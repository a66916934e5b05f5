package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixtures are the output of nfs-common 2.6.2's mountstats script (Debian 12) over the
// mountstats of TestNFSClientQEMU's guest (Linux 6.1): the v3 mount's and the nconnect=4 mount's
// accuracy rounds, with -S (the interval) and without (the counters since the mount).

func readNFSToolFixture(t testing.TB, name string) []byte {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "nfsiostat", name))
	require.NoError(t, err)
	return data
}

func TestParseMountstatsReport(t *testing.T) {
	r, err := parseMountstatsReport(readNFSToolFixture(t, "v3-rpc-since.txt"))
	require.NoError(t, err)
	assert.Equal(t, map[string]nfsToolOp{
		"READ":        {ops: 32, queue: 0.65625, rtt: 2.125, exe: 3},
		"WRITE":       {ops: 32, queue: 0.9375, rtt: 3.21875, exe: 4.3125},
		"GETATTR":     {ops: 1, rtt: 2, exe: 2},
		"LOOKUP":      {ops: 1, rtt: 2, exe: 3},
		"ACCESS":      {ops: 1, rtt: 3, exe: 6},
		"CREATE":      {ops: 1, queue: 2, rtt: 5, exe: 13},
		"READDIRPLUS": {ops: 1, rtt: 12, exe: 13},
		"FSSTAT":      {ops: 1, rtt: 2, exe: 10},
	}, r.ops)
	assert.False(t, r.bytes, "--rpc has no byte counts")

	r, err = parseMountstatsReport(readNFSToolFixture(t, "v3-report.txt"))
	require.NoError(t, err)
	assert.True(t, r.bytes)
	assert.Equal(t, uint64(2097152), r.readBytes)
	assert.Equal(t, uint64(2097152), r.writeBytes)
	assert.Len(t, r.ops, 11)
	assert.Equal(t, nfsToolOp{ops: 1, queue: 28, rtt: 1, exe: 32}, r.ops["NULL"])

	r, err = parseMountstatsReport(readNFSToolFixture(t, "v42n-rpc-since.txt"))
	require.NoError(t, err)
	assert.Equal(t, nfsToolOp{ops: 32, queue: 0.5625, rtt: 1.09375, exe: 1.78125}, r.ops["READ"])
	assert.Equal(t, nfsToolOp{ops: 1, exe: 1}, r.ops["STATFS"])
	assert.Len(t, r.ops, 8)

	op := "READ:\n\t32 ops (45%) \n\tavg bytes sent per op: 108\tavg bytes received per op: 65664\n"
	times := "\tbacklog wait: 0.656250 \tRTT: 2.125000 \ttotal execute time: 3.000000 (milliseconds)\n"
	for name, bad := range map[string]string{
		"cut after the name":    "READ:\n",
		"cut before the times":  op,
		"an operation twice":    op + times + op + times,
		"times without ops":     "READ:\n" + times,
		"ops outside":           "\t3 ops (1%)\n",
		"bad count":             strings.Replace(op, "32", "x", 1) + times,
		"negative time":         op + strings.Replace(times, "2.125000", "-2.125000", 1),
		"bad time":              op + strings.Replace(times, "2.125000", "2.1.2", 1),
		"other times line":      op + "\tbacklog wait: 1 RTT: 2\n",
		"one byte count":        "  client read 5 bytes via NFS READ\n",
		"a byte count twice":    "  client read 5 bytes via NFS READ\n  client read 5 bytes via NFS READ\n  client wrote 1 bytes via NFS WRITE\n",
		"bad byte count":        "  client read x bytes via NFS READ\n  client wrote 1 bytes via NFS WRITE\n",
		"name then name":        "READ:\nWRITE:\n",
		"ops twice in one op":   op + "\t3 ops (1%)\n" + times,
		"times after the times": op + times + times,
	} {
		_, err := parseMountstatsReport([]byte(bad))
		assert.Error(t, err, name)
	}
}

func TestParseIostatReport(t *testing.T) {
	r, err := parseIostatReport(readNFSToolFixture(t, "v3-iostat-since.txt"))
	require.NoError(t, err)
	assert.Equal(t, map[string]nfsIostatLine{
		"read":  {rtt: 2.125, exe: 3, queue: 0.656},
		"write": {rtt: 3.219, exe: 4.312, queue: 0.938},
	}, r)
	r, err = parseIostatReport(readNFSToolFixture(t, "v42n-iostat-since.txt"))
	require.NoError(t, err)
	assert.Equal(t, nfsIostatLine{rtt: 1.094, exe: 1.781, queue: 0.562}, r["read"])

	good := string(readNFSToolFixture(t, "v3-iostat-since.txt"))
	writeAt := strings.Index(good, "write:")
	require.Positive(t, writeAt)
	for name, bad := range map[string]string{
		"empty":            "",
		"write missing":    good[:writeAt],
		"values missing":   strings.TrimRight(good, "\n")[:strings.LastIndex(strings.TrimRight(good, "\n"), "\n")],
		"a column renamed": strings.Replace(good, "avg exe (ms)", "avg exec (ms)", 1),
		"a value missing":  strings.Replace(good, "3.000", "", 1),
		"bad time":         strings.Replace(good, "3.000", "3.x", 1),
		"read twice":       good + good[strings.Index(good, "read:"):strings.Index(good, "write:")],
	} {
		_, err := parseIostatReport([]byte(bad))
		assert.Error(t, err, name)
	}
}

func FuzzParseMountstatsReport(f *testing.F) {
	for _, name := range []string{"v3-rpc-since.txt", "v3-report.txt", "v42n-rpc-since.txt", "v3-iostat-since.txt"} {
		f.Add(readNFSToolFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := parseMountstatsReport(data); err == nil {
			for op, v := range r.ops {
				require.True(t, isOpName(op), "%q", op)
				require.True(t, v.queue >= 0 && v.rtt >= 0 && v.exe >= 0, "%s %+v", op, v)
			}
		}
		if r, err := parseIostatReport(data); err == nil {
			require.Len(t, r, 2)
			for class, v := range r {
				require.True(t, v.queue >= 0 && v.rtt >= 0 && v.exe >= 0, "%s %+v", class, v)
			}
		}
	})
}
