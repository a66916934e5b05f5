package qemu

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

// Read-only, proven at the disk: QEMU itself logs every command its emulated disks receive, and the
// SMART test checks each one the disks got while only the receiver was running against
// readOnlyDiskCommands, whichever code path sent it. The list is docs/smart.md's.

// qemuTraceEvents are the QEMU 7.2 trace events the SMART test enables (`qemu-system-x86_64 -trace
// help` lists them):
//   - ide_ioport_write: the taskfile registers the guest writes on the legacy IDE ports (the Features
//     register carries the SMART subcommand, Sector Number the log address);
//   - ide_exec_cmd: the command register of a legacy IDE drive (and of the AHCI port, dumped too);
//   - handle_cmd_fis_dump, process_ncq_command: every AHCI command FIS (opcode, features, LBA), NCQ
//     reads and writes;
//   - pci_nvme_admin_cmd, pci_nvme_get_log, pci_nvme_identify, pci_nvme_getfeat, pci_nvme_io_cmd:
//     NVMe admin commands with their log id / CNS / feature id, and I/O commands;
//   - scsi_req_parsed: the CDB opcode every SCSI request carries to QEMU's scsi-hd.
var qemuTraceEvents = []string{
	"ide_ioport_write", "ide_exec_cmd", "handle_cmd_fis_dump", "process_ncq_command",
	"pci_nvme_admin_cmd", "pci_nvme_get_log", "pci_nvme_identify", "pci_nvme_getfeat", "pci_nvme_io_cmd",
	"scsi_req_parsed",
}

// Protocols of a traced command.
const (
	protoATA       = "ATA"
	protoNVMeAdmin = "NVMe admin"
	protoNVMeIO    = "NVMe I/O"
	protoSCSI      = "SCSI"
)

// diskCommand is one command an emulated disk received, as QEMU traced it.
type diskCommand struct {
	at      time.Time
	disk    string // "ide.0 master", "ahci port 0", "nvme", "scsi-hd target 0"
	proto   string
	opcode  uint8
	feature uint8 // ATA: the Features register (the SMART subcommand)
	target  int   // ATA: LBA low (a log address); NVMe: the log id, CNS or feature id; -1 when it has none
	lsp     int   // NVMe Get Log Page: the log specific field; Get Features: the select field
}

func (c diskCommand) key() string {
	s := fmt.Sprintf("%s %02Xh", c.proto, c.opcode)
	if c.proto == protoATA && c.opcode == 0xB0 {
		s += fmt.Sprintf("/%02Xh", c.feature)
	}
	if c.target >= 0 {
		s += fmt.Sprintf(" target %02Xh", c.target)
	}
	if c.lsp > 0 {
		s += fmt.Sprintf(" lsp %#x", c.lsp)
	}
	if n := readOnlyName(c); n != "" {
		s += " (" + n + ")"
	}
	return s
}

// readOnlyCommand is one entry of the read-only list.
type readOnlyCommand struct {
	proto   string
	opcode  uint8
	feature int   // ATA SMART subcommand; -1 for any other command
	targets []int // log addresses, log ids or CNS values allowed; nil when the command takes none
	name    string
}

var (
	ataLogs    = []int{0x00, 0x01, 0x02, 0x04, 0x06} // SMART READ LOG: directory, summary and comprehensive error, device statistics, self-test
	ataExtLogs = []int{0x00, 0x03, 0x04, 0x07}       // READ LOG (DMA) EXT: directory, ext. comprehensive error, device statistics, ext. self-test
)

