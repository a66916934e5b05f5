package blockdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Class is the kind of block device, from sysfs.
type Class string

// The device classes. Whole disks, dm and md devices are what iostat shows by
// default; partitions, loop and ram devices would double count or add noise.
const (
	ClassDisk      Class = "disk"      // a whole disk with a hardware device behind it
	ClassPartition Class = "partition" // a partition of any device
	ClassDM        Class = "dm"        // device-mapper: LVM, dm-crypt, multipath
	ClassMD        Class = "md"        // software RAID
	ClassLoop      Class = "loop"      // loop device
	ClassRAM       Class = "ram"       // ram disk, zram
	ClassOther     Class = "other"     // anything else: nbd, rbd, ...
)

// Identity is what sysfs says about one block device.
type Identity struct {
	Name         string // kernel name as in /proc/diskstats
	Major, Minor uint32
	Class        Class
	Parent       string // whole-disk kernel name of a partition, "" otherwise
	DMName       string // device-mapper name (LVM "vg-lv"), "" if not dm
	// Model, Serial, WWN and Firmware are trimmed; "" when the device has
	// none. Partitions carry their disk's values (and Rotational).
	Model, Serial, WWN, Firmware string
	Rotational                   int8   // 1 rotational, 0 not, -1 unknown
	Size                         uint64 // bytes
	// NoDiscard: queue/discard_max_bytes is 0, so the kernel fails every discard before it counts one.
	// WriteThrough: queue/write_cache is "write through", so the kernel sends the device no flush.
	// Both are false where the attribute is absent (a device's discard and flush counters are then
	// reported as before). Partitions carry their disk's. Read with the rest of the identity: a value
	// changed at run time (hdparm -W, a write to the attribute) is seen when the device is read again.
	NoDiscard, WriteThrough bool
	// DiskSeq is the kernel's diskseq (Linux 5.15+): a number no other disk gets until reboot, new
	// whenever a disk is created under any name or major:minor. Partitions carry their disk's. 0 when
	// the kernel has none.
	DiskSeq uint64
	// Controller and NSID name an NVMe namespace's controller (nvme0) and its namespace ID; "" and 0
	// for every other device. HWParent is the controller's hw.id (see ControllerID), filled by Cache
	// only, for every namespace of the controller.
	Controller string
	NSID       uint32
	HWParent   string
}

// AttrError reports a sysfs attribute that exists but could not be used:
// unreadable, or content that is not what the kernel writes there.
type AttrError struct {
	Device string // kernel name
	Path   string // full path of the attribute
	Err    error
}

func (e *AttrError) Error() string {
	return fmt.Sprintf("device %s: %s: %v", e.Device, e.Path, e.Err)
}

func (e *AttrError) Unwrap() error { return e.Err }

// ReadIdentity reads what sysfs has about one device under sysRoot (for
// example "/sys", or "<root_path>/sys" in a container). Attributes that do not
// exist for this kind of device are not errors. An attribute that exists but
// cannot be read or holds garbage is reported as an *AttrError in the
// returned error, and every other field is still filled.
func ReadIdentity(sysRoot, name string, major, minor uint32) (Identity, error) {
	s := sysfs{root: sysRoot, fsys: bounded.NewDirFS(sysRoot, bounded.Attr)}
	id, errs := s.own(name, major, minor)
	if id.Class == ClassPartition && id.Parent != "" {
		hw, herrs := s.hardwareOf(id.Parent)
		id.setHardware(hw)
		errs = append(errs, herrs...)
	}
	return id, errors.Join(errs...)
}

// hardware is the part of an Identity a partition takes from its disk.
type hardware struct {
	Model, Serial, WWN, Firmware string
	Rotational                   int8
	DiskSeq                      uint64
	NoDiscard, WriteThrough      bool
}

