package device

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Protocol is how a disk is spoken to.
type Protocol string

// Protocols. A libata disk is ATA even though the kernel presents it as a
// SCSI device: sysfs says so (vendor "ATA"), and no probing that a missing
// privilege could fool decides it.
const (
	ProtocolATA  Protocol = "ata"
	ProtocolNVMe Protocol = "nvme"
	ProtocolSCSI Protocol = "scsi"
	// ProtocolNone: a whole disk with no health interface the receiver
	// knows (virtio-blk, MMC, ...). It is listed, and reported unsupported.
	ProtocolNone Protocol = "none"
)

// Disk is one physical disk found in sysfs.
type Disk struct {
	// Name is the kernel name: sda, or the controller nvme0 for NVMe.
	Name     string
	Protocol Protocol
	// Node is the device node the commands go to: <root>/dev/sda, or the
	// controller's character device <root>/dev/nvme0.
	Node string
	// Identity is what sysfs says about the disk's block device (an NVMe
	// controller's first namespace), the same identity the I/O metrics use.
	Identity blockdev.Identity
	// ID is the stable disk identity, blockdev.DiskID of Identity: the
	// same hw.id the I/O metrics carry for this disk.
	ID string
	// Namespaces are an NVMe controller's namespaces, by NSID.
	Namespaces []Namespace
	// HwmonDir is the sysfs directory of the disk's hwmon temperature
	// sensor (the nvme driver registers one per controller), "" if none.
	HwmonDir string
	// State is an NVMe controller's state in sysfs (live, connecting,
	// resetting, deleting, dead, ...); "" where the kernel shows none. Only a
	// live controller's hwmon sensor is believed: an NVMe-oF controller that
	// is reconnecting keeps its sensor, which then reads 0 °C.
	State string
	// Controllers are the controllers of the disk's NVM subsystem when the
	// kernel reaches it through more than one (native multipath, NVMe-oF on
	// several ports), in number order; nil otherwise. The subsystem is one
	// disk, read through one of them (Via): Name is the controller its
	// namespace heads name (the subsystem's first, as blockdev has it), so the
	// disk keeps its name and hw.id whichever controller answers.
	Controllers []string
	// Via is the NVMe controller the commands go to (Node, HwmonDir and State
	// are its): Name, or for a subsystem the first live one of Controllers,
	// Name's first (Name itself when none is live). "" for other protocols.
	Via string
}

// Key tells one disk from every other one the host had since boot: its name, hw.id and diskseq (a
// disk swapped under the same name and hw.id, one without serial or WWN, is another disk on 5.15+).
// What is kept per disk between reads is kept under it.
func (d *Disk) Key() string {
	return d.Name + "\x00" + d.ID + "\x00" + strconv.FormatUint(d.Identity.DiskSeq, 10)
}

// Namespace is one NVMe namespace block device.
type Namespace struct {
	Name string // nvme0n1
	NSID uint32
	// ID is the namespace's hw.id: blockdev.DiskID of its block device's identity (the multipath head's
	// where there is one), the hw.id the I/O source gives that block device.
	ID string
}

var (
	reNVMeHidden     = regexp.MustCompile(`^nvme\d+c\d+n\d+$`)
	reNVMeController = regexp.MustCompile(`^nvme\d+$`)
)