// readOnlyDiskCommands is every command a disk may receive while the receiver reads it. Nothing else
// (no SMART ENABLE, EXECUTE OFFLINE, WRITE LOG, SET FEATURES, STANDBY, no read or write of data, no
// NVMe Set Features, telemetry or event-log context) may reach a disk in a receiver's window.
var readOnlyDiskCommands = []readOnlyCommand{
	{protoATA, 0xEC, -1, nil, "IDENTIFY DEVICE"},
	{protoATA, 0xA1, -1, nil, "IDENTIFY PACKET DEVICE"},
	{protoATA, 0xE5, -1, nil, "CHECK POWER MODE"},
	{protoATA, 0xB0, 0xD0, nil, "SMART READ DATA"},
	{protoATA, 0xB0, 0xD1, nil, "SMART READ THRESHOLDS"},
	{protoATA, 0xB0, 0xDA, nil, "SMART RETURN STATUS"},
	{protoATA, 0xB0, 0xD5, ataLogs, "SMART READ LOG"},
	{protoATA, 0x2F, -1, ataExtLogs, "READ LOG EXT"},
	{protoATA, 0x47, -1, ataExtLogs, "READ LOG DMA EXT"},
	{protoNVMeAdmin, 0x06, -1, []int{0x00, 0x01, 0x02, 0x03}, "Identify"},
	{protoNVMeAdmin, 0x02, -1, []int{0x01, 0x02, 0x03, 0x05, 0x06}, "Get Log Page"},
	// Not the receiver's own: the kernel's nvme hwmon driver sends it when temp1_max is read, which
	// the receiver does as its unprivileged fallback (Temperature Threshold, current value).
	{protoNVMeAdmin, 0x0A, -1, []int{0x04}, "Get Features"},
	{protoSCSI, 0x12, -1, nil, "INQUIRY"},
	{protoSCSI, 0x4D, -1, nil, "LOG SENSE"},
	{protoSCSI, 0x9E, -1, nil, "SERVICE ACTION IN(16): READ CAPACITY(16)"},
	// QEMU's scsi-hd implements no SAT: it rejects these without looking inside (the wrapped ATA
	// command is checked where a SAT layer runs it, in the ATA disks' trace).
	{protoSCSI, 0x85, -1, nil, "ATA PASS-THROUGH(16)"},
	{protoSCSI, 0xA1, -1, nil, "ATA PASS-THROUGH(12)"},
}

func findReadOnly(c diskCommand) *readOnlyCommand {
	for i := range readOnlyDiskCommands {
		r := &readOnlyDiskCommands[i]
		if r.proto == c.proto && r.opcode == c.opcode && (r.feature < 0 || uint8(r.feature) == c.feature) {
			return r
		}
	}
	return nil
}

func readOnlyName(c diskCommand) string {
	if r := findReadOnly(c); r != nil {
		return r.name
	}
	return ""
}

// readOnly says why c is not on the read-only list, or "".
func readOnly(c diskCommand) string {
	r := findReadOnly(c)
	switch {
	case r == nil:
		return "opcode not on the read-only list"
	case r.targets != nil && !slices.Contains(r.targets, c.target):
		return fmt.Sprintf("%s of %02Xh, not one of the listed logs / CNS values", r.name, c.target)
	case c.lsp > 0:
		return fmt.Sprintf("%s with log specific / select field %#x", r.name, c.lsp)
	}
	return ""
}

var (
	traceHead   = regexp.MustCompile(`^\d+@(\d+)\.(\d{6}):(\w+) (.*)$`)
	reIOPort    = regexp.MustCompile(`@ 0x([0-9a-f]+) \(([^)]*)\); val 0x([0-9a-f]+); bus (0x[0-9a-f]+)`)
	reExecCmd   = regexp.MustCompile(`bus (0x[0-9a-f]+); state (0x[0-9a-f]+); cmd 0x([0-9a-f]+)`)
	reFISDump   = regexp.MustCompile(`^ahci\((0x[0-9a-f]+)\)\[(\d+)\]: FIS:\s*0x00:((?: [0-9a-f]{2}){16})`)
	reNCQ       = regexp.MustCompile(`^ahci\((0x[0-9a-f]+)\)\[(\d+)\]\[tag:\d+\]: NCQ op 0x([0-9a-f]+) on sectors \[(\d+),`)
	reNVMeAdmin = regexp.MustCompile(`^cid (\d+) sqid \d+ opc 0x([0-9a-f]+)`)
	reNVMeIO    = regexp.MustCompile(`^cid (\d+) nsid 0x[0-9a-f]+ sqid \d+ opc 0x([0-9a-f]+)`)
	reNVMeLog   = regexp.MustCompile(`^cid (\d+) lid 0x([0-9a-f]+) lsp 0x([0-9a-f]+)`)
	reNVMeIdent = regexp.MustCompile(`^cid (\d+) cns 0x([0-9a-f]+)`)
	reNVMeFeat  = regexp.MustCompile(`^cid (\d+) nsid 0x[0-9a-f]+ fid 0x([0-9a-f]+) sel 0x([0-9a-f]+)`)
	reSCSI      = regexp.MustCompile(`^target (\d+) lun \d+ tag \d+ command (\d+)`)
)

