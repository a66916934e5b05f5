package testkit

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// endedTB is a testing.TB whose Fatalf, Skipf and FailNow record how the code under test ended its test
// and stop its goroutine, as testing's own do, without ending the test that observes it.
type endedTB struct {
	testing.TB
	ended  string // "fatal" or "skip"; empty if the code ran to its end
	msg    string
	errors []string // what Errorf reported (assert's failures), the test going on
}

func (e *endedTB) Helper()                           {}
func (e *endedTB) Fatalf(format string, args ...any) { e.end("fatal", format, args...) }
func (e *endedTB) Skipf(format string, args ...any)  { e.end("skip", format, args...) }
func (e *endedTB) FailNow()                          { e.end("fatal", "FailNow") }
func (e *endedTB) Errorf(format string, args ...any) {
	e.errors = append(e.errors, fmt.Sprintf(format, args...))
}

func (e *endedTB) end(how, format string, args ...any) {
	e.ended, e.msg = how, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failed says whether the code under test failed its test, by ending it or by an error.
func (e *endedTB) failed() bool { return e.ended == "fatal" || len(e.errors) > 0 }

// runTB runs f in a goroutine of its own, as a test body runs, and returns how it ended.
func runTB(t *testing.T, f func(testing.TB)) *endedTB {
	tb := &endedTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb
}

// TestInCI is the one rule for what CI is: unset, empty or false is a developer; any other value is CI.
func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "false": false, "0": false, "FALSE": false, "f": false,
		"true": true, "1": true, "TRUE": true, "yes": true, "github-actions": true,
	} {
		t.Setenv("CI", v)
		assert.Equal(t, want, InCI(), "CI=%q", v)
	}
	require.NoError(t, os.Unsetenv("CI")) // t.Setenv restores it when the test ends
	assert.False(t, InCI(), "CI unset")
}

// TestUnavailable: in CI a peer that cannot be had fails the test; elsewhere the test skips, loudly.
func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		ci, ended string
	}{{"true", "fatal"}, {"1", "fatal"}, {"yes", "fatal"}, {"", "skip"}, {"false", "skip"}} {
		t.Run("CI="+c.ci, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			got := runTB(t, func(tb testing.TB) { Unavailable(tb, "no %s here", "fio") })
			assert.Equal(t, c.ended, got.ended)
			assert.Contains(t, got.msg, "no fio here")
			if c.ended == "skip" {
				assert.True(t, strings.HasPrefix(got.msg, "SKIPPED: "), "a loud skip: %q", got.msg)
			}
		})
	}
}

// TestEveryGoldenFailsAfterRewriting: with UpdateEnv set each kind of golden writes its file and
// fails the test; the next run, without it, passes against what was written and fails on a change.
func TestEveryGoldenFailsAfterRewriting(t *testing.T) {
	md := func(v int64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("system.disk.io")
		m.SetEmptySum().DataPoints().AppendEmpty().SetIntValue(v)
		return md
	}
	t.Chdir(t.TempDir())
	kinds := []struct {
		name, file string
		run        func(tb testing.TB, file string, v int)
	}{
		{"metrics", filepath.Join("testdata", "expected_metrics", "sample.yaml"),
			func(tb testing.TB, _ string, v int) { AssertGolden(tb, "sample", md(int64(v))) }},
		{"json", filepath.Join("testdata", "golden", "sample.json"),
			func(tb testing.TB, file string, v int) { GoldenJSON(tb, file, map[string]int{"reads": v}) }},
		{"bytes", filepath.Join("testdata", "golden", "sample.txt"),
			func(tb testing.TB, file string, v int) { GoldenBytes(tb, file, fmt.Appendf(nil, "reads %d\n", v)) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Setenv(UpdateEnv, "")
			got := runTB(t, func(tb testing.TB) { k.run(tb, k.file, 42) })
			assert.True(t, got.failed(), "no golden yet fails")

			t.Setenv(UpdateEnv, "1")
			got = runTB(t, func(tb testing.TB) { k.run(tb, k.file, 42) })
			assert.Equal(t, "fatal", got.ended, "the run that rewrites a golden fails")
			assert.Contains(t, got.msg, k.file+" rewritten")
			_, err := os.Stat(k.file)
			require.NoError(t, err, "the file was written")

			t.Setenv(UpdateEnv, "")
			got = runTB(t, func(tb testing.TB) { k.run(tb, k.file, 42) })
			assert.False(t, got.failed(), "the next run passes against what was written: %s %v", got.msg, got.errors)
			got = runTB(t, func(tb testing.TB) { k.run(tb, k.file, 43) })
			assert.True(t, got.failed(), "a different value fails")
		})
	}
}