func (id *Identity) hardware() hardware {
	return hardware{Model: id.Model, Serial: id.Serial, WWN: id.WWN, Firmware: id.Firmware, Rotational: id.Rotational, DiskSeq: id.DiskSeq,
		NoDiscard: id.NoDiscard, WriteThrough: id.WriteThrough}
}

func (id *Identity) setHardware(h hardware) {
	id.Model, id.Serial, id.WWN, id.Firmware, id.Rotational = h.Model, h.Serial, h.WWN, h.Firmware, h.Rotational
	id.DiskSeq = h.DiskSeq
	id.NoDiscard, id.WriteThrough = h.NoDiscard, h.WriteThrough
}

// sysfs reads block device attributes through fsys, an fs.FS rooted at root
// (tests count the calls).
type sysfs struct {
	root string
	fsys fs.FS
}

// entries records which names a device's sysfs directory holds. One
// directory listing answers all "does it exist" questions, so no open is
// wasted on an attribute the device does not have.
type entries uint16

const (
	hasPartition entries = 1 << iota
	hasDM
	hasMD
	hasLoop
	hasDevice
	hasSerial
	hasWWID
	hasQueue
	hasSize
	hasDiskseq
	hasNSID
)

// sysName is the sysfs spelling of a kernel name: the kernel turns '/' in
// device names (cciss/c0d0) into '!' for sysfs.
func sysName(name string) string { return strings.ReplaceAll(name, "/", "!") }

func (s sysfs) list(name string) (entries, error) {
	dir := "class/block/" + sysName(name)
	if !fs.ValidPath(dir) {
		return 0, &AttrError{Device: name, Path: filepath.Join(s.root, dir), Err: errors.New("not a valid device name")}
	}
	des, err := fs.ReadDir(s.fsys, dir)
	if err != nil {
		return 0, &AttrError{Device: name, Path: filepath.Join(s.root, dir), Err: unwrapPathError(err)}
	}
	var e entries
	for _, de := range des {
		switch de.Name() {
		case "partition":
			e |= hasPartition
		case "dm":
			e |= flagIf(de.IsDir(), hasDM)
		case "md":
			e |= flagIf(de.IsDir(), hasMD)
		case "loop":
			e |= flagIf(de.IsDir(), hasLoop)
		case "device":
			e |= hasDevice
		case "serial":
			e |= hasSerial
		case "wwid":
			e |= hasWWID
		case "queue":
			e |= flagIf(de.IsDir(), hasQueue)
		case "size":
			e |= hasSize
		case "diskseq":
			e |= hasDiskseq
		case "nsid":
			e |= hasNSID
		}
	}
	return e, nil
}

func flagIf(cond bool, f entries) entries {
	if cond {
		return f
	}
	return 0
}

// own reads a device's own attributes. A partition gets its Parent but not
// yet its disk's hardware fields.
func (s sysfs) own(name string, major, minor uint32) (Identity, []error) {
	id := Identity{Name: name, Major: major, Minor: minor, Class: ClassOther, Rotational: -1}
	e, err := s.list(name)
	if err != nil {
		return id, []error{err}
	}
	var errs []error
	dir := "class/block/" + sysName(name) + "/"
	id.Class = classify(name, e)

	if e&hasSize != 0 {
		// system.disk.limit is an int64: a size past it (8 EiB) is garbage, not a size.
		if v, ok := s.number(name, dir+"size", math.MaxInt64/512, &errs); ok {
			id.Size = v * 512
		}
	}
	switch id.Class {
	case ClassPartition:
		// class/block/<part> links to .../block/<disk>/<part>: the
		// directory holding the partition is its disk.
		target, err := fs.ReadLink(s.fsys, "class/block/"+sysName(name))
		if err != nil {
			errs = append(errs, &AttrError{Device: name, Path: filepath.Join(s.root, "class/block", sysName(name)), Err: unwrapPathError(err)})
		} else {
			id.Parent = sanitize.String(sanitize.Device, strings.ReplaceAll(path.Base(path.Dir(target)), "!", "/"))
		}
		return id, errs
	case ClassDM:
		id.DMName, _ = s.text(name, dir+"dm/name", sanitize.DMName, &errs)
	}
	id.setHardware(s.hardware(name, e, &errs))
	if id.Class == ClassDisk {
		id.Controller, id.NSID = s.nvmeNamespace(name, e, &errs)
	}
	return id, errs
}