func hexByte(s string) uint8 {
	v, _ := strconv.ParseUint(s, 16, 8)
	return uint8(v)
}

// parseQEMUTrace reads a trace written by QEMU's log backend with -msg timestamp=on
// ("pid@sec.usec:event args"; a FIS dump continues on the following lines) into the commands the disks
// received, in trace order.
func parseQEMUTrace(r io.Reader) ([]diskCommand, error) {
	type record struct {
		at    time.Time
		event string
		args  string
	}
	var records []record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := traceHead.FindStringSubmatch(line)
		if m == nil {
			if len(records) > 0 && line != "" {
				records[len(records)-1].args += " " + line
			}
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt(m[2], 10, 64)
		records = append(records, record{time.Unix(sec, usec*1000), m[3], m[4]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}

	// Legacy IDE: what the drive sees is the taskfile as last written on its bus (the Features and
	// LBA registers are shared by both drives of a channel; Device/Head bit 4 selects one).
	type ideBus struct {
		channel         string
		feature, lbaLow uint8
		slave           bool
	}
	buses := map[string]*ideBus{}
	nvmeCmds := map[string]int{} // cid -> index of its pci_nvme_admin_cmd in out
	var out []diskCommand
	for _, rec := range records {
		switch rec.event {
		case "ide_ioport_write":
			m := reIOPort.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			addr, _ := strconv.ParseUint(m[1], 16, 32)
			b := buses[m[4]]
			if b == nil {
				b = &ideBus{channel: "ide.1"}
				if addr&^7 == 0x1f0 {
					b.channel = "ide.0"
				}
				buses[m[4]] = b
			}
			val := hexByte(m[3])
			switch addr & 7 {
			case 1:
				b.feature = val
			case 3:
				b.lbaLow = val
			case 6:
				b.slave = val&0x10 != 0
			}
		case "ide_exec_cmd":
			m := reExecCmd.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			b := buses[m[1]]
			if b == nil {
				continue // an AHCI port: its command FIS is dumped
			}
			disk := b.channel + " master"
			if b.slave {
				disk = b.channel + " slave"
			}
			out = append(out, diskCommand{at: rec.at, disk: disk, proto: protoATA, opcode: hexByte(m[3]),
				feature: b.feature, target: ataTarget(hexByte(m[3]), b.lbaLow)})
		case "handle_cmd_fis_dump":
			m := reFISDump.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			fis := strings.Fields(m[3])
			if hexByte(fis[0]) != 0x27 || hexByte(fis[1])&0x80 == 0 {
				continue // not a command: a device control FIS (reset)
			}
			op := hexByte(fis[2])
			if isNCQ(op) {
				continue // counted from process_ncq_command
			}
			out = append(out, diskCommand{at: rec.at, disk: "ahci port " + m[2], proto: protoATA, opcode: op,
				feature: hexByte(fis[3]), target: ataTarget(op, hexByte(fis[4]))})
		case "process_ncq_command":
			m := reNCQ.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			out = append(out, diskCommand{at: rec.at, disk: "ahci port " + m[2], proto: protoATA, opcode: hexByte(m[3]), target: -1})
		case "pci_nvme_admin_cmd":
			m := reNVMeAdmin.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			nvmeCmds[m[1]] = len(out)
			out = append(out, diskCommand{at: rec.at, disk: "nvme", proto: protoNVMeAdmin, opcode: hexByte(m[2]), target: -1})
		case "pci_nvme_get_log", "pci_nvme_identify", "pci_nvme_getfeat":
			re := map[string]*regexp.Regexp{"pci_nvme_get_log": reNVMeLog, "pci_nvme_identify": reNVMeIdent, "pci_nvme_getfeat": reNVMeFeat}[rec.event]
			m := re.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			i, ok := nvmeCmds[m[1]]
			if !ok {
				return nil, fmt.Errorf("%s for an unseen command id: %s", rec.event, rec.args)
			}
			out[i].target = int(hexByte(m[2]))
			if len(m) > 3 {
				out[i].lsp = int(hexByte(m[3]))
			}
		case "pci_nvme_io_cmd":
			m := reNVMeIO.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			out = append(out, diskCommand{at: rec.at, disk: "nvme", proto: protoNVMeIO, opcode: hexByte(m[2]), target: -1})
		case "scsi_req_parsed":
			m := reSCSI.FindStringSubmatch(rec.args)
			if m == nil {
				return nil, fmt.Errorf("unparsed %s: %s", rec.event, rec.args)
			}
			op, _ := strconv.ParseUint(m[2], 10, 8)
			out = append(out, diskCommand{at: rec.at, disk: "scsi-hd target " + m[1], proto: protoSCSI, opcode: uint8(op), target: -1})
		}
	}
	return out, nil
}

// ataTarget is the log address of a log-reading command (LBA low), else -1.
func ataTarget(op, lbaLow uint8) int {
	switch op {
	case 0xB0, 0x2F, 0x47:
		return int(lbaLow)
	}
	return -1
}

func isNCQ(op uint8) bool {
	switch op {
	case 0x60, 0x61, 0x63, 0x64, 0x65:
		return true
	}
	return false
}

// ATA SMART subcommands that take no log address: their LBA low is not a target.
func normalise(c diskCommand) diskCommand {
	if c.proto == protoATA && c.opcode == 0xB0 && c.feature != 0xD5 {
		c.target = -1
	}
	return c
}

// traceWindow is a stretch in which only the receiver touched the disks.
type traceWindow struct {
	name     string
	from, to time.Time
}

// windows pairs the guest's BEGIN and END markers.
func windows(marks map[string]time.Time) ([]traceWindow, error) {
	var out []traceWindow
	for m, at := range marks {
		name, ok := strings.CutPrefix(m, vmproto.MarkerWindow+"BEGIN ")
		if !ok {
			continue
		}
		end, ok := marks[vmproto.MarkerWindow+"END "+name]
		if !ok || end.Before(at) {
			return nil, fmt.Errorf("window %q has no END after its BEGIN", name)
		}
		out = append(out, traceWindow{name, at, end})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from.Before(out[j].from) })
	return out, nil
}

// windowReport sorts the commands into the receiver's windows (checked) and the rest (the kernel's
// probe and shutdown, smartctl and nvme-cli: reported only).
type windowReport struct {
	inside     map[string]map[string]int // window -> "disk: command" -> count
	outside    map[string]int
	violations []string
}

func sortCommands(cmds []diskCommand, ws []traceWindow) windowReport {
	r := windowReport{inside: map[string]map[string]int{}, outside: map[string]int{}}
	for _, w := range ws {
		r.inside[w.name] = map[string]int{}
	}
	for _, c := range cmds {
		c = normalise(c)
		k := c.disk + ": " + c.key()
		var in *traceWindow
		for i := range ws {
			if !c.at.Before(ws[i].from) && !c.at.After(ws[i].to) {
				in = &ws[i]
			}
		}
		if in == nil {
			r.outside[k]++
			continue
		}
		r.inside[in.name][k]++
		if why := readOnly(c); why != "" {
			r.violations = append(r.violations, fmt.Sprintf("%s at %s in window %s: %s: %s",
				c.disk, c.at.Format("15:04:05.000000"), in.name, c.key(), why))
		}
	}
	return r
}

func countsText(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "    %5d  %s\n", m[k], k)
	}
	return b.String()
}