// TestRootDisk: a disk is laid out with the links the kernel makes, all relative.
func TestRootDisk(t *testing.T) {
	r := NewRoot(t)
	dir := "sys/devices/pci0000:00/0000:00:04.0/virtio1/block/vda"
	r.Disk(Disk{Name: "vda", Major: 254, Dir: dir, Device: "sys/devices/pci0000:00/0000:00:04.0/virtio1",
		Files: map[string]string{"size": "2048\n"}, DeviceFiles: map[string]string{"vendor": "0x1af4\n"}})
	r.Partition(dir, "vda1", 254, 1, 1, 1024)
	read := func(rel string) string {
		b, err := os.ReadFile(r.Path(rel))
		require.NoError(t, err)
		return string(b)
	}
	for _, via := range []string{"sys/block/vda", "sys/class/block/vda", "sys/dev/block/254:0"} {
		assert.Equal(t, "254:0\n", read(via+"/dev"), via)
		assert.Equal(t, "2048\n", read(via+"/size"), via)
		assert.Equal(t, "0x1af4\n", read(via+"/device/vendor"), via)
		target, err := os.Readlink(r.Path(via))
		require.NoError(t, err)
		assert.False(t, filepath.IsAbs(target), "%s -> %s", via, target)
	}
	for _, via := range []string{"sys/class/block/vda1", "sys/dev/block/254:1"} {
		assert.Equal(t, "1\n", read(via+"/partition"), via)
		assert.Equal(t, "254:1\n", read(via+"/dev"), via)
	}

	copied := NewRoot(t)
	copied.CopyTree(r.Path("sys"), "sys", func(name string, data []byte) []byte {
		if name == filepath.Join("devices", "pci0000:00", "0000:00:04.0", "virtio1", "block", "vda", "size") {
			return []byte("4096\n")
		}
		return data
	})
	b, err := os.ReadFile(copied.Path("sys/block/vda/size"))
	require.NoError(t, err)
	assert.Equal(t, "4096\n", string(b), "links copied as links, files through edit")
}

// TestCopyTreeRestoresNames: a committed %3A is a ':' in the copy, in names and link targets.
func TestCopyTreeRestoresNames(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "devices", "pci0000%3A00", "sda"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "devices", "pci0000%3A00", "sda", "dev"), []byte("8:0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "dev", "block"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000%3A00/sda", filepath.Join(src, "dev", "block", "8%3A0")))
	r := NewRoot(t)
	r.CopyTree(src, ".", nil)
	data, err := os.ReadFile(r.Path("dev/block/8:0/dev"))
	require.NoError(t, err)
	assert.Equal(t, "8:0\n", string(data))
}

func TestQuantileLowerBound(t *testing.T) {
	b := map[int32]uint64{math.MinInt32: 1, 8: 2, 16: 1}
	assert.Zero(t, QuantileLowerBound(b, 4, 0.25, 3), "the zero bucket")
	assert.InDelta(t, 2.0, QuantileLowerBound(b, 4, 0.5, 3), 1e-12, "bucket 8 at scale 3 starts at 2^(8/8)")
	assert.InDelta(t, 4.0, QuantileLowerBound(b, 4, 1, 3), 1e-12)
	assert.InDelta(t, 16.0, QuantileLowerBound(b, 4, 1, 2), 1e-12, "bucket 16 at scale 2 starts at 2^(16/4)")
	assert.True(t, math.IsInf(QuantileLowerBound(b, 5, 1, 3), 1), "a rank past the buckets")
}