// classify applies the class rules in order; the first match wins.
func classify(name string, e entries) Class {
	switch {
	case e&hasPartition != 0:
		return ClassPartition
	case e&hasDM != 0:
		return ClassDM
	case e&hasMD != 0:
		return ClassMD
	case e&hasLoop != 0 || numbered(name, "loop"): // loop/ exists only while bound
		return ClassLoop
	case numbered(name, "ram") || numbered(name, "zram"):
		return ClassRAM
	case e&hasDevice != 0: // only whole disks with a parent device get this link
		return ClassDisk
	}
	return ClassOther
}

// numbered reports whether name is prefix followed by one or more digits.
func numbered(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// hardwareOf reads the hardware fields of a disk known only by name (the
// parent of a partition read on its own).
func (s sysfs) hardwareOf(disk string) (hardware, []error) {
	e, err := s.list(disk)
	if err != nil {
		return hardware{Rotational: -1}, []error{err}
	}
	var errs []error
	return s.hardware(disk, e, &errs), errs
}

// hardware reads model, serial, firmware, WWN and rotational, trying only
// the files that the device's kind can have:
//   - NVMe namespace: "device" is the controller (model, serial,
//     firmware_rev); the namespace has wwid itself.
//   - SCSI/ATA: "device" is the SCSI device (model, rev, wwid); the serial
//     is only in VPD page 0x80 (vpd_pg80), which libata fills for ATA disks.
//   - virtio-blk: the disk has serial itself; the virtio device has none.
func (s sysfs) hardware(name string, e entries, errs *[]error) hardware {
	h := hardware{Rotational: -1}
	dir := "class/block/" + sysName(name) + "/"
	if e&hasDiskseq != 0 {
		h.DiskSeq, _ = s.number(name, dir+"diskseq", math.MaxUint64, errs)
	}
	if e&hasQueue != 0 {
		if v, ok := s.number(name, dir+"queue/rotational", 1, errs); ok {
			h.Rotational = int8(v)
		}
		if v, ok := s.number(name, dir+"queue/discard_max_bytes", math.MaxUint64, errs); ok {
			h.NoDiscard = v == 0
		}
		h.WriteThrough = s.writeThrough(name, dir+"queue/write_cache", errs)
	}
	if e&hasWWID != 0 {
		h.WWN, _ = s.text(name, dir+"wwid", sanitize.WWN, errs)
	}
	if e&hasSerial != 0 {
		h.Serial, _ = s.text(name, dir+"serial", sanitize.Serial, errs)
	}
	if e&hasDevice == 0 {
		return h
	}
	dev := dir + "device/"
	h.Model, _ = s.text(name, dev+"model", sanitize.Model, errs)
	if e&hasSerial == 0 {
		var found bool
		if h.Serial, found = s.text(name, dev+"serial", sanitize.Serial, errs); !found {
			h.Serial = s.vpdSerial(name, dev+"vpd_pg80", errs)
		}
	}
	var found bool
	if h.Firmware, found = s.text(name, dev+"firmware_rev", sanitize.Firmware, errs); !found {
		h.Firmware, _ = s.text(name, dev+"rev", sanitize.Firmware, errs)
	}
	if e&hasWWID == 0 {
		h.WWN, _ = s.text(name, dev+"wwid", sanitize.WWN, errs)
	}
	return h
}

// read returns an attribute's content; found is false (and no error is
// recorded) when it does not exist.
func (s sysfs) read(name, rel string, errs *[]error) (b []byte, found bool) {
	b, err := fs.ReadFile(s.fsys, rel)
	switch {
	case err == nil:
		return b, true
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EINVAL):
		// EINVAL is how some attributes say "no value": wwid of a SCSI disk without a usable VPD 83h
		// designator (QEMU scsi-hd on virtio-scsi) exists but cannot be read.
		return nil, false
	}
	*errs = append(*errs, &AttrError{Device: name, Path: filepath.Join(s.root, rel), Err: unwrapPathError(err)})
	return nil, true
}

