//go:build linux

package diskhealthreceiver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"
)

// The receiver-level property test (issue 14): random fixture roots — /proc/diskstats with random field
// counts, values at and beyond the integer limits and random bytes in names; sysfs strings of random
// bytes and lengths; mountinfo with random escapes and bytes; cgroup trees with random io.stat and
// names; one input at a time (diskstats, /proc/stat, mountinfo, PSI, cgroup files, sysfs attributes, ext4
// and md files) a FIFO, an endless device node or a file past its cap — scraped several times by every source, as the receiver builds them, with random counter steps
// in between (forward a little or by 1e9, backwards, resets, flaps to 2^64 − 1, the file replaced by rename).
// Every output must hold:
//   - every string (resource and point attributes) valid UTF-8, without control characters, within its
//     kind's cap (sanitize);
//   - no NaN or Inf;
//   - no negative value in a monotonic sum, and no decrease of a cumulative point without a new start
//     time;
//   - start ≤ time;
//   - ratios and utilizations within [0, 1], except disk_health.disk.utilization, which is not clamped; it
//     stays within (Δt + 1 s) / Δt whatever was in flight and however long the host has been up (the
//     boot time is minutes to 120 days ago), and a step of io_ticks (forward or back) that does not fit
//     the interval gives 0;
//   - no operation rate beyond what a device can do; system.disk.io_time gains at most Δt + 1 s within
//     one series, whatever was in flight (a forward jump is no time spent);
//   - the OTLP protobuf encoding round-trips;
//   - every scrape returns, whatever a hostile input does.
//
// `make test` runs propertyRoots roots from a fixed seed; FuzzReceiverProperty takes the fixture's
// entropy from the fuzzer.

const (
	propertySeed  = 14
	propertyRoots = 500
	// propertyBudget stops the seeded run early on a slow machine (it must still reach propertyRoots).
	propertyBudget = 12 * time.Minute
	scrapesPerRoot = 4
	// hostileScrapeBound is far above any scrape of a small root, far below "forever".
	hostileScrapeBound = time.Minute
)

func TestPropertyRandomRoots(t *testing.T) {
	rng := rand.New(rand.NewPCG(propertySeed, propertySeed))
	deadline := time.Now().Add(propertyBudget)
	n := 0
	for ; n < propertyRoots && time.Now().Before(deadline); n++ {
		data := make([]byte, 2048+rng.IntN(6144))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		ok := t.Run(strconv.Itoa(n), func(t *testing.T) { runProperty(t, data) })
		if !ok {
			t.Fatalf("root %d of seed %d failed", n, propertySeed)
		}
	}
	if n < propertyRoots {
		t.Fatalf("only %d of %d roots within %v", n, propertyRoots, propertyBudget)
	}
}