// Discover lists the physical disks under root (the host's "/" or the
// container's root_path): whole disks from sys/block, with partitions,
// device-mapper, md, loop, ram and hidden NVMe multipath paths left out,
// SCSI devices other than disks (CD-ROMs, enclosures) left out, and NVMe
// namespaces grouped under their controller (plus controllers from
// sys/class/nvme that have no namespace). A disk whose sysfs entry is
// unreadable is left out and named in the returned error; the others are
// still returned. The result is sorted by name.
func Discover(root string) ([]Disk, error) {
	sysRoot := filepath.Join(root, "sys")
	devRoot := filepath.Join(root, "dev")
	ents, err := os.ReadDir(filepath.Join(sysRoot, "block"))
	if err != nil {
		return nil, fmt.Errorf("listing block devices: %w", err)
	}
	var (
		disks []Disk
		errs  []error
		ctrls = map[string]*Disk{}
		nsIDs = map[string][]*blockdev.Identity{} // each controller's namespaces
	)
	for _, e := range ents {
		sysName := e.Name()
		raw := strings.ReplaceAll(sysName, "!", "/")  // what sysfs and /dev are read with
		name := sanitize.String(sanitize.Device, raw) // what the disk is called in telemetry (hw.name)
		if reNVMeHidden.MatchString(name) || readTrim(sysRoot, "block", sysName, "hidden") == "1" {
			continue
		}
		maj, minor, err := devNumbers(sysRoot, sysName)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk %s: %w", name, err))
			continue
		}
		id, ierr := blockdev.ReadIdentity(sysRoot, raw, maj, minor)
		if id.Class != blockdev.ClassDisk {
			continue
		}
		if ierr != nil {
			// Identity is enrichment; the disk is still read.
			errs = append(errs, ierr)
		}
		if id.Controller != "" {
			ctrl := id.Controller
			d := ctrls[ctrl]
			if d == nil {
				d = &Disk{Name: ctrl, Protocol: ProtocolNVMe, Node: filepath.Join(devRoot, ctrl)}
				ctrls[ctrl] = d
			}
			d.Namespaces = append(d.Namespaces, Namespace{Name: name, NSID: id.NSID, ID: blockdev.DiskID(&id)})
			nsIDs[ctrl] = append(nsIDs[ctrl], &id)
			continue
		}
		id.Name = name
		d := Disk{Name: name, Node: filepath.Join(devRoot, raw), Identity: id, ID: blockdev.DiskID(&id)}
		switch {
		case exists(sysRoot, "block", sysName, "device", "scsi_level"):
			if t := readTrim(sysRoot, "block", sysName, "device", "type"); t != "" && t != "0" {
				continue // not a direct-access block device
			}
			d.Protocol = ProtocolSCSI
			if readTrim(sysRoot, "block", sysName, "device", "vendor") == "ATA" {
				d.Protocol = ProtocolATA
			}
		default:
			d.Protocol = ProtocolNone
		}
		disks = append(disks, d)
	}

	// Controllers without a namespace block device still have SMART data.
	if cents, err := os.ReadDir(filepath.Join(sysRoot, "class", "nvme")); err == nil {
		for _, e := range cents {
			if reNVMeController.MatchString(e.Name()) && ctrls[e.Name()] == nil {
				ctrls[e.Name()] = &Disk{Name: e.Name(), Protocol: ProtocolNVMe, Node: filepath.Join(devRoot, e.Name())}
			}
		}
	}
	mergeSubsystems(sysRoot, ctrls, nsIDs)
	for name, d := range ctrls {
		slices.SortFunc(d.Namespaces, func(a, b Namespace) int { return cmp.Or(cmp.Compare(a.NSID, b.NSID), cmp.Compare(a.Name, b.Name)) })
		if ns := nsIDs[name]; len(ns) > 0 {
			// The controller is its first namespace: the same rule, and so the same hw.id, as the
			// hw.parent the I/O source puts on every namespace.
			d.Identity = *slices.MinFunc(ns, blockdev.CompareNamespaces)
			d.ID = blockdev.ControllerID(ns)
		} else {
			d.Identity = controllerIdentity(sysRoot, name)
			d.ID = blockdev.DiskID(&d.Identity)
		}
		d.Via, d.State = name, readTrim(sysRoot, "class", "nvme", name, "state")
		if !d.Live() {
			// A subsystem is read through its next live controller while this one is not (an NVMe-oF
			// path reconnecting): its commands would fail or wait there.
			for _, c := range d.Controllers {
				if st := readTrim(sysRoot, "class", "nvme", c, "state"); c != name && (st == "" || st == "live") {
					d.Via, d.State = c, st
					break
				}
			}
		}
		d.Node = filepath.Join(devRoot, d.Via)
		d.HwmonDir = hwmonDir(filepath.Join(sysRoot, "class", "nvme", d.Via))
		disks = append(disks, *d)
	}
	slices.SortFunc(disks, func(a, b Disk) int { return strings.Compare(a.Name, b.Name) })
	return disks, errors.Join(errs...)
}