// identifiesPerDisk is how many IDENTIFY DEVICE a fresh receiver sends an ATA disk over any number of
// reads: smart.OpenSata sends one to choose the drive's names and keeps its answer to itself, then the
// receiver's one (*SataDevice).Identify fills its cache; the disk stays open, so neither repeats.
const identifiesPerDisk = 2

// checkDiskCommands: in every window of the guest's, each command QEMU traced is on the read-only
// list; and the windows are not empty (the trace sees the receiver's reads of each emulated disk).
func checkDiskCommands(t *testing.T, run *vmRun) {
	f, err := os.Open(run.trace)
	require.NoError(t, err)
	defer f.Close()
	cmds, err := parseQEMUTrace(f)
	require.NoError(t, err)
	ws, err := windows(run.marks)
	require.NoError(t, err)
	require.Len(t, ws, 6, "the guest's windows: %v", run.marks)
	r := sortCommands(cmds, ws)
	total := 0
	for _, w := range ws {
		n := 0
		for _, c := range r.inside[w.name] {
			n += c
		}
		total += n
		t.Logf("window %s (%v): %d commands reached the disks\n%s", w.name, w.to.Sub(w.from).Round(time.Millisecond), n, countsText(r.inside[w.name]))
	}
	t.Logf("outside the windows (kernel probe and shutdown, smartctl, nvme-cli; not checked): %d kinds\n%s", len(r.outside), countsText(r.outside))
	assert.Empty(t, r.violations, "commands off the read-only list reached a disk while the receiver read it")

	// Every emulated disk the receiver reads was seen being read, in the first window: the trace is
	// not blind.
	p1 := r.inside["phase1"]
	for _, want := range []string{
		"ide.0 master: ATA E5h (CHECK POWER MODE)", "ide.0 master: ATA ECh (IDENTIFY DEVICE)", "ide.0 master: ATA B0h/D0h (SMART READ DATA)",
		"ahci port 0: ATA E5h (CHECK POWER MODE)", "ahci port 0: ATA ECh (IDENTIFY DEVICE)", "ahci port 0: ATA B0h/D0h (SMART READ DATA)",
		"ahci port 0: ATA B0h/D5h target 01h (SMART READ LOG)",
		"nvme: NVMe admin 02h target 02h (Get Log Page)", "nvme: NVMe admin 06h target 01h (Identify)",
		"scsi-hd target 0: SCSI 4Dh (LOG SENSE)",
	} {
		assert.Positive(t, p1[want], "window phase1: the trace shows no %q", want)
	}
	// Three cycles in phase1, IDENTIFY only in the first: the cache holds.
	assert.Equal(t, identifiesPerDisk, p1["ahci port 0: ATA ECh (IDENTIFY DEVICE)"], "IDENTIFY DEVICE once per disk, and smart.go's own at open")
	assert.GreaterOrEqual(t, p1["ahci port 0: ATA E5h (CHECK POWER MODE)"], 3, "CHECK POWER MODE every cycle")
	// The namespaces' size, capacity and usage come from the Identify Namespace (CNS 00h) the identity is
	// read with: once per namespace from a fresh receiver, and never again from a running one, as none of
	// QEMU's is thin provisioned (no NUSE to follow).
	const identifyNS = "nvme: NVMe admin 06h target 00h (Identify)"
	for w, want := range map[string]int{"phase1": len(nvmeBlockSizes), "repeat": 0, "nodrivedb": len(nvmeBlockSizes), "many": len(nvmeBlockSizes)} {
		assert.Equal(t, want, r.inside[w][identifyNS], "window %s: Identify Namespace", w)
	}
	// Nothing beyond what the SMART source sent before it read namespaces: the controller's identity and
	// its SMART and error logs, and the hwmon driver's temperature threshold (unprivileged fallback).
	nvmeKinds := map[string]bool{}
	for _, cmds := range r.inside {
		for k := range cmds {
			if strings.HasPrefix(k, "nvme: ") {
				nvmeKinds[k] = true
			}
		}
	}
	assert.ElementsMatch(t, []string{identifyNS, "nvme: NVMe admin 06h target 01h (Identify)",
		"nvme: NVMe admin 02h target 01h (Get Log Page)", "nvme: NVMe admin 02h target 02h (Get Log Page)",
		"nvme: NVMe admin 0Ah target 04h (Get Features)"}, slices.Sorted(maps.Keys(nvmeKinds)), "the NVMe commands in the receiver's windows")
	for _, w := range []string{"critical-warning", "repeat", "nodrivedb"} {
		for _, disk := range []string{"ide.0 master", "ahci port 0"} {
			assert.Positive(t, r.inside[w][disk+": ATA B0h/D0h (SMART READ DATA)"], "window %s: no SMART READ DATA on %s", w, disk)
		}
		assert.Positive(t, r.inside[w]["nvme: NVMe admin 02h target 02h (Get Log Page)"], "window %s: no NVMe SMART log read", w)
	}
	// A thousand reads: each disk read at every one of them; the IDENTIFY cache of a fresh receiver
	// asks once per disk, and QEMU's scsi-hd, which has no SMART pages, is asked once.
	for _, want := range []string{
		"ide.0 master: ATA B0h/D0h (SMART READ DATA)", "ahci port 0: ATA B0h/D0h (SMART READ DATA)",
		"nvme: NVMe admin 02h target 02h (Get Log Page)", "nvme: NVMe admin 02h target 01h (Get Log Page)",
	} {
		assert.GreaterOrEqual(t, r.inside["many"][want], 1000, "window many: %q", want)
	}
	assert.Equal(t, identifiesPerDisk, r.inside["many"]["ahci port 0: ATA ECh (IDENTIFY DEVICE)"], "window many: IDENTIFY DEVICE once per disk, and smart.go's own at open")
	assert.Equal(t, 1, r.inside["many"]["scsi-hd target 0: SCSI 4Dh (LOG SENSE)"], "window many: LOG SENSE once on a disk without SMART pages")
	// Unprivileged, the kernel refuses the ATA pass-through before it reaches the disk (the receiver
	// reports permission_denied): the trace shows nothing on the ATA disks.
	for k := range r.inside["unprivileged"] {
		assert.False(t, strings.HasPrefix(k, "ide.") || strings.HasPrefix(k, "ahci "), "window unprivileged: %s reached an ATA disk", k)
	}
	assert.Positive(t, total)
	// QEMU cannot put a disk in standby: its CHECK POWER MODE always answers FFh (active or idle) and
	// STANDBY IMMEDIATE is a no-op, so "a sleeping disk gets only CHECK POWER MODE" is shown with the
	// device double (internal/smart/device TestStandby), at the ioctl level every code path goes through.
}

