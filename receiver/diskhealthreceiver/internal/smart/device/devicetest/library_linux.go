//go:build linux

package devicetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	smartgo "github.com/anatol/smart.go"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// Library is the machine's device.Library: what smart.go would return from
// the same disks, in smart.go's own types, decoded from the disks' pages with
// smart.go's public structs. A disk's failure modes (Deny, Hang, Panic,
// DenyOpen, missing pages) apply to these reads as to the Transport's, and
// they are recorded in Sent under the same keys.
func (m *Machine) Library() device.Library { return library{m} }

type library struct{ m *Machine }

// OpenATA does what smart.OpenSata does to the disk: IDENTIFY DEVICE (its
// INQUIRY is not recorded: every disk answers it).
func (l library) OpenATA(node string) (device.ATADevice, error) {
	d, err := l.m.open(node)
	if err != nil {
		return nil, err
	}
	a := &ataDevice{t: &transport{d: d}}
	if _, err := a.Identify(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.libOpen++
	d.mu.Unlock()
	return a, nil
}

// OpenNVMe only opens, as smart.OpenNVMe does.
func (l library) OpenNVMe(node string) (device.NVMeDevice, error) {
	d, err := l.m.open(node)
	if err != nil {
		return nil, err
	}
	return &nvmeDevice{t: &transport{d: d}}, nil
}

// errNoAnswer is a page the disk does not have: the command failed as the
// device would fail it (smart.go reports SG_IO's status as an error of its own).
var errNoAnswer = errors.New("devicetest: the device refused the command")

// read records key, applies the disk's failure modes and returns its page.
func (t *transport) read(key string, deny error) ([]byte, error) {
	if t.begin(key) {
		return nil, deny
	}
	b, ok := t.page(key)
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, errNoAnswer)
	}
	return b, nil
}

// readStruct decodes the page of key into smart.go's struct T, as smart.go
// decodes its ioctl's buffer; deny is the errno of a refused command.
func readStruct[T any](t *transport, key string, deny error) (*T, error) {
	b, err := t.read(key, deny)
	if err != nil {
		return nil, err
	}
	var v T
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

type ataDevice struct{ t *transport }

func (a *ataDevice) Close() error {
	a.t.d.mu.Lock()
	defer a.t.d.mu.Unlock()
	a.t.d.libOpen--
	return nil
}

func (a *ataDevice) Identify() (*smartgo.AtaIdentifyDevice, error) {
	return readStruct[smartgo.AtaIdentifyDevice](a.t, ATAIdentify, syscall.EPERM)
}

// ReadSMARTData decodes the page's 30 slots with smart.go's AtaSmartPageRaw
// and, as smart.go does, stops at the first empty slot. Name, Type and
// ValueRaw are what smart.go returned for the disk (Disk.SmartGoAttrs,
// recorded); an ID the recording lacks is one smart.go's table does not name.
func (a *ataDevice) ReadSMARTData() (*smartgo.AtaSmartPage, error) {
	b, err := a.t.read(ATASMARTData, syscall.EPERM)
	if err != nil {
		return nil, err
	}
	var raw smartgo.AtaSmartPageRaw
	if err := binary.Read(bytes.NewReader(b[:min(len(b), 362)]), binary.LittleEndian, &raw); err != nil {
		return nil, err
	}
	a.t.d.mu.Lock()
	rec := a.t.d.SmartGoAttrs
	a.t.d.mu.Unlock()
	p := &smartgo.AtaSmartPage{Version: raw.Version, Attrs: map[uint8]smartgo.AtaSmartAttr{}}
	for _, r := range raw.Attrs {
		if r.Id == 0 {
			break
		}
		named := rec[r.Id]
		p.Attrs[r.Id] = smartgo.AtaSmartAttr{Id: r.Id, Flags: r.Flags, Current: r.Current, Worst: r.Worst, VendorBytes: r.VendorBytes,
			Name: named.Name, Type: named.Type, ValueRaw: named.ValueRaw}
	}
	return p, nil
}

// ReadSMARTThresholds checks the page's checksum and decodes it with
// smart.go's AtaSmartThresholdsPageRaw, as smart.go does.
func (a *ataDevice) ReadSMARTThresholds() (*smartgo.AtaSmartThresholdsPage, error) {
	b, err := a.t.read(ATAThresholds, syscall.EPERM)
	if err != nil {
		return nil, err
	}
	var sum byte
	for _, c := range b {
		sum += c
	}
	if sum != 0 {
		return nil, errors.New("invalid checksum for SMART THRESHOLD data")
	}
	var raw smartgo.AtaSmartThresholdsPageRaw
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, &raw); err != nil {
		return nil, err
	}
	p := &smartgo.AtaSmartThresholdsPage{Revnumber: raw.Revnumber, Thresholds: map[uint8]uint8{}}
	for _, e := range raw.ThresholdEntries {
		if e.Id == 0 {
			break
		}
		p.Thresholds[e.Id] = e.Threshold
	}
	return p, nil
}

type nvmeDevice struct{ t *transport }

func (n *nvmeDevice) Close() error { return nil }

func (n *nvmeDevice) ReadSMART() (*smartgo.NvmeSMARTLog, error) {
	return readStruct[smartgo.NvmeSMARTLog](n.t, NVMeLog(nvme.LogSMART), syscall.EACCES)
}