// text reads a string attribute of kind k. Content that is not printable UTF-8 is
// rejected: it would end up in metric attributes, where invalid UTF-8 breaks
// OTLP encoding. Printable content is capped to the kind's length
// (sanitize.String), so a 100 KB model costs 128 bytes per resource.
func (s sysfs) text(name, rel string, k sanitize.Kind, errs *[]error) (v string, found bool) {
	b, found := s.read(name, rel, errs)
	if b == nil {
		return "", found
	}
	t := strings.Trim(string(b), " \t\n\x00")
	if !printable(t) {
		*errs = append(*errs, &AttrError{Device: name, Path: filepath.Join(s.root, rel), Err: fmt.Errorf("not printable text: %q", clip(t))})
		return "", true
	}
	return sanitize.String(k, t), true
}

// number reads a decimal attribute no larger than limit.
func (s sysfs) number(name, rel string, limit uint64, errs *[]error) (uint64, bool) {
	b, _ := s.read(name, rel, errs)
	if b == nil {
		return 0, false
	}
	t := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v > limit {
		*errs = append(*errs, &AttrError{Device: name, Path: filepath.Join(s.root, rel), Err: fmt.Errorf("not a number up to %d: %q", limit, clip(t))})
		return 0, false
	}
	return v, true
}

// writeThrough reads queue/write_cache: "write back" or "write through", as the kernel writes it.
func (s sysfs) writeThrough(name, rel string, errs *[]error) bool {
	b, _ := s.read(name, rel, errs)
	if b == nil {
		return false
	}
	switch t := strings.TrimSpace(string(b)); t {
	case "write through":
		return true
	case "write back":
		return false
	default:
		*errs = append(*errs, &AttrError{Device: name, Path: filepath.Join(s.root, rel), Err: fmt.Errorf(`neither "write back" nor "write through": %q`, clip(t))})
		return false
	}
}

// vpdSerial reads the unit serial number from a SCSI VPD page 0x80.
func (s sysfs) vpdSerial(name, rel string, errs *[]error) string {
	b, _ := s.read(name, rel, errs)
	if b == nil {
		return ""
	}
	serial, err := parseVPDSerial(b)
	if err != nil {
		*errs = append(*errs, &AttrError{Device: name, Path: filepath.Join(s.root, rel), Err: err})
	}
	return serial
}

// parseVPDSerial decodes VPD page 0x80: a 4-byte header (byte 1 is the page
// code, bytes 2-3 the big-endian length) followed by the serial in ASCII,
// often padded with spaces.
func parseVPDSerial(b []byte) (string, error) {
	if len(b) < 4 || b[1] != 0x80 {
		return "", errors.New("not a VPD page 0x80")
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if 4+n > len(b) {
		return "", fmt.Errorf("VPD page length %d exceeds the %d bytes read", n, len(b)-4)
	}
	t := strings.Trim(string(b[4:4+n]), " \x00")
	if !printable(t) {
		return "", fmt.Errorf("not printable text: %q", clip(t))
	}
	return sanitize.String(sanitize.Serial, t), nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// maxValueInError bounds how much of a bad attribute an error quotes.
const maxValueInError = 40

func clip(s string) string {
	if len(s) > maxValueInError {
		return s[:maxValueInError]
	}
	return s
}

// unwrapPathError drops fs.PathError's own path, which os.DirFS makes
// relative; AttrError carries the full one.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
