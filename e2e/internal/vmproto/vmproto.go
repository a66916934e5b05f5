// Package vmproto is what the QEMU guest programs (e2e/internal/*guest) and the host tests
// (e2e/qemu/*_qemu_test.go) say to each other on the test serial line, declared once for both sides: the
// marker strings and each guest's bundle, the one JSON line with everything the host compares.
package vmproto // import "github.com/diskhealth/diskhealth/e2e/internal/vmproto"

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Markers begin the lines the host looks for.
const (
	// MarkerExit is printed by the guest's /init with the program's exit status: "DISKHEALTH-EXIT=0".
	MarkerExit = "DISKHEALTH-EXIT="
	// MarkerWindow begins smartguest's window markers, "DISKHEALTH-RO-BEGIN phase1" … "-END phase1":
	// the host checks every command QEMU traced between them against the read-only list.
	MarkerWindow = "DISKHEALTH-RO-"
	// MarkerQMPReady asks the host to raise the NVMe critical warning over QMP.
	MarkerQMPReady = "DISKHEALTH-QMP-READY"
	// MarkerChild begins the line on which a child of smartguest (unprivileged, or with no drivedb.h)
	// prints its export.
	MarkerChild = "DISKHEALTH-CHILD "

	// The bundles' markers, one per guest program.
	MarkerSMART     = "DISKHEALTH-BUNDLE "
	MarkerStack     = "DISKHEALTH-STACK-BUNDLE "
	MarkerLatency   = "DISKHEALTH-LATENCY-BUNDLE "
	MarkerIOErr     = "DISKHEALTH-IOERR-BUNDLE "
	MarkerVerdict   = "DISKHEALTH-VERDICT-BUNDLE "
	MarkerProjQuota = "DISKHEALTH-PROJQUOTA-BUNDLE "
	MarkerNFS       = "DISKHEALTH-NFS-BUNDLE "
)

// Print writes bundle b as one line after its marker.
func Print(w io.Writer, marker string, b any) {
	out, err := json.Marshal(b)
	if err != nil {
		out, _ = json.Marshal(map[string][]string{"errors": {"marshalling the bundle: " + err.Error()}})
	}
	_, _ = fmt.Fprintf(w, "%s%s\n", marker, out) // the serial line is the guest's only channel: a failure has nowhere to go
}

// ErrNoBundle says that a guest's output has no line with the bundle's marker.
var ErrNoBundle = errors.New("no bundle line")

// Find decodes into b the first bundle after marker in a guest's output.
func Find(output, marker string, b any) error {
	for line := range strings.Lines(output) {
		if rest, ok := strings.CutPrefix(line, marker); ok {
			return json.Unmarshal([]byte(rest), b)
		}
	}
	return fmt.Errorf("%w (%s)", ErrNoBundle, strings.TrimSpace(marker))
}

// Guest is what every bundle carries: the guest's kernel, what it logged and the errors that stopped it.
type Guest struct {
	Kernel string   `json:"kernel"`
	Logs   []string `json:"logs,omitempty"`
	Errors []string `json:"errors"`
}

// Common returns the bundle's Guest part.
func (g *Guest) Common() *Guest { return g }

// SMARTBundle is what smartguest reports (MarkerSMART).
type SMARTBundle struct {
	Guest
	Phase1    SMARTPhase         `json:"phase1"`
	Phase2    SMARTPhase         `json:"phase2"`
	Events    json.RawMessage    `json:"events"`     // OTLP JSON logs
	Unpriv    json.RawMessage    `json:"unpriv"`     // OTLP JSON metrics
	NoDriveDB json.RawMessage    `json:"no_drivedb"` // OTLP JSON metrics: a fresh receiver, no drivedb.h reachable
	Hwmon     map[string]string  `json:"hwmon"`      // nvme hwmon files
	Many      SMARTMany          `json:"many"`
	SysWWID   map[string]string  `json:"sys_wwid"`
	SysNSID   map[string]string  `json:"sys_nsid"` // each NVMe namespace block device's NSID (sysfs nsid)
	Timing    map[string]float64 `json:"timing"`
}