// A trace excerpt as QEMU 7.2 writes it (addresses shortened): a legacy IDE SMART READ LOG 01h, an
// AHCI SMART READ DATA and an NCQ read, NVMe Get Log Page 02h and Identify CNS 01h, a SCSI LOG SENSE
// and, off the list, a legacy IDE SMART ENABLE (D8h), an AHCI WRITE LOG (D6h) and an NVMe Set
// Features.
const sampleTrace = `700@1700000000.000100:ide_ioport_write IDE PIO wr @ 0x1f1 (Features); val 0xd5; bus 0x10 IDEState 0x18
700@1700000000.000101:ide_ioport_write IDE PIO wr @ 0x1f2 (Sector Count); val 0x01; bus 0x10 IDEState 0x18
700@1700000000.000102:ide_ioport_write IDE PIO wr @ 0x1f3 (Sector Number); val 0x01; bus 0x10 IDEState 0x18
700@1700000000.000103:ide_ioport_write IDE PIO wr @ 0x1f6 (Device/Head); val 0xa0; bus 0x10 IDEState 0x18
700@1700000000.000104:ide_ioport_write IDE PIO wr @ 0x1f7 (Command); val 0xb0; bus 0x10 IDEState 0x18
700@1700000000.000105:ide_exec_cmd IDE exec cmd: bus 0x10; state 0x18; cmd 0xb0
700@1700000000.000200:handle_cmd_fis_dump ahci(0x20)[0]: FIS:
0x00: 27 80 b0 d0 00 4f c2 a0 00 00 00 00 01 00 00 00 
0x10: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 

700@1700000000.000201:ide_exec_cmd IDE exec cmd: bus 0x28; state 0x30; cmd 0xb0
700@1700000000.000300:handle_cmd_fis_dump ahci(0x20)[0]: FIS:
0x00: 27 80 60 08 00 00 00 40 00 00 00 00 00 00 00 00 

700@1700000000.000301:process_ncq_command ahci(0x20)[0][tag:3]: NCQ op 0x60 on sectors [0,7]
701@1700000000.000400:pci_nvme_admin_cmd cid 12 sqid 0 opc 0x2 opname 'NVME_ADM_CMD_GET_LOG_PAGE'
701@1700000000.000401:pci_nvme_get_log cid 12 lid 0x2 lsp 0x0 rae 0x0 len 512 off 0
701@1700000000.000402:pci_nvme_admin_cmd cid 13 sqid 0 opc 0x6 opname 'NVME_ADM_CMD_IDENTIFY'
701@1700000000.000403:pci_nvme_identify cid 13 cns 0x1 ctrlid 0 csi 0x0
701@1700000000.000403:pci_nvme_admin_cmd cid 15 sqid 0 opc 0xa opname 'NVME_ADM_CMD_GET_FEATURES'
701@1700000000.000403:pci_nvme_getfeat cid 15 nsid 0x0 fid 0x4 sel 0x0 cdw11 0x0
701@1700000000.000404:pci_nvme_io_cmd cid 5 nsid 0x1 sqid 1 opc 0x2 opname 'NVME_NVM_CMD_READ'
701@1700000000.000500:scsi_req_parsed target 0 lun 0 tag 9 command 77 dir 1 length 64
700@1700000001.000100:ide_ioport_write IDE PIO wr @ 0x1f1 (Features); val 0xd8; bus 0x10 IDEState 0x18
700@1700000001.000101:ide_ioport_write IDE PIO wr @ 0x1f7 (Command); val 0xb0; bus 0x10 IDEState 0x18
700@1700000001.000102:ide_exec_cmd IDE exec cmd: bus 0x10; state 0x18; cmd 0xb0
700@1700000001.000200:handle_cmd_fis_dump ahci(0x20)[0]: FIS:
0x00: 27 80 b0 d6 e0 4f c2 a0 00 00 00 00 01 00 00 00 

701@1700000001.000300:pci_nvme_admin_cmd cid 14 sqid 0 opc 0x9 opname 'NVME_ADM_CMD_SET_FEATURES'
`

