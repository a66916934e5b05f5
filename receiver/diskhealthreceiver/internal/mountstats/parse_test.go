package mountstats

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// parsed is what a golden records for one fixture: the mounts, their classes, and the errors.
type parsed struct {
	Mounts  []Mount
	Classes map[string][NumClasses]Op
	Errors  []string
}

// TestParseFixtures parses every fixture (several kernels' layouts, malformed and truncated files)
// against its golden.
func TestParseFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			mounts, err := Parse(data)
			p := parsed{Mounts: mounts, Classes: map[string][NumClasses]Op{}}
			for i := range mounts {
				p.Classes[mounts[i].MountPoint] = mounts[i].Classes()
			}
			var lines *parseerr.Lines
			if errors.As(err, &lines) {
				for _, l := range lines.Lines {
					p.Errors = append(p.Errors, l.Error())
				}
			} else {
				require.NoError(t, err)
			}
			testkit.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), p)
		})
	}
}

// TestNconnectSummed: the four transports of an nconnect=4 mount are summed, max slots is the
// largest, and the mount's escaped name is decoded.
func TestNconnectSummed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "k6.8-v4.2-nconnect4.txt"))
	require.NoError(t, err)
	mounts, err := Parse(data)
	require.NoError(t, err)
	require.Len(t, mounts, 2)
	m := mounts[1]
	assert.Equal(t, "/mnt/train set", m.MountPoint)
	assert.Equal(t, "nas03:/train set", m.Device)
	assert.Equal(t, 4, m.Transports)
	assert.Equal(t, Transport{Connects: 5, Sends: 216034, Receives: 216033, Requests: 3216027, Backlog: 16,
		MaxSlots: 128, Sending: 4779, Pending: 2799734}, m.Transport)
}

// TestMalformedCostsOnlyItsMount: a bad number, a bad op line and a bad header each cost their own
// block; the good block after them is read.
func TestMalformedCostsOnlyItsMount(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "malformed.txt"))
	require.NoError(t, err)
	mounts, err := Parse(data)
	require.Len(t, mounts, 1)
	assert.Equal(t, "/mnt/datasets", mounts[0].MountPoint)
	var lines *parseerr.Lines
	require.ErrorAs(t, err, &lines)
	assert.Equal(t, 3, lines.Count)
}

// TestTruncatedDropsTheCutMount: a read cut inside a block keeps the blocks before it only.
func TestTruncatedDropsTheCutMount(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "k6.8-v4.2-nconnect4.txt"))
	require.NoError(t, err)
	full, err := Parse(data)
	require.NoError(t, err)
	for _, cut := range []int{100, 600, 1200, 2500, len(data) - 60} {
		mounts, err := Parse(data[:cut])
		require.Error(t, err, "cut at %d", cut)
		assert.Less(t, len(mounts), len(full), "cut at %d", cut)
		for i := range mounts {
			assert.Equal(t, full[i], mounts[i])
		}
	}
}

func TestClassOf(t *testing.T) {
	for op, want := range map[string]Class{
		"READ": ClassRead, "READ_PLUS": ClassRead, "WRITE": ClassWrite, "COMMIT": ClassOther,
		"GETATTR": ClassMetadata, "LOOKUP": ClassMetadata, "ACCESS": ClassMetadata, "READDIRPLUS": ClassMetadata,
		"OPEN": ClassMetadata, "SEQUENCE": ClassOther, "RENEW": ClassOther, "NULL": ClassOther, "NEW_OP_2030": ClassOther,
	} {
		assert.Equal(t, want, ClassOf(op), op)
	}
}

// TestIntervalAsNfsiostat: the means are Δ/Δops in seconds; none completed or a counter going back
// gives no means.
func TestIntervalAsNfsiostat(t *testing.T) {
	prev := Op{Ops: 100, RTTMS: 1000, ExecuteMS: 1500, QueueMS: 10}
	cur := Op{Ops: 140, RTTMS: 1200, ExecuteMS: 1800, QueueMS: 14}
	m := Interval(prev, cur)
	assert.True(t, m.OK)
	assert.Equal(t, uint64(40), m.Ops)
	assert.InDelta(t, 0.005, m.RTT, 1e-12)
	assert.InDelta(t, 0.0075, m.Execute, 1e-12)
	assert.InDelta(t, 0.0001, m.Queue, 1e-12)
	assert.False(t, Interval(cur, cur).OK)
	assert.False(t, Interval(cur, prev).OK)
	assert.Equal(t, uint64(0), Op{Ops: 5, Transmissions: 4}.Retransmissions())
	assert.Equal(t, uint64(2), Op{Ops: 5, Transmissions: 7}.Retransmissions())
}

func TestReset(t *testing.T) {
	a := Mount{Age: 10, Ops: []Op{{Name: "READ", Ops: 5}}}
	b := Mount{Age: 20, Ops: []Op{{Name: "READ", Ops: 7}}}
	assert.False(t, Reset(&a, &b))
	assert.True(t, Reset(&b, &a))
	c := Mount{Age: 30, Ops: []Op{{Name: "READ", Ops: 1}}}
	assert.True(t, Reset(&b, &c))
}