// SMARTPhase is one moment: the receiver's export and the tools' view.
type SMARTPhase struct {
	SMART json.RawMessage            `json:"smart"` // OTLP JSON metrics, the SMART controller's export
	IO    json.RawMessage            `json:"io"`    // OTLP JSON metrics, the iostat controller's export
	Tools map[string]json.RawMessage `json:"tools"` // "smartctl -x /dev/sda" -> its JSON
}

// SMARTMany is the long run: a fresh receiver reading every disk a thousand times (smart.interval
// 100 ms, the SMART source alone). Sets are "disk metric" strings of the disks' resources (hw.name).
type SMARTMany struct {
	Exports   int             `json:"exports"`   // exports with SMART data
	Seconds   float64         `json:"seconds"`   // from the receiver's start to the last of them
	First     []string        `json:"first"`     // the first export's set
	Differing []string        `json:"differing"` // "export N: +added -missing" against First but what it says once (at most 10)
	Before    json.RawMessage `json:"before"`    // `nvme smart-log /dev/nvme0 -o json` before the run
	After     json.RawMessage `json:"after"`     // and after it
}

// StackCheck is one comparison: what the tool (or the test's action) says, and what the receiver exported.
type StackCheck struct {
	What string `json:"what"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

// StackPart is one subtest's observations.
type StackPart struct {
	Checks []StackCheck       `json:"checks"`
	Tools  map[string]string  `json:"tools"`  // tool outputs by step
	Series map[string]float64 `json:"series"` // numbers worth printing (progress samples ...)
	Logs   []string           `json:"logs"`
	Errors []string           `json:"errors"`
}

// StackBundle is what stackguest reports (MarkerStack).
type StackBundle struct {
	Guest
	Parts map[string]*StackPart `json:"parts"`
}

// LatencyBundle is what latencyguest reports (MarkerLatency).
type LatencyBundle struct {
	Guest
	// Hook is the tracepoint the probe attached to (from its start log line).
	Hook string `json:"hook"`
	// Devices: "null" -> nullb0, "scsi" -> sdX (scsi_debug), "dm" -> dm-N (dm-linear over nullb0).
	Devices map[string]string `json:"devices"`
	// Issued is the I/O this program did, by device name and direction.
	Issued          map[string]map[string]int `json:"issued"`
	Before          json.RawMessage           `json:"before"` // OTLP JSON, the last export before the I/O (may be empty)
	After           json.RawMessage           `json:"after"`  // OTLP JSON, an export scraped after the I/O ended
	DiskstatsBefore string                    `json:"diskstats_before"`
	DiskstatsAfter  string                    `json:"diskstats_after"`
}

// IOErrBundle is what ioerrguest reports (MarkerIOErr).
type IOErrBundle struct {
	Guest
	Disk string `json:"disk"` // the scsi_debug disk, sdX
	// Failed and Succeeded are this program's reads: ENODATA (medium error) from the kernel, and whole reads.
	Failed    int `json:"failed"`
	Succeeded int `json:"succeeded"`
	// IOErrCnt is the SCSI midlayer's count of commands the disk completed with an error
	// (/sys/block/sdX/device/ioerr_cnt, hex), before and after the reads: the injection's own count.
	IOErrCntBefore string          `json:"ioerr_cnt_before"`
	IOErrCntAfter  string          `json:"ioerr_cnt_after"`
	Before         json.RawMessage `json:"before"` // OTLP JSON: the export with the verdict before the reads
	After          json.RawMessage `json:"after"`  // OTLP JSON: a latency export and a SMART verdict after them
	Final          json.RawMessage `json:"final"`  // OTLP JSON: the last export, several verdicts later
	// ErrorsAfter and ErrorsFinal are the newest exports with disk_health.disk.kernel.errors (the latency
	// source's scrape, apart from SMART's) at After's and at Final's time.
	ErrorsAfter json.RawMessage `json:"errors_after"`
	ErrorsFinal json.RawMessage `json:"errors_final"`
	// StackBefore and StackAfter are exports of a second receiver with the stack source alone (its own
	// signs board, so the verdict above weighs the latency source's count only): hw.errors of the
	// disk's SCSI ioerr_cnt from a scrape before the reads and one begun after them.
	StackBefore json.RawMessage `json:"stack_before"`
	StackAfter  json.RawMessage `json:"stack_after"`
	Events      json.RawMessage `json:"events"` // OTLP JSON logs: every event of the run
}

// VerdictSample is the SCSI midlayer's counters of every sd disk at one moment (hex, as sysfs prints
// them).
type VerdictSample struct {
	Label string                       `json:"label"`
	At    float64                      `json:"at"` // seconds since the receiver started
	Disks map[string]map[string]string `json:"disks"`
}

// VerdictBundle is what verdictguest reports (MarkerVerdict).
type VerdictBundle struct {
	Guest
	// ATA are the sd disks libata drives (sysfs vendor "ATA"): their SMART commands are ATA PASS-THROUGH.
	ATA []string `json:"ata"`
	// Reads are the SMART exports (each a read of every disk and a verdict each).
	Reads int `json:"reads"`
	// States are, per disk (hw.name), every hw.state its hw.status said in any SMART export, with how
	// many exports said it.
	States map[string]map[string]int `json:"states"`
	// Samples: "start", then one after each of the first SMART reads the receiver makes alone
	// ("read N"), then one after each smartctl pass ("smartctl N"), then "end".
	Samples []VerdictSample `json:"samples"`
	// Smartctl counts the smartctl runs per device node; SmartctlFailed those that printed no JSON.
	Smartctl       map[string]int `json:"smartctl"`
	SmartctlFailed []string       `json:"smartctl_failed"`
	// KernelErrors is the newest export with disk_health.disk.kernel.errors (the latency source), nil if
	// it never had one; Latency says whether the latency source exported its histograms.
	KernelErrors json.RawMessage `json:"kernel_errors"`
	Latency      bool            `json:"latency"`
	// StackFirst and StackLast are the first and the last stack exports (hw.errors of every sd disk).
	StackFirst json.RawMessage `json:"stack_first"`
	StackLast  json.RawMessage `json:"stack_last"`
	Events     json.RawMessage `json:"events"` // OTLP JSON logs: every event of the run
}

// ProjQuotaBundle is what projquotaguest reports (MarkerProjQuota): per filesystem, each project
// directory as the receiver reported it and as GNU du measured it.
type ProjQuotaBundle struct {
	Guest
	Filesystems []*ProjQuotaFS `json:"filesystems"`
}

// ProjQuotaFS is one loop-mounted filesystem under project quotas.
type ProjQuotaFS struct {
	Type  string                   `json:"type"`
	Block int64                    `json:"block"`
	Dirs  map[string]*ProjQuotaDir `json:"dirs"`
}

// ProjQuotaDir is one project directory: the limits set (0: none), what the receiver reported, du -sB1.
type ProjQuotaDir struct {
	ID       int64  `json:"id"`
	SetHard  int64  `json:"set_hard,omitempty"`
	SetSoft  int64  `json:"set_soft,omitempty"`
	Name     string `json:"name"`
	Usage    int64  `json:"usage"`
	Headroom int64  `json:"headroom"`
	GotHard  int64  `json:"got_hard,omitempty"`
	GotSoft  int64  `json:"got_soft,omitempty"`
	Du       int64  `json:"du"`
}

// NFSMount is one of nfsguest's mounts.
type NFSMount struct {
	Label      string `json:"label"`       // "v3", "v4.2", "v4.2-nconnect4"
	Source     string `json:"source"`      // server:/export
	MountPoint string `json:"mount_point"` // where the guest mounted it
	Options    string `json:"options"`     // mount.nfs -o
}

// NFSRound is one accuracy round: a receiver (netfs alone, execute and queue time and bytes on) whose first
// scrape read MountstatsBefore unchanged and whose second read MountstatsAfter unchanged, the I/O of
// Mounts between.
type NFSRound struct {
	Mounts           []string        `json:"mounts"` // labels
	MountstatsBefore string          `json:"mountstats_before"`
	MountstatsAfter  string          `json:"mountstats_after"`
	First            json.RawMessage `json:"first"`  // OTLP JSON: the first scrape
	Second           json.RawMessage `json:"second"` // OTLP JSON: the second scrape
	IO               map[string]int  `json:"io"`     // bytes written and read back, per mount point
	IOSeconds        float64         `json:"io_seconds"`
}

// NFSReadPass is one pass of the file latency part: Reads O_DIRECT reads of ReadSize bytes on the
// mount, each one READ, with Delay seconds of netem delay on every packet the loopback interface
// sends (0: none). Before is the receiver's last export before the pass and After its first export
// scraped after it; MountstatsBefore and MountstatsAfter were read just before and after the reads.
type NFSReadPass struct {
	Delay            float64         `json:"delay"`
	Reads            int             `json:"reads"`
	ReadSize         int             `json:"read_size"`
	Seconds          float64         `json:"seconds"` // the reads' wall time
	MountstatsBefore string          `json:"mountstats_before"`
	MountstatsAfter  string          `json:"mountstats_after"`
	Before           json.RawMessage `json:"before"` // OTLP JSON
	After            json.RawMessage `json:"after"`  // OTLP JSON
}

// FolioPass is one read of the large-folio part's file from start to end with read(2) calls: Before is
// the receiver's export just before it, After the next one, so that the pass lies in one scrape
// interval.
type FolioPass struct {
	Name    string          `json:"name"` // "cold" (a fresh mount) or "warm"
	Calls   int             `json:"calls"`
	Bytes   int             `json:"bytes"`
	Seconds float64         `json:"seconds"` // the reads' wall time
	Before  json.RawMessage `json:"before"`  // OTLP JSON
	After   json.RawMessage `json:"after"`   // OTLP JSON
}

// Folio is nfsguest's large-folio part: a receiver with filelat alone and a file of Size bytes on an
// XFS at MountPoint, read cold and warm. Orders counts the folios that held the file's pages after the
// passes, by order (/proc/kpageflags). Seconds is the whole part, modules and mkfs included.
type Folio struct {
	MountPoint string      `json:"mount_point"`
	Size       int         `json:"size"`
	Passes     []FolioPass `json:"passes"`
	Orders     map[int]int `json:"orders"`
	Seconds    float64     `json:"seconds"`
}

// NFSBundle is what nfsguest reports (MarkerNFS).
type NFSBundle struct {
	Guest
	Mounts []NFSMount `json:"mounts"`
	// The settings the guest ran with, for the host's bounds.
	Interval      float64 `json:"interval"`       // seconds between the hang part's scrapes
	StatfsTimeout float64 `json:"statfs_timeout"` // netfs.statfs_timeout, seconds
	RPCTimeout    float64 `json:"rpc_timeout"`    // timeo × (retrans + 1), seconds: the mounts' major timeout
	// Accuracy: one round per set of mounts that can be mounted at once (the kernel merges the NFSv4.1+
	// clients of one server, whatever its address: the nconnect mount has a round of its own).
	Rounds []NFSRound `json:"rounds"`
	// File latency part: a receiver with filelat alone timing O_DIRECT reads of one mount, a pass
	// without and one with a delay on the loopback interface.
	ReadMount  string        `json:"read_mount"` // label
	ReadPasses []NFSReadPass `json:"read_passes"`
	// Large-folio part (last): reads of a file on an XFS, whose page cache on 6.1 holds large folios.
	Folio Folio `json:"folio"`
	// Hang part: a second receiver (netfs and iostat at the defaults, a scrape each Interval).
	NetfsExports []json.RawMessage `json:"netfs_exports"` // OTLP JSON: every netfs export, in order
	IostatAt     []int64           `json:"iostat_at"`     // each iostat export's point time (Unix ns)
	Events       json.RawMessage   `json:"events"`        // OTLP JSON logs: every event of the part
	// Hang part: the labels of the mounts it ran with, and Unix ns: the server stopped (rpc.nfsd 0
	// returned), started again, and the v3 mount remounted.
	HangMounts []string `json:"hang_mounts"`
	Stopped    int64    `json:"stopped"`
	Restarted  int64    `json:"restarted"`
	Remounted  int64    `json:"remounted"`
	// The kernel log's records about NFS servers ("nfs: server …") after the hang part, as
	// /dev/kmsg gives them (time since boot in µs), and the boot clock then (CLOCK_MONOTONIC, ns)
	// with the Unix time read beside it (ns), to place them on the exports' clock.
	KernelLog []string `json:"kernel_log"`
	Monotonic int64    `json:"monotonic"`
	Realtime  int64    `json:"realtime"`
}