func TestParseQEMUTrace(t *testing.T) {
	cmds, err := parseQEMUTrace(strings.NewReader(sampleTrace))
	require.NoError(t, err)
	var got []string
	for _, c := range cmds {
		got = append(got, c.disk+": "+normalise(c).key())
	}
	assert.Equal(t, []string{
		"ide.0 master: ATA B0h/D5h target 01h (SMART READ LOG)",
		"ahci port 0: ATA B0h/D0h (SMART READ DATA)",
		"ahci port 0: ATA 60h",
		"nvme: NVMe admin 02h target 02h (Get Log Page)",
		"nvme: NVMe admin 06h target 01h (Identify)",
		"nvme: NVMe admin 0Ah target 04h (Get Features)",
		"nvme: NVMe I/O 02h",
		"scsi-hd target 0: SCSI 4Dh (LOG SENSE)",
		"ide.0 master: ATA B0h/D8h",
		"ahci port 0: ATA B0h/D6h",
		"nvme: NVMe admin 09h",
	}, got)

	at := func(sec int64, usec int64) time.Time { return time.Unix(sec, usec*1000) }
	// One window over the read-only second (the NCQ read and the NVMe read fall in it too) and one
	// over the writes.
	r := sortCommands(cmds, []traceWindow{{"reads", at(1700000000, 0), at(1700000000, 350)}, {"writes", at(1700000001, 0), at(1700000002, 0)}})
	assert.Equal(t, []string{
		"ahci port 0 at " + at(1700000000, 301).Format("15:04:05.000000") + " in window reads: ATA 60h: opcode not on the read-only list",
		"ide.0 master at " + at(1700000001, 102).Format("15:04:05.000000") + " in window writes: ATA B0h/D8h: opcode not on the read-only list",
		"ahci port 0 at " + at(1700000001, 200).Format("15:04:05.000000") + " in window writes: ATA B0h/D6h: opcode not on the read-only list",
		"nvme at " + at(1700000001, 300).Format("15:04:05.000000") + " in window writes: NVMe admin 09h: opcode not on the read-only list",
	}, r.violations)
	assert.Len(t, r.outside, 5, "after the first window, before the second: %v", r.outside)

	// A log outside the list is refused even though the opcode is listed.
	assert.Contains(t, readOnly(diskCommand{proto: protoATA, opcode: 0xB0, feature: 0xD5, target: 0xE0}), "not one of the listed")
	assert.Contains(t, readOnly(diskCommand{proto: protoNVMeAdmin, opcode: 0x02, target: 0x07}), "not one of the listed")
	assert.Contains(t, readOnly(diskCommand{proto: protoNVMeAdmin, opcode: 0x02, target: 0x02, lsp: 1}), "log specific")
	assert.Contains(t, readOnly(diskCommand{proto: protoNVMeAdmin, opcode: 0x0A, target: 0x07}), "not one of the listed")
	assert.Empty(t, readOnly(diskCommand{proto: protoATA, opcode: 0xE5, target: -1}))
}

func TestWindows(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	ws, err := windows(map[string]time.Time{
		vmproto.MarkerWindow + "BEGIN b": t0.Add(3 * time.Second), vmproto.MarkerWindow + "END b": t0.Add(4 * time.Second),
		vmproto.MarkerWindow + "BEGIN a": t0, vmproto.MarkerWindow + "END a": t0.Add(time.Second),
	})
	require.NoError(t, err)
	assert.Equal(t, []traceWindow{{"a", t0, t0.Add(time.Second)}, {"b", t0.Add(3 * time.Second), t0.Add(4 * time.Second)}}, ws)
	_, err = windows(map[string]time.Time{vmproto.MarkerWindow + "BEGIN a": t0})
	assert.Error(t, err)
}
