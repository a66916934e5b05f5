package device

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
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
}

// Namespace is one NVMe namespace block device.
type Namespace struct {
	Name string // nvme0n1
	NSID uint32
}

var (
	reNVMeNamespace  = regexp.MustCompile(`^nvme(\d+)n(\d+)$`)
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
		if m := reNVMeNamespace.FindStringSubmatch(name); m != nil {
			ctrl := controllerOf(sysRoot, sysName, "nvme"+m[1])
			d := ctrls[ctrl]
			if d == nil {
				d = &Disk{Name: ctrl, Protocol: ProtocolNVMe, Node: filepath.Join(devRoot, ctrl)}
				ctrls[ctrl] = d
			}
			d.Namespaces = append(d.Namespaces, Namespace{Name: name, NSID: nsid(sysRoot, sysName, m[2])})
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
	for name, d := range ctrls {
		slices.SortFunc(d.Namespaces, func(a, b Namespace) int { return int(a.NSID) - int(b.NSID) })
		if len(d.Namespaces) > 0 {
			ns := d.Namespaces[0].Name
			maj, minor, _ := devNumbers(sysRoot, strings.ReplaceAll(ns, "/", "!"))
			d.Identity, _ = blockdev.ReadIdentity(sysRoot, ns, maj, minor) // its errors were reported above
		} else {
			d.Identity = controllerIdentity(sysRoot, name)
		}
		d.ID = blockdev.DiskID(&d.Identity)
		d.HwmonDir = hwmonDir(filepath.Join(sysRoot, "class", "nvme", name))
		disks = append(disks, *d)
	}
	slices.SortFunc(disks, func(a, b Disk) int { return strings.Compare(a.Name, b.Name) })
	return disks, errors.Join(errs...)
}

// controllerOf finds the NVMe controller of a namespace block device: its
// "device" link points at the controller, or, for a multipath head, at the
// subsystem, whose first controller is taken. The kernel name is the last
// resort.
func controllerOf(sysRoot, sysName, fromName string) string {
	target, err := os.Readlink(filepath.Join(sysRoot, "block", sysName, "device"))
	if err != nil {
		return fromName
	}
	base := path.Base(target)
	if reNVMeController.MatchString(base) {
		return base
	}
	if strings.HasPrefix(base, "nvme-subsys") {
		ents, err := os.ReadDir(filepath.Join(sysRoot, "class", "nvme-subsystem", base))
		if err == nil {
			var names []string
			for _, e := range ents {
				if reNVMeController.MatchString(e.Name()) {
					names = append(names, e.Name())
				}
			}
			if len(names) > 0 {
				slices.Sort(names)
				return names[0]
			}
		}
	}
	return fromName
}

// nsid reads the namespace ID sysfs gives, else the number in the name
// (the kernel's instance number, equal to the NSID on single-path systems).
func nsid(sysRoot, sysName, fromName string) uint32 {
	for _, s := range []string{readTrim(sysRoot, "block", sysName, "nsid"), fromName} {
		if v, err := strconv.ParseUint(s, 10, 32); err == nil && v > 0 {
			return uint32(v)
		}
	}
	return 1
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
	b, err := os.ReadFile(p)
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
	b, err := os.ReadFile(filepath.Join(elems...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func exists(elems ...string) bool {
	_, err := os.Stat(filepath.Join(elems...))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
