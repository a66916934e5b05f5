package emit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/errcount"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fuseconn"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mountstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/podshm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
)

// nfsBlock is a mountstats block around one statistics line.
func nfsBlock(line string) string {
	return "device srv:/export mounted on /mnt/nfs with fstype nfs4 statvers=1.1\n\topts:\trw\n\tage:\t5\n" +
		line + "\n\tper-op statistics\n\t        NULL: 0 0 0 0 0 0 0 0\n"
}

func nums(n uint64, count int) string {
	f := make([]string, count)
	for i := range f {
		f[i] = fmt.Sprint(n + uint64(i)*n/3)
	}
	return strings.Join(f, " ")
}

func secondErr[T any](_ T, err error) error { return err }

// parserProblems are, for every parser whose error quotes its input, a malformed input whose live
// counters are n (bad) and another problem in the same input (other).
var parserProblems = []struct {
	name       string
	bad, other func(n uint64) error
}{
	{"mountstats xprt with one extra field", // the reported case
		func(n uint64) error {
			return secondErr(mountstats.Parse([]byte(nfsBlock("\txprt:\ttcp 875 1 1 0 0 " + nums(n, 8) + " 7"))))
		},
		func(n uint64) error {
			return secondErr(mountstats.Parse([]byte(nfsBlock("\tbytes:\t" + nums(n, 7)))))
		}},
	{"mountstats per-op line past the clip",
		func(n uint64) error {
			return secondErr(mountstats.Parse([]byte(nfsBlock("\txprt:\ttcp 875 1 1 0 0 " + nums(n, 8) + "\n\tper-op statistics\n\tREAD: " + nums(n, 90)))))
		},
		func(n uint64) error {
			return secondErr(mountstats.Parse([]byte(nfsBlock("\txprt:\ttcp 875 1 1 0 0 " + nums(n, 8) + "\n\tper-op statistics\n\tread: " + nums(n, 8)))))
		}},
	{"diskstats",
		func(n uint64) error {
			var p diskstats.Parser
			return secondErr(p.Parse([]byte(fmt.Sprintf("   8       0 sda %s %dx %s\n", nums(n, 3), n, nums(n, 7))), nil))
		},
		func(n uint64) error {
			var p diskstats.Parser
			return secondErr(p.Parse([]byte("   8       0 sda "+nums(n, 6)+"\n"), nil))
		}},
	{"pressure",
		func(n uint64) error {
			return secondErr(pressure.Parse([]byte(fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%dx\n", n))))
		},
		func(n uint64) error {
			return secondErr(pressure.Parse([]byte(fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=200.00 avg60=0.00 avg300=0.00 total=%d\n", n, n))))
		}},
	{"mountinfo",
		func(n uint64) error {
			return secondErr(fsusage.ParseMountInfo([]byte(fmt.Sprintf("%d 35 98:0 / /mnt rw\n", n))))
		},
		func(n uint64) error {
			return secondErr(fsusage.ParseMountInfo([]byte(fmt.Sprintf("%d 35 98:0 / /mnt rw shared:1 ext4 /dev/sda1 rw\n", n))))
		}},
	{"cgroup io.stat",
		func(n uint64) error {
			return fmt.Errorf("cgroup /a: %w", secondErr(cgroupio.ParseIOStat([]byte(fmt.Sprintf("8:0 rbytes=%dx wbytes=%d rios=1 wios=1 dbytes=0 dios=0\n", n, n)), nil)))
		},
		func(n uint64) error {
			return fmt.Errorf("cgroup /a: %w", secondErr(cgroupio.ParseIOStat([]byte(fmt.Sprintf("x:0 rbytes=%d\n", n)), nil)))
		}},
	{"mdstat",
		func(n uint64) error {
			return secondErr(mdraid.ParseMdstat(strings.NewReader(fmt.Sprintf("Personalities : [raid1]\nmd0 : active raid1 sdb[1] sda[0]\n      1048512 blocks [2/2] [UU]\n      [==>....]  recovery = 12.6%% (%d/%dx) finish=0.5min speed=26496K/sec\n", n, n))))
		},
		func(n uint64) error {
			return secondErr(mdraid.ParseMdstat(strings.NewReader(fmt.Sprintf("Personalities : [raid1]\nmd0 : active raid1 sdb[1] sda[0]\n      1048512 blocks [2/2] [UU]\n      [==>....]  recovery = x%% (%d/%d) finish=0.5min speed=26496K/sec\n", n, n))))
		}},
	{"dm thin-pool status",
		func(n uint64) error {
			return secondErr(dm.ParseThinPoolStatus(fmt.Sprintf("%d %d/4096 %d/1000000", n, n%4096, n%1000000)))
		},
		func(n uint64) error {
			return secondErr(dm.ParseThinPoolStatus(fmt.Sprintf("x%d %d/4096 %d/1000000 - rw discard_passdown queue_if_no_space -", n, n%4096, n%1000000)))
		}},
	{"scsi ioerr_cnt",
		func(n uint64) error {
			return secondErr(errcount.ParseSCSICounter([]byte(fmt.Sprintf("0x%x\n", 1<<32|n&(1<<31-1)))))
		},
		func(n uint64) error { return secondErr(errcount.ParseSCSICounter([]byte(fmt.Sprintf("%d\n", n)))) }},
	{"pod memory.current",
		func(n uint64) error {
			return secondErr(podshm.ParseV2([]byte("max\n"), []byte(fmt.Sprintf("%dx\n", n))))
		},
		func(n uint64) error {
			return secondErr(podshm.ParseV2([]byte(fmt.Sprintf("%dx\n", n)), []byte(fmt.Sprintf("%d\n", n))))
		}},
	{"fuse waiting", // its error quotes nothing: stable as it was
		func(n uint64) error {
			return &os.PathError{Op: "parse", Path: "sys/fs/fuse/connections/52/waiting", Err: secondErr(fuseconn.ParseWaiting([]byte(fmt.Sprintf("%dx\n", n))))}
		},
		func(n uint64) error {
			return &os.PathError{Op: "parse", Path: "sys/fs/fuse/connections/53/waiting", Err: secondErr(fuseconn.ParseWaiting([]byte(fmt.Sprintf("%dx\n", n))))}
		}},
}

// TestProblemIsItsShapeNotItsCounters (issue 31): a malformed line read every scrape with its counters
// moving (and their widths) is one problem, whichever parser quotes it: one WARN, no "cleared"; another
// problem in its place is one WARN more (and the first one's INFO). Before, the quoted counters made each
// scrape a new problem: 60 WARN + 60 INFO a minute for one mountstats "xprt:" line.
func TestProblemIsItsShapeNotItsCounters(t *testing.T) {
	for _, pc := range parserProblems {
		t.Run(pc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 4))
			counter := func() uint64 { return rng.Uint64() >> rng.IntN(64) }
			core, logs := observer.New(zapcore.DebugLevel)
			r := NewReporter(zap.New(core), nil)
			scrape := func(err error) {
				t.Helper()
				require.Error(t, err, "the input must be malformed")
				var errs scrapererror.ScrapeErrors // as a scraper returns it
				errs.AddPartial(parseerr.Count(err), err)
				require.NoError(t, r.Report(errs.Combine()))
			}
			for range 60 {
				scrape(pc.bad(counter()))
			}
			require.Equal(t, 1, logs.Len(), "one WARN for 60 scrapes: %v", logs.All())
			assert.Equal(t, zapcore.WarnLevel, logs.All()[0].Level)
			for range 20 {
				scrape(pc.other(counter()))
			}
			require.Equal(t, 3, logs.Len(), "another problem is one WARN more, and the first clears: %v", logs.All())
			assert.Equal(t, zapcore.WarnLevel, logs.All()[1].Level)
			assert.Equal(t, zapcore.InfoLevel, logs.All()[2].Level)
		})
	}
}