// mergeSubsystems makes each NVM subsystem the kernel reaches through several controllers one disk: the
// controller its namespace heads name (the first of the subsystem that has namespaces, else its first)
// takes the others' namespaces it lacks (a subsystem without native multipath gives each controller a block
// device of the same namespace) and lists them all in Controllers; the others are no disk of their own.
//
// One read serves the subsystem. The receiver asks for the SMART / Health Information log (02h) with NSID
// FFFFFFFFh (smart.go's ReadSMART): the controller's global page, over every namespace it has attached,
// not one namespace's (LPA bit 0). What that page says of the medium (critical warning, spare, percentage
// used, media errors, temperature) is the subsystem's, the same through every controller, so a page per
// controller would report one disk twice under two hw.ids, as nvme2 did beside nvme1 before. Its command
// counters, and the Error Information log (01h), are counted by the controller answering: they start over
// when the read moves to another controller, which the reader treats as another controller (its own
// identity cache, error-log size and high-water mark).
func mergeSubsystems(sysRoot string, ctrls map[string]*Disk, nsIDs map[string][]*blockdev.Identity) {
	subs, err := os.ReadDir(filepath.Join(sysRoot, "class", "nvme-subsystem"))
	if err != nil {
		return // no subsystem class: a kernel before 4.15, one controller per subsystem
	}
	fsys := bounded.NewDirFS(sysRoot, bounded.Attr)
	for _, sub := range subs {
		members := blockdev.SubsystemControllers(fsys, sub.Name())
		var disk string
		for _, c := range members {
			if d := ctrls[c]; d != nil && (disk == "" || len(ctrls[disk].Namespaces) == 0 && len(d.Namespaces) > 0) {
				disk = c
			}
		}
		if disk == "" || len(members) < 2 {
			continue
		}
		d := ctrls[disk]
		d.Controllers = members
		for _, c := range members {
			other := ctrls[c]
			if other == nil || c == disk {
				continue
			}
			for i, ns := range other.Namespaces {
				if !slices.ContainsFunc(d.Namespaces, func(n Namespace) bool { return n.NSID == ns.NSID }) {
					d.Namespaces = append(d.Namespaces, ns)
					nsIDs[disk] = append(nsIDs[disk], nsIDs[c][i])
				}
			}
			delete(ctrls, c)
			delete(nsIDs, c)
		}
	}
}

// controllerIdentity is the identity of an NVMe controller without a namespace block device, read from
// sys/class/nvme/<name>. Its strings take the same sanitising as blockdev's (valid UTF-8, control
// characters escaped, capped), as they become hw.model, hw.serial_number, hw.firmware_version and hw.id.
func controllerIdentity(sysRoot, name string) blockdev.Identity {
	dir := []string{sysRoot, "class", "nvme", name}
	return blockdev.Identity{
		Name:       name,
		Class:      blockdev.ClassDisk,
		Model:      sanitize.String(sanitize.Model, readTrim(append(dir, "model")...)),
		Serial:     sanitize.String(sanitize.Serial, readTrim(append(dir, "serial")...)),
		Firmware:   sanitize.String(sanitize.Firmware, readTrim(append(dir, "firmware_rev")...)),
		Rotational: 0,
	}
}

// hwmonDir finds a hwmon directory with a temp1_input below dir, either
// directly (nvme: <ctrl>/hwmonN) or in a hwmon class folder
// (<dev>/hwmon/hwmonN).
func hwmonDir(dir string) string {
	for _, pattern := range []string{"hwmon[0-9]*", "hwmon/hwmon[0-9]*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, pattern, "temp1_input"))
		if len(matches) > 0 {
			slices.Sort(matches)
			return filepath.Dir(matches[0])
		}
	}
	return ""
}

func devNumbers(sysRoot, sysName string) (uint32, uint32, error) {
	p := filepath.Join(sysRoot, "block", sysName, "dev")
	b, err := bounded.ReadFile(p, bounded.Attr, nil)
	if err != nil {
		return 0, 0, err
	}
	majS, minS, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	maj, err1 := strconv.ParseUint(majS, 10, 32)
	minor, err2 := strconv.ParseUint(minS, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s: not major:minor: %q", p, b)
	}
	return uint32(maj), uint32(minor), nil
}

func readTrim(elems ...string) string {
	b, err := bounded.ReadFile(filepath.Join(elems...), bounded.Attr, nil)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func exists(elems ...string) bool {
	_, err := os.Stat(filepath.Join(elems...))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