func FuzzReceiverProperty(f *testing.F) {
	rng := rand.New(rand.NewPCG(propertySeed, 1))
	for range 8 {
		data := make([]byte, 1024)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Fuzz(runProperty)
}

// entropy hands out the fixture's choices from a byte string; past its end every choice is 0.
type entropy struct{ b []byte }

func (e *entropy) byte() byte {
	if len(e.b) == 0 {
		return 0
	}
	c := e.b[0]
	e.b = e.b[1:]
	return c
}

func (e *entropy) u64() uint64 {
	var v [8]byte
	for i := range v {
		v[i] = e.byte()
	}
	return binary.LittleEndian.Uint64(v[:])
}

func (e *entropy) intn(n int) int { return int(e.u64() % uint64(n)) }

func (e *entropy) chance(in256 int) bool { return int(e.byte()) < in256 }

// bytes returns n random bytes without '\n' (fixture lines) and, when filename, valid as a file name.
func (e *entropy) bytes(n int, filename bool) string {
	var sb strings.Builder
	for range n {
		c := e.byte()
		switch {
		case c == '\n':
			c = '\xff'
		case filename && (c == '/' || c == 0):
			c = '\x01'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

// length is a string length: mostly short, sometimes past every cap, rarely 100 KB.
func (e *entropy) length() int {
	switch e.intn(16) {
	case 0:
		return 5000 + e.intn(5000)
	case 1:
		if e.chance(64) {
			return 100 << 10
		}
		return 300
	default:
		return e.intn(40)
	}
}

// counter is a counter value: small, near 2^32, at or past 2^63, the u64 limit, or random.
func (e *entropy) counter() uint64 {
	switch e.intn(10) {
	case 0:
		return 0
	case 1:
		return 1<<32 - 1 - uint64(e.intn(5000))
	case 2:
		return 1<<63 + uint64(e.intn(3)) - 1
	case 3:
		return math.MaxUint64 - uint64(e.intn(3))
	case 4:
		return 1<<55 + uint64(e.intn(1000)) // sectors whose bytes pass 2^64
	case 5:
		return e.u64()
	default:
		return uint64(e.intn(1 << 30))
	}
}

// step moves a counter: forward a little or further than any clock allows, back a little or a lot, reset
// to 0, to near 2^32 or to 2^64 - 1 (a flap), unchanged.
func (e *entropy) step(v uint64) uint64 {
	switch e.intn(14) {
	case 12:
		return v + 1_000_000_000 + uint64(e.intn(1000))
	case 13:
		return math.MaxUint64
	case 0:
		return v - min(v, uint64(e.intn(1000)))
	case 1:
		return v - 3_000_000_000
	case 2:
		return 0
	case 3:
		return 1<<32 - 1 - uint64(e.intn(500))
	case 4:
		return v
	case 5:
		return e.counter()
	default:
		return v + uint64(e.intn(1000))
	}
}

type propDevice struct {
	name         string
	major, minor uint32
	fields       int
	vals         [17]uint64
	garbage      string // a bad field replacing one value, "" for none
	plain        bool   // a plain name: its utilization is checked against its io_ticks steps
}

type propRoot struct {
	t       testing.TB
	e       *entropy
	dir     string
	devices []*propDevice
	cgroups []string // cgroup directories, relative to the hierarchy
	cgVals  map[string][]uint64
	nfs     []*propNFS // NFS mounts, for mountstats
	// kernelStats, when set, is a mountstats fixture of a real kernel's layout (internal/mountstats/
	// testdata), cut at a random place, written instead of the generated blocks; the mount table
	// then has its NFS mounts too.
	kernelStats []byte
	fuse        []uint32 // FUSE mounts' minor numbers, for their connections
	hostile     string   // an input replaced by a FIFO, a device node or a file past its cap; never rewritten
}

func (r *propRoot) write(rel, content string) {
	if rel == r.hostile {
		return
	}
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func newPropRoot(t testing.TB, e *entropy) *propRoot {
	r := &propRoot{t: t, e: e, dir: t.TempDir(), cgVals: map[string][]uint64{}}
	r.write("proc/stat", fmt.Sprintf("cpu  1 2 3\nbtime %d\n", propBootTime(e.b)))
	n := 1 + e.intn(6)
	for i := range n {
		d := &propDevice{major: uint32(8 + i), minor: uint32(e.intn(16))}
		switch e.intn(4) {
		case 0:
			d.name = e.bytes(1+e.length(), false)
			d.name = strings.Map(func(c rune) rune {
				if c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' {
					return 'x'
				}
				return c
			}, d.name)
		default:
			d.name, d.plain = fmt.Sprintf("pd%d", i), true
		}
		d.fields = []int{14, 15, 17, 18, 19, 20, 20, 20, 21, 25, 3}[e.intn(11)]
		for j := range d.vals {
			d.vals[j] = e.counter()
		}
		r.devices = append(r.devices, d)
		r.sysfs(d)
	}
	// An NVMe controller without a namespace, with random identity strings.
	if e.chance(128) {
		c := "sys/class/nvme/nvme9/"
		r.write(c+"model", e.bytes(e.length(), false))
		r.write(c+"serial", e.bytes(e.length(), false))
		r.write(c+"firmware_rev", e.bytes(e.length(), false))
	}
	r.writeDiskstats(false)
	r.mountinfo()
	r.write("proc/pressure/io", r.psi())
	r.cgroupTree()
	if e.chance(128) {
		r.makeHostile()
	}
	return r
}

// propBootTime is a boot time minutes to 120 days before now (io_ticks of a host up 49.7 days has wrapped
// at 2^32 ms), from a hash of the fixture's bytes: choosing it shifts none of the entropy's other choices.
func propBootTime(b []byte) int64 {
	h := fnv.New64a()
	_, _ = h.Write(b)
	up := time.Minute + time.Duration(h.Sum64()%uint64(120*24*time.Hour/time.Second))*time.Second
	return time.Now().Add(-up).Unix()
}

// hostileForms replace an input: a FIFO without a writer (opening or reading it blocks forever), a device
// node that never ends, a regular file one byte past the cap of its kind.
var hostileForms = []string{"fifo", "endless", "long"}

// makeHostile replaces one input the sources read with a hostile form. Every source must still return
// from every scrape (the watchdog in runProperty), with the rest of its output intact.
func (r *propRoot) makeHostile() {
	e := r.e
	type input struct {
		rel string
		cap int // the size cap of its kind; 0 where a file past it is too large to write every root
	}
	inputs := []input{
		{"proc/diskstats", 0}, {"proc/stat", 0}, {"proc/1/mountinfo", 0}, {"proc/self/mountinfo", 0},
		{"proc/1/mountstats", 0},
		{"proc/pressure/io", bounded.Pressure}, {"sys/fs/cgroup/cgroup.controllers", bounded.Attr},
		{"sys/fs/ext4/sda1/errors_count", bounded.Attr}, {"sys/block/md0/md/array_state", bounded.Attr},
		{filepath.Join("sys/fs/cgroup", r.cgroups[len(r.cgroups)-1], "io.stat"), 0},
	}
	if d := r.devices[0]; d.plain {
		// A device's sysfs attributes (identity), when it has a sysfs entry.
		if _, err := os.Stat(filepath.Join(r.dir, "sys/class/block", d.name)); err == nil {
			inputs = append(inputs, input{"sys/devices/virtual/block/" + d.name + "/size", bounded.Attr},
				input{"sys/devices/virtual/block/" + d.name + "/queue/rotational", bounded.Attr})
		}
	}
	if len(r.fuse) > 0 {
		inputs = append(inputs, input{fmt.Sprintf("sys/fs/fuse/connections/%d/waiting", r.fuse[0]), bounded.Attr})
	}
	in := inputs[e.intn(len(inputs))]
	form := hostileForms[e.intn(len(hostileForms))]
	if form == "long" && in.cap == 0 {
		form = "endless"
	}
	if in.rel == "sys/block/md0/md/array_state" {
		r.write("sys/block/md0/md/level", "raid1\n")
	}
	p := filepath.Join(r.dir, in.rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	_ = os.Remove(p)
	var err error
	switch form {
	case "fifo":
		err = unix.Mkfifo(p, 0o644)
	case "endless":
		err = os.Symlink("/dev/zero", p)
	case "long":
		err = os.WriteFile(p, bytes.Repeat([]byte("7"), in.cap+1), 0o644)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.hostile = in.rel
}

// sysfs gives a device a class/block entry (unless its name cannot be a file name, or by chance not, so
// its identity is unreadable) with random identity strings.
func (r *propRoot) sysfs(d *propDevice) {
	e := r.e
	sys := strings.ReplaceAll(d.name, "/", "!")
	if strings.ContainsRune(sys, 0) || len(sys) > 200 || sys == "." || sys == ".." || e.chance(24) {
		return
	}
	dev := "sys/devices/virtual/block/" + sys + "/"
	r.write(dev+"dev", fmt.Sprintf("%d:%d\n", d.major, d.minor))
	r.write(dev+"size", strconv.FormatUint(e.counter(), 10)+"\n")
	r.write(dev+"queue/rotational", strconv.Itoa(e.intn(3))+"\n")
	if e.chance(128) {
		r.write(dev+"wwid", e.bytes(e.length(), false)+"\n")
	}
	if e.chance(200) {
		hw := "sys/devices/pci0000:00/hw" + strconv.Itoa(int(d.major)) + "/"
		r.write(hw+"model", e.bytes(e.length(), false)+"\n")
		r.write(hw+"serial", e.bytes(e.length(), false)+"\n")
		r.write(hw+"firmware_rev", e.bytes(e.length(), false)+"\n")
		r.symlink(dev+"device", hw)
	}
	r.symlink("sys/class/block/"+sys, dev)
	r.symlink("sys/block/"+sys, dev)
}

func (r *propRoot) symlink(rel, target string) {
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.dir, target), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(r.dir, target), p); err != nil && !os.IsExist(err) {
		r.t.Fatal(err)
	}
}

func (r *propRoot) writeDiskstats(rename bool) {
	var sb strings.Builder
	for _, d := range r.devices {
		fmt.Fprintf(&sb, "%4d %7d %s", d.major, d.minor, d.name)
		for j := 0; j < d.fields-3 && j < len(d.vals); j++ {
			if d.garbage != "" && j == 4 {
				sb.WriteString(" " + d.garbage)
				continue
			}
			sb.WriteString(" " + strconv.FormatUint(d.vals[j], 10))
		}
		for j := len(d.vals); j < d.fields-3; j++ {
			sb.WriteString(" 18446744073709551616") // past u64, beyond the fields read
		}
		sb.WriteByte('\n')
	}
	if rename && r.hostile != "proc/diskstats" {
		r.write("proc/diskstats.new", sb.String())
		if err := os.Rename(filepath.Join(r.dir, "proc/diskstats.new"), filepath.Join(r.dir, "proc/diskstats")); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	r.write("proc/diskstats", sb.String())
}

var escapes = []string{`\040`, `\011`, `\012`, `\134`, `\377`, `\0`, `\999`, `\`, `\1x`}

func (r *propRoot) field(filename bool) string {
	e := r.e
	var sb strings.Builder
	for range e.intn(4) {
		if e.chance(80) {
			sb.WriteString(escapes[e.intn(len(escapes))])
		}
		s := e.bytes(e.length()%60, filename)
		sb.WriteString(strings.Map(func(c rune) rune {
			if c == ' ' || c == '\t' {
				return '_'
			}
			return c
		}, s))
	}
	return sb.String()
}

// kernelStatsMounts are the NFS mounts of the mountstats fixtures, as mountinfo lines.
var kernelStatsMounts = []string{
	"60 1 0:52 / /mnt/ckpt rw - nfs4 nas02:/ckpt rw",
	"61 1 0:53 / /mnt/train\\040set rw - nfs4 nas03:/train\\040set rw",
	"62 1 0:54 / /mnt/datasets ro - nfs nas01:/export/datasets ro",
	"63 1 0:55 / /home rw - nfs nfs01:/home rw",
}

func (r *propRoot) mountinfo() {
	e := r.e
	var sb strings.Builder
	sb.WriteString("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n")
	// A quarter of the roots (not when the entropy has run out: chance is then always true).
	if !e.chance(192) {
		files, err := filepath.Glob(filepath.Join("internal", "mountstats", "testdata", "*.txt"))
		if err != nil || len(files) == 0 {
			r.t.Fatalf("no mountstats fixtures: %v", err)
		}
		data, err := os.ReadFile(files[e.intn(len(files))])
		if err != nil {
			r.t.Fatal(err)
		}
		if !e.chance(192) {
			data = data[:e.intn(len(data)+1)]
		}
		r.kernelStats = data
		for _, l := range kernelStatsMounts {
			sb.WriteString(l + "\n")
		}
	}
	for i := range 1 + e.intn(5) {
		mp := "/" + r.field(true)
		if e.chance(30) {
			mp = r.field(true) // not absolute: a bad line
		}
		major, minor, typ, src := e.intn(300), e.intn(300), r.field(false), r.field(false)
		switch e.intn(4) {
		case 0: // an NFS mount, with a mountstats block
			major, typ = 0, []string{"nfs", "nfs4"}[e.intn(2)]
			r.nfs = append(r.nfs, newPropNFS(e, src, mp, typ))
		case 1: // a FUSE mount, with a connection
			major, typ = 0, []string{"fuse", "fuse.sshfs", "fuseblk"}[e.intn(3)]
			r.fuse = append(r.fuse, uint32(minor))
		}
		fmt.Fprintf(&sb, "%d 1 %d:%d / %s rw - %s %s rw\n", 10+i, major, minor, mp, typ, src)
		if e.chance(20) {
			sb.WriteString(r.field(false) + "\n") // garbage
		}
	}
	r.write("proc/1/mountinfo", sb.String())
	r.write("proc/self/mountinfo", sb.String())
	r.writeMountstats()
	for _, minor := range r.fuse {
		r.write(fmt.Sprintf("sys/fs/fuse/connections/%d/waiting", minor), r.waiting())
	}
}

// propNFS is an NFS mount's mountstats block: its counters, stepped between scrapes like the others.
type propNFS struct {
	src, mp, typ string
	age          uint64
	bytes        [8]uint64
	xprts        [][13]uint64
	ops          map[string][9]uint64
	names        []string
}

// propOpNames are operation names, the last ones bad (drawn now and then).
var propOpNames = []string{"NULL", "READ", "WRITE", "COMMIT", "GETATTR", "LOOKUP", "ACCESS", "READDIRPLUS", "SEQUENCE", "OPEN", "read", "R-E-A-D", ""}

func newPropNFS(e *entropy, src, mp, typ string) *propNFS {
	n := &propNFS{src: src, mp: mp, typ: typ, age: e.counter(), ops: map[string][9]uint64{}}
	for i := range n.bytes {
		n.bytes[i] = e.counter()
	}
	for range 1 + e.intn(4) {
		var x [13]uint64
		for i := range x {
			x[i] = e.counter()
		}
		n.xprts = append(n.xprts, x)
	}
	for range 1 + e.intn(8) {
		name := propOpNames[e.intn(len(propOpNames)-3)]
		if e.chance(8) {
			name = propOpNames[len(propOpNames)-1-e.intn(3)]
		}
		var v [9]uint64
		for i := range v {
			v[i] = e.counter()
		}
		if _, ok := n.ops[name]; !ok {
			n.names = append(n.names, name)
		}
		n.ops[name] = v
	}
	return n
}

func (n *propNFS) step(e *entropy) {
	n.age = e.step(n.age)
	for i := range n.bytes {
		n.bytes[i] = e.step(n.bytes[i])
	}
	for j := range n.xprts {
		for i := range n.xprts[j] {
			n.xprts[j][i] = e.step(n.xprts[j][i])
		}
	}
	for name, v := range n.ops {
		for i := range v {
			v[i] = e.step(v[i])
		}
		n.ops[name] = v
	}
}

// writeMountstats writes the NFS blocks, now and then with a wrong field count, an unknown
// protocol, a bad operation name, garbage or a random cut.
func (r *propRoot) writeMountstats() {
	e := r.e
	// pick is good most of the time and one of the bad values otherwise.
	pick := func(good int, bad ...int) int {
		if e.chance(240) {
			return good
		}
		return bad[e.intn(len(bad))]
	}
	var sb strings.Builder
	sb.WriteString("device /dev/sda1 mounted on / with fstype ext4\n")
	for _, n := range r.nfs {
		fmt.Fprintf(&sb, "device %s mounted on %s with fstype %s statvers=1.1\n\topts:\trw,vers=4.2\n\tage:\t%d\n", n.src, n.mp, n.typ, n.age)
		sb.WriteString("\tbytes:\t")
		for _, v := range n.bytes[:pick(8, 7, 0)] {
			fmt.Fprintf(&sb, "%d ", v)
		}
		sb.WriteString("\n")
		for _, x := range n.xprts {
			proto := []string{"tcp", "udp", "rdma", "quic"}[pick(0, 1, 2, 3)]
			fields := map[string]int{"tcp": 13, "udp": 10, "rdma": 13, "quic": 13}[proto]
			sb.WriteString("\txprt:\t" + proto)
			for _, v := range x[:pick(fields, 12, 7, 1)] {
				fmt.Fprintf(&sb, " %d", v)
			}
			sb.WriteString("\n")
		}
		sb.WriteString("\tper-op statistics\n")
		for _, name := range n.names {
			v := n.ops[name]
			fmt.Fprintf(&sb, "\t%12s:", name)
			for _, x := range v[:pick(9, 8, 3)] {
				fmt.Fprintf(&sb, " %d", x)
			}
			sb.WriteString("\n")
		}
		if e.chance(10) {
			sb.WriteString(r.field(false) + "\n") // garbage
		}
		sb.WriteString("\n")
	}
	data := sb.String()
	if e.chance(10) {
		data = data[:e.intn(len(data)+1)] // a read cut anywhere
	}
	if r.kernelStats != nil {
		data = string(r.kernelStats)
	}
	r.write("proc/1/mountstats", data)
	r.write("proc/self/mountstats", data)
}

func (r *propRoot) waiting() string {
	return []string{"0\n", "1\n", "17\n", "-1\n", "x\n", "", "18446744073709551616\n"}[r.e.intn(7)]
}

func (r *propRoot) psi() string {
	e := r.e
	num := func() string {
		return []string{"0.00", "1.50", "100.00", "1e308", "NaN", "-1", "99999999999999999999"}[e.intn(7)]
	}
	return fmt.Sprintf("some avg10=%s avg60=%s avg300=%s total=%d\nfull avg10=%s avg60=%s avg300=%s total=%d\n",
		num(), num(), num(), e.counter(), num(), num(), num(), e.counter())
}

func (r *propRoot) cgroupTree() {
	e := r.e
	r.write("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n")
	r.cgroups = []string{""}
	for range e.intn(5) {
		name := r.field(true)
		if name == "" || name == "." || name == ".." || len(name) > 200 {
			name = "kubepods.slice"
		}
		parent := r.cgroups[e.intn(len(r.cgroups))]
		r.cgroups = append(r.cgroups, filepath.Join(parent, name))
	}
	for _, cg := range r.cgroups {
		vals := make([]uint64, 6)
		for i := range vals {
			vals[i] = e.counter()
		}
		r.cgVals[cg] = vals
		r.writeIOStat(cg)
	}
}

func (r *propRoot) writeIOStat(cg string) {
	v := r.cgVals[cg]
	dir := filepath.Join("sys/fs/cgroup", cg)
	r.write(filepath.Join(dir, "cgroup.procs"), "")
	var sb strings.Builder
	for _, d := range r.devices[:min(2, len(r.devices))] {
		fmt.Fprintf(&sb, "%d:%d rbytes=%d wbytes=%d rios=%d wios=%d dbytes=%d dios=%d\n", d.major, d.minor, v[0], v[1], v[2], v[3], v[4], v[5])
	}
	if r.e.chance(20) {
		sb.WriteString("8:0 rbytes=12x3\n")
	}
	r.write(filepath.Join(dir, "io.stat"), sb.String())
}

// advance moves every counter between two scrapes.
func (r *propRoot) advance() {
	e := r.e
	for _, d := range r.devices {
		for j := range d.vals {
			d.vals[j] = e.step(d.vals[j])
		}
		d.garbage = ""
		if e.chance(10) {
			d.garbage = []string{"12x3", "-1", "18446744073709551616", ""}[e.intn(4)]
		}
		if e.chance(10) {
			d.fields = []int{14, 18, 20}[e.intn(3)]
		}
	}
	r.writeDiskstats(e.chance(40))
	for _, cg := range r.cgroups {
		v := r.cgVals[cg]
		for i := range v {
			v[i] = e.step(v[i])
		}
		r.writeIOStat(cg)
	}
	r.write("proc/pressure/io", r.psi())
	for _, n := range r.nfs {
		n.step(e)
	}
	r.writeMountstats()
	for _, minor := range r.fuse {
		r.write(fmt.Sprintf("sys/fs/fuse/connections/%d/waiting", minor), r.waiting())
	}
}

// propConfig is the receiver's configuration for root: every source on, every device class and every
// filesystem kept, so every hostile string has a way out.
func propConfig(root string) *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.RootPath = root
	section[iostatscraper.Config](cfg, "iostat").DeviceClasses = []string{"disk", "partition", "dm", "md", "loop", "ram", "other"}
	fs := section[filesystemscraper.Config](cfg, "filesystem")
	fs.IncludeMemory = true
	fs.IncludeRemote = true
	fs.MountPoints.Exclude = nil
	fs.StatfsTimeout = 200 * time.Millisecond
	section[cgroupsscraper.Config](cfg, "cgroups").MaxDepth = 6
	nfs := section[netfsscraper.Config](cfg, "netfs")
	nfs.Enabled = true // off by default, as remote filesystems are
	nfs.MountPoints.Exclude = nil
	nfs.StatfsTimeout = 200 * time.Millisecond
	all := &nfs.MetricsBuilderConfig.Metrics
	all.DiskHealthNfsClientMountProcedureCount.Enabled, all.DiskHealthNfsClientMountProcedureRoundTripTime.Enabled = true, true
	all.DiskHealthNfsClientMountRPCBacklog.Enabled, all.DiskHealthNfsClientMountOperationExecuteTime.Enabled = true, true
	return cfg
}

func runProperty(t *testing.T, data []byte) {
	e := &entropy{b: data}
	r := newPropRoot(t, e)
	cfg := propConfig(r.dir)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var notes sanitize.Notes
	var problems emit.Problems
	var scrapers []scraper.Metrics
	for _, src := range cfg.sources(nil, nil, nil, nil) {
		if !src.enabled {
			continue
		}
		f := reported(src.factory, component.ID{}, &notes, &problems, cfg.MaxPointsPerScrape, nil)
		set := scrapertest.NewNopSettings(f.Type())
		set.Logger = zap.NewNop()
		s, err := f.CreateMetrics(t.Context(), set, src.cfg)
		if err != nil {
			t.Fatalf("%s: %v", src.name, err)
		}
		if err := s.Start(t.Context(), componenttest.NewNopHost()); err != nil {
			t.Fatalf("%s: start: %v", src.name, err)
		}
		t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
		scrapers = append(scrapers, s)
	}
	st := newPropState()
	var prevTicks map[string]propTicks
	for k := range scrapesPerRoot {
		outs := make([]pmetric.Metrics, len(scrapers))
		errs := make([]error, len(scrapers))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i, s := range scrapers {
				outs[i], errs[i] = s.ScrapeMetrics(t.Context())
			}
		}()
		select {
		case <-done:
		case <-time.After(hostileScrapeBound):
			// A read that blocks (a FIFO) or never ends would hold the scrape, and the collector's shutdown.
			t.Fatalf("scrape %d did not return within %v (hostile input %q)", k, hostileScrapeBound, r.hostile)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatalf("scrape %d: the reporter returns no error, got %v", k, err)
			}
		}
		ticks := r.ticks()
		for _, md := range outs {
			st.check(t, md)
			if k > 0 {
				checkPlausible(t, md, prevTicks, ticks)
			}
			st.checkIOTime(t, md, prevTicks, ticks)
		}
		prevTicks = ticks
		r.advance()
	}
}

// propTicks is what the plausibility checks need of a plain device's line.
type propTicks struct {
	ioTicks uint32
	fields  int
	wide    [10]uint64
	bad     bool
}

func (r *propRoot) ticks() map[string]propTicks {
	m := map[string]propTicks{}
	for _, d := range r.devices {
		if !d.plain {
			continue
		}
		v := d.vals
		m[d.name] = propTicks{ioTicks: uint32(v[9]), fields: d.fields,
			bad:  d.garbage != "" || d.fields < 14,
			wide: [10]uint64{v[0], v[1], v[2], v[4], v[5], v[6], v[11], v[12], v[13], v[15]}}
	}
	return m
}

// checkPlausible: no rate beyond what a device can do in its interval (the gauge's own, start to time).
// For a plain device, whatever it had in flight, utilization stays within (Δt + 1 s) / Δt, and is 0 when
// io_ticks moved (forward or back) by more than that with nothing restarting.
func checkPlausible(t *testing.T, md pmetric.Metrics, prev, cur map[string]propTicks) {
	t.Helper()
	forEachPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		dt := dp.Timestamp().AsTime().Sub(dp.StartTimestamp().AsTime())
		most := (dt + time.Second).Seconds() / dt.Seconds()
		dev, _ := dp.Attributes().Get("system.device")
		switch m.Name() {
		case "disk_health.disk.operation.rate":
			if dp.DoubleValue() > iostat.MaxOpsPerSecond*most*(1+1e-9) {
				t.Fatalf("%q: %v operations per second over %v", dev.Str(), dp.DoubleValue(), dt)
			}
			return
		case "disk_health.disk.utilization":
		default:
			return
		}
		p, ok1 := prev[dev.Str()]
		c, ok2 := cur[dev.Str()]
		if !ok1 || !ok2 || p.bad || c.bad || p.fields != c.fields {
			return
		}
		if dp.DoubleValue() > most*(1+1e-9) {
			t.Fatalf("%s: utilization %v over %v", dev.Str(), dp.DoubleValue(), dt)
		}
		fields := min(c.fields, 20)
		for i := range c.wide {
			if i >= 6 && fields < 18 || i >= 9 && fields < 20 {
				break
			}
			if c.wide[i] < p.wide[i] {
				return // a restart: the interval counts from zero
			}
		}
		if step := uint64(c.ioTicks - p.ioTicks); step > uint64((dt+time.Second).Milliseconds()) && dp.DoubleValue() != 0 {
			t.Fatalf("%s: io_ticks moved by (modular) %d ms within %v and utilization is %v", dev.Str(), step, dt, dp.DoubleValue())
		}
	})
}

// propState follows the cumulative points across the scrapes of one root.
type propState struct {
	last   map[string]propPoint
	ioTime map[string]propSample // system.disk.io_time by series
}

type propSample struct {
	start, at pcommon.Timestamp
	value     float64
}

// checkIOTime: within one series, system.disk.io_time of a plain device, whatever it had in flight, gains
// at most the interval plus a second, whatever io_ticks did (a forward jump of 1e9
// ms in a second, a flap to 2^64 − 1, a wrap the clock cannot allow); a new series may start anywhere.
func (s *propState) checkIOTime(t *testing.T, md pmetric.Metrics, prev, cur map[string]propTicks) {
	t.Helper()
	forEachPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() != "system.disk.io_time" {
			return
		}
		key, v := seriesKey(res, m, dp), pointValue(dp)
		last, seen := s.ioTime[key]
		s.ioTime[key] = propSample{start: dp.StartTimestamp(), at: dp.Timestamp(), value: v}
		dev, _ := dp.Attributes().Get("system.device")
		p, ok1 := prev[dev.Str()]
		c, ok2 := cur[dev.Str()]
		if !seen || last.start != dp.StartTimestamp() || !ok1 || !ok2 || p.bad || c.bad || p.fields != c.fields {
			return
		}
		dt := dp.Timestamp().AsTime().Sub(last.at.AsTime())
		if gain := v - last.value; gain > (dt+time.Second).Seconds()*(1+1e-9) {
			t.Fatalf("%s: io_time gained %v s within %v in one series (%v → %v)", dev.Str(), gain, dt, last.value, v)
		}
	})
}

type propPoint struct {
	start pcommon.Timestamp
	value float64
}

func newPropState() *propState {
	return &propState{last: map[string]propPoint{}, ioTime: map[string]propSample{}}
}

// attrKinds are the sanitised kinds of the attributes read from the host.
var attrKinds = map[string]sanitize.Kind{
	"hw.model": sanitize.Model, "hw.serial_number": sanitize.Serial, "hw.firmware_version": sanitize.Firmware,
	"disk_health.disk.wwn": sanitize.WWN, "hw.id": sanitize.HWID, "disk.dm_name": sanitize.DMName,
	"disk_health.disk.parent": sanitize.Device, "hw.name": sanitize.Device, "system.device": sanitize.Device,
	"system.filesystem.mountpoint": sanitize.MountPoint, "system.filesystem.type": sanitize.FSType,
	"cgroup.path": sanitize.CgroupPath, "systemd.unit.name": sanitize.SystemdUnit,
}

// capOf is the cap of an attribute's value (its sanitised kind's); other attributes are the receiver's
// own values or built from capped parts, bounded by the largest cap.
func capOf(metric, key string) int {
	if key == "system.device" && (strings.HasPrefix(metric, "system.filesystem.") || strings.HasPrefix(metric, "disk_health.filesystem.") ||
		strings.HasPrefix(metric, "disk_health.nfs.") || strings.HasPrefix(metric, "fuse.")) {
		return sanitize.Cap(sanitize.MountSource)
	}
	if k, ok := attrKinds[key]; ok {
		return sanitize.Cap(k)
	}
	return 4096
}

func checkAttrs(t *testing.T, where, metric string, attrs pcommon.Map) {
	t.Helper()
	for k, v := range attrs.All() {
		if v.Type() != pcommon.ValueTypeStr {
			continue
		}
		s := v.Str()
		if !utf8.ValidString(s) {
			t.Fatalf("%s %s %s: invalid UTF-8 %q", where, metric, k, s)
		}
		for _, c := range s {
			if c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) {
				t.Fatalf("%s %s %s: control character %U in %q", where, metric, k, c, s)
			}
		}
		if n := capOf(metric, k); len(s) > n {
			t.Fatalf("%s %s %s: %d bytes, cap %d", where, metric, k, len(s), n)
		}
	}
}

func forEachPoint(md pmetric.Metrics, fn func(pcommon.Resource, pmetric.Metric, pmetric.NumberDataPoint)) {
	pdatawalk.ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		dps := pdatawalk.NumberPoints(m)
		for i := range dps.Len() {
			fn(res, m, dps.At(i))
		}
	})
}

func pointValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

func (s *propState) check(t *testing.T, md pmetric.Metrics) {
	t.Helper()
	// The OTLP encoding round-trips (a strict reader would reject invalid UTF-8, checked below).
	var pm pmetric.ProtoMarshaler
	b, err := pm.MarshalMetrics(md)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var pu pmetric.ProtoUnmarshaler
	back, err := pu.UnmarshalMetrics(b)
	if err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if b2, _ := pm.MarshalMetrics(back); string(b2) != string(b) {
		t.Fatal("OTLP protobuf does not round-trip")
	}

	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		checkAttrs(t, "resource", "", rms.At(i).Resource().Attributes())
	}
	forEachPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		name := m.Name()
		checkAttrs(t, "point", name, dp.Attributes())
		checkAttrs(t, "resource", name, res.Attributes())
		v := pointValue(dp)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: %v", name, v)
		}
		if dp.StartTimestamp() != 0 && dp.StartTimestamp() > dp.Timestamp() {
			t.Fatalf("%s: start %v after time %v", name, dp.StartTimestamp(), dp.Timestamp())
		}
		if (strings.HasSuffix(name, "utilization") || strings.HasSuffix(name, ".ratio")) && name != "disk_health.disk.utilization" {
			if v < 0 || v > 1 {
				t.Fatalf("%s: %v outside [0, 1]", name, v)
			}
		}
		if name == "disk_health.disk.utilization" && v < 0 {
			t.Fatalf("%s: %v", name, v)
		}
		if m.Type() != pmetric.MetricTypeSum || !m.Sum().IsMonotonic() {
			return
		}
		if v < 0 {
			t.Fatalf("%s: negative monotonic sum %v", name, v)
		}
		if m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
			return
		}
		key := seriesKey(res, m, dp)
		if p, ok := s.last[key]; ok && p.start == dp.StartTimestamp() && v < p.value {
			t.Fatalf("%s: cumulative %v fell to %v without a new start time (%s)", name, p.value, v, key)
		}
		s.last[key] = propPoint{start: dp.StartTimestamp(), value: v}
	})
}

func seriesKey(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) string {
	var sb strings.Builder
	sb.WriteString(m.Name())
	for _, attrs := range []pcommon.Map{res.Attributes(), dp.Attributes()} {
		keys := make([]string, 0, attrs.Len())
		for k, v := range attrs.All() {
			keys = append(keys, k+"="+v.AsString())
		}
		slices.Sort(keys)
		sb.WriteString("|" + strings.Join(keys, ","))
	}
	return sb.String()
}
